// Sequence and optional ops on host values (core/src/sequence_ops.cpp) and their type inference
// (sequence_inference.cpp): every op's semantics, negative and out-of-range positions, element
// type mismatches, and the one-line errors that name the node.
#include "sequence_ops.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "status.hpp"

namespace loom::core {
namespace {

using Dims = std::vector<int64_t>;

HostValue float_tensor(const Dims& dims, float first = 0) {
  HostValue v = allocate_host_value(LOOM_DTYPE_FLOAT32, dims);
  auto* p = static_cast<float*>(v.t.data);
  size_t n = v.t.byte_size / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = first + static_cast<float>(i);
  return v;
}

HostValue int64_tensor(const std::vector<int64_t>& values, bool scalar) {
  HostValue v = allocate_host_value(LOOM_DTYPE_INT64,
                                    scalar ? Dims{} : Dims{static_cast<int64_t>(values.size())});
  std::memcpy(v.t.data, values.data(), values.size() * sizeof(int64_t));
  return v;
}

HostValue position(int64_t p) {
  return int64_tensor({p}, true);
}

std::vector<float> floats(const HostValue& v) {
  EXPECT_TRUE(v.is_tensor());
  EXPECT_EQ(v.t.dtype, LOOM_DTYPE_FLOAT32);
  const auto* p = static_cast<const float*>(v.t.data);
  return {p, p + v.t.byte_size / sizeof(float)};
}

Dims dims(const HostValue& v) {
  return {v.t.dims, v.t.dims + v.t.rank};
}

int64_t int64_scalar(const HostValue& v) {
  EXPECT_EQ(v.t.dtype, LOOM_DTYPE_INT64);
  int64_t x;
  std::memcpy(&x, v.t.data, sizeof x);
  return x;
}

Node make_node(const std::string& op, size_t outputs = 1) {
  Node n;
  n.name = "n";
  n.op_type = op;
  n.opset = 18;
  n.outputs.assign(outputs, 0);
  return n;
}

void set_int(Node& n, const std::string& name, int64_t value) {
  Attribute a;
  a.name = name;
  a.type = LOOM_ATTR_INT;
  a.i = value;
  n.attributes.push_back(a);
}

HostValue run1(const Node& n, const std::vector<HostValue>& inputs) {
  std::vector<HostValue> out = run_sequence_op(n, inputs, nullptr);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

// Runs `n` expecting an error; returns its message.
std::string error_of(const Node& n, const std::vector<HostValue>& inputs) {
  try {
    run_sequence_op(n, inputs, nullptr);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

HostValue three_element_sequence() {
  return run1(make_node("SequenceConstruct"),
              {float_tensor({2}, 0), float_tensor({2}, 10), float_tensor({2}, 20)});
}

TEST(SequenceOps, EmptyHasTheDeclaredElementType) {
  Node n = make_node("SequenceEmpty");
  set_int(n, "dtype", LOOM_DTYPE_INT64);
  HostValue s = run1(n, {});
  EXPECT_EQ(s.kind, ValueKind::kSequence);
  EXPECT_EQ(s.elem_dtype, LOOM_DTYPE_INT64);
  EXPECT_TRUE(s.elements.empty());
  EXPECT_EQ(run1(make_node("SequenceEmpty"), {}).elem_dtype, LOOM_DTYPE_FLOAT32);
  Node bad = make_node("SequenceEmpty");
  set_int(bad, "dtype", 999);
  EXPECT_NE(error_of(bad, {}).find("attribute 'dtype' 999 is not a tensor element type"),
            std::string::npos);
}

TEST(SequenceOps, ConstructKeepsOrderAndRejectsMixedTypes) {
  HostValue s = three_element_sequence();
  ASSERT_EQ(s.elements.size(), 3u);
  EXPECT_EQ(floats(s.elements[2]), (std::vector<float>{20, 21}));
  std::string err =
      error_of(make_node("SequenceConstruct"), {float_tensor({2}), int64_tensor({1}, false)});
  EXPECT_NE(err.find("SequenceConstruct node 'n'"), std::string::npos) << err;
  EXPECT_NE(err.find("int64"), std::string::npos) << err;
}

TEST(SequenceOps, ElementsOwnTheirBytes) {
  // A tensor without owner (memory the session frees after its last reader) is copied.
  HostValue x = float_tensor({2}, 5);
  HostValue borrowed = x;
  borrowed.owner = nullptr;
  HostValue s = run1(make_node("SequenceConstruct"), {borrowed});
  EXPECT_NE(s.elements[0].t.data, x.t.data);
  EXPECT_TRUE(s.elements[0].owner);
  EXPECT_EQ(floats(s.elements[0]), (std::vector<float>{5, 6}));
}

TEST(SequenceOps, InsertAtPositionsIncludingNegativeAndEnd) {
  HostValue s = three_element_sequence();
  Node insert = make_node("SequenceInsert");
  HostValue appended = run1(insert, {s, float_tensor({2}, 30)});
  ASSERT_EQ(appended.elements.size(), 4u);
  EXPECT_EQ(floats(appended.elements[3])[0], 30);
  HostValue front = run1(insert, {s, float_tensor({2}, 40), position(0)});
  EXPECT_EQ(floats(front.elements[0])[0], 40);
  HostValue before_last = run1(insert, {s, float_tensor({2}, 50), position(-1)});
  EXPECT_EQ(floats(before_last.elements[2])[0], 50);
  EXPECT_EQ(floats(before_last.elements[3])[0], 20);
  HostValue at_end = run1(insert, {s, float_tensor({2}, 60), position(3)});
  EXPECT_EQ(floats(at_end.elements[3])[0], 60);
  EXPECT_EQ(s.elements.size(), 3u) << "the input sequence is unchanged";
}

TEST(SequenceOps, InsertRejectsOutOfRangeAndWrongType) {
  HostValue s = three_element_sequence();
  Node insert = make_node("SequenceInsert");
  std::string err = error_of(insert, {s, float_tensor({2}), position(4)});
  EXPECT_NE(err.find("SequenceInsert node 'n': position 4 is out of range"), std::string::npos)
      << err;
  EXPECT_NE(err.find("-3..3"), std::string::npos) << err;
  EXPECT_NE(error_of(insert, {s, float_tensor({2}), position(-4)}).find("out of range"),
            std::string::npos);
  err = error_of(insert, {s, int64_tensor({1, 2}, false)});
  EXPECT_NE(err.find("the tensor is int64 but the sequence holds float32"), std::string::npos)
      << err;
  // An empty sequence of int64 refuses a float tensor too.
  Node empty = make_node("SequenceEmpty");
  set_int(empty, "dtype", LOOM_DTYPE_INT64);
  EXPECT_NE(error_of(insert, {run1(empty, {}), float_tensor({1})}).find("holds int64"),
            std::string::npos);
}

TEST(SequenceOps, AtWithNegativePositionAndOutOfRange) {
  HostValue s = three_element_sequence();
  Node at = make_node("SequenceAt");
  EXPECT_EQ(floats(run1(at, {s, position(1)}))[0], 10);
  EXPECT_EQ(floats(run1(at, {s, position(-1)}))[0], 20);
  EXPECT_EQ(floats(run1(at, {s, position(-3)}))[0], 0);
  std::string err = error_of(at, {s, position(3)});
  EXPECT_NE(err.find("SequenceAt node 'n': position 3 is out of range for a sequence of 3"),
            std::string::npos)
      << err;
  EXPECT_NE(error_of(at, {s, position(-4)}).find("out of range"), std::string::npos);
  // int32 positions are accepted; a float position is not.
  HostValue p32 = allocate_host_value(LOOM_DTYPE_INT32, {1});
  *static_cast<int32_t*>(p32.t.data) = 2;
  EXPECT_EQ(floats(run1(at, {s, p32}))[0], 20);
  EXPECT_NE(error_of(at, {s, float_tensor({})}).find("int32 or int64"), std::string::npos);
  // A tensor where the sequence belongs.
  EXPECT_NE(error_of(at, {float_tensor({2}), position(0)}).find("must be a sequence"),
            std::string::npos);
}

TEST(SequenceOps, EraseDefaultsToTheLastElement) {
  HostValue s = three_element_sequence();
  Node erase = make_node("SequenceErase");
  HostValue last = run1(erase, {s});
  ASSERT_EQ(last.elements.size(), 2u);
  EXPECT_EQ(floats(last.elements[1])[0], 10);
  HostValue first = run1(erase, {s, position(-3)});
  EXPECT_EQ(floats(first.elements[0])[0], 10);
  EXPECT_NE(error_of(erase, {s, position(3)}).find("out of range"), std::string::npos);
  HostValue empty = run1(make_node("SequenceEmpty"), {});
  EXPECT_NE(error_of(erase, {empty}).find("empty sequence"), std::string::npos);
}

TEST(SequenceOps, Length) {
  EXPECT_EQ(int64_scalar(run1(make_node("SequenceLength"), {three_element_sequence()})), 3);
  EXPECT_EQ(int64_scalar(run1(make_node("SequenceLength"), {run1(make_node("SequenceEmpty"), {})})),
            0);
}

TEST(SequenceOps, ConcatAlongAnExistingAxis) {
  Node concat = make_node("ConcatFromSequence");
  set_int(concat, "axis", 1);
  HostValue s =
      run1(make_node("SequenceConstruct"), {float_tensor({2, 1}, 0), float_tensor({2, 2}, 10)});
  HostValue out = run1(concat, {s});
  EXPECT_EQ(dims(out), (Dims{2, 3}));
  EXPECT_EQ(floats(out), (std::vector<float>{0, 10, 11, 1, 12, 13}));
}

TEST(SequenceOps, ConcatWithNewAxis) {
  Node concat = make_node("ConcatFromSequence");
  set_int(concat, "axis", -1);
  set_int(concat, "new_axis", 1);
  HostValue out = run1(concat, {three_element_sequence()});
  EXPECT_EQ(dims(out), (Dims{2, 3}));
  EXPECT_EQ(floats(out), (std::vector<float>{0, 10, 20, 1, 11, 21}));
  Node front = make_node("ConcatFromSequence");
  set_int(front, "axis", 0);
  set_int(front, "new_axis", 1);
  EXPECT_EQ(dims(run1(front, {three_element_sequence()})), (Dims{3, 2}));
}

TEST(SequenceOps, ConcatErrors) {
  Node concat = make_node("ConcatFromSequence");
  set_int(concat, "axis", 0);
  HostValue mismatched =
      run1(make_node("SequenceConstruct"), {float_tensor({2, 2}), float_tensor({2, 3})});
  std::string err = error_of(concat, {mismatched});
  EXPECT_NE(err.find("ConcatFromSequence node 'n': element 1"), std::string::npos) << err;
  EXPECT_NE(error_of(concat, {run1(make_node("SequenceEmpty"), {})}).find("empty"),
            std::string::npos);
  Node far = make_node("ConcatFromSequence");
  set_int(far, "axis", 2);
  EXPECT_NE(error_of(far, {mismatched}).find("axis 2 is out of range for rank 2"),
            std::string::npos);
  EXPECT_NE(error_of(make_node("ConcatFromSequence"), {mismatched}).find("'axis' is required"),
            std::string::npos);
}

TEST(SequenceOps, SplitWithoutSplitInputHonoursKeepdims) {
  HostValue x = float_tensor({2, 3});
  Node split = make_node("SplitToSequence");
  set_int(split, "axis", -1);
  HostValue kept = run1(split, {x});
  ASSERT_EQ(kept.elements.size(), 3u);
  EXPECT_EQ(dims(kept.elements[1]), (Dims{2, 1}));
  EXPECT_EQ(floats(kept.elements[1]), (std::vector<float>{1, 4}));
  Node squeezed = make_node("SplitToSequence");
  set_int(squeezed, "keepdims", 0);
  HostValue rows = run1(squeezed, {x});
  ASSERT_EQ(rows.elements.size(), 2u);
  EXPECT_EQ(dims(rows.elements[1]), (Dims{3}));
  EXPECT_EQ(floats(rows.elements[1]), (std::vector<float>{3, 4, 5}));
}

TEST(SequenceOps, SplitWithScalarAndListSplits) {
  HostValue x = float_tensor({5});
  Node split = make_node("SplitToSequence");
  set_int(split, "keepdims", 0);  // ignored when a split is given
  HostValue chunks = run1(split, {x, int64_tensor({2}, true)});
  ASSERT_EQ(chunks.elements.size(), 3u);
  EXPECT_EQ(dims(chunks.elements[2]), (Dims{1}));
  EXPECT_EQ(floats(chunks.elements[2]), (std::vector<float>{4}));
  HostValue listed = run1(split, {x, int64_tensor({1, 0, 4}, false)});
  ASSERT_EQ(listed.elements.size(), 3u);
  EXPECT_EQ(dims(listed.elements[1]), (Dims{0}));
  EXPECT_EQ(floats(listed.elements[2]), (std::vector<float>{1, 2, 3, 4}));
}

TEST(SequenceOps, SplitErrors) {
  Node split = make_node("SplitToSequence");
  HostValue x = float_tensor({5});
  std::string err = error_of(split, {x, int64_tensor({2, 2}, false)});
  EXPECT_NE(err.find("SplitToSequence node 'n': the split lengths sum to 4 but the axis has 5"),
            std::string::npos)
      << err;
  EXPECT_NE(error_of(split, {x, int64_tensor({0}, true)}).find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(split, {x, int64_tensor({-1, 6}, false)}).find("negative"), std::string::npos);
  EXPECT_NE(error_of(split, {float_tensor({})}).find("scalar"), std::string::npos);
  EXPECT_NE(error_of(split, {x, int64_tensor({3, 3}, false)}).find("sum to more than the 5"),
            std::string::npos);
  // An empty tensor claiming a huge axis is not split into billions of pieces.
  EXPECT_NE(error_of(split, {float_tensor({int64_t{1} << 40, 0})}).find("empty pieces"),
            std::string::npos);
  Node far = make_node("SplitToSequence");
  set_int(far, "axis", 1);
  EXPECT_NE(error_of(far, {x}).find("out of range"), std::string::npos);
}

TEST(SequenceOps, SplitThenConcatRoundTrips) {
  HostValue x = float_tensor({3, 4, 2});
  Node split = make_node("SplitToSequence");
  set_int(split, "axis", 1);
  Node concat = make_node("ConcatFromSequence");
  set_int(concat, "axis", 1);
  HostValue back = run1(concat, {run1(split, {x, int64_tensor({3, 1}, false)})});
  EXPECT_EQ(dims(back), dims(x));
  EXPECT_EQ(floats(back), floats(x));
}

TEST(SequenceOps, OptionalWrapsTestsAndUnwraps) {
  HostValue some = run1(make_node("Optional"), {float_tensor({2}, 7)});
  EXPECT_EQ(some.kind, ValueKind::kOptionalTensor);
  HostValue none = run1(make_node("Optional"), {HostValue{}});
  EXPECT_TRUE(none.elements.empty());
  Node has = make_node("OptionalHasElement");
  EXPECT_EQ(*static_cast<uint8_t*>(run1(has, {some}).t.data), 1);
  EXPECT_EQ(*static_cast<uint8_t*>(run1(has, {none}).t.data), 0);
  EXPECT_EQ(*static_cast<uint8_t*>(run1(has, {HostValue{}}).t.data), 0);
  EXPECT_EQ(*static_cast<uint8_t*>(run1(has, {float_tensor({1})}).t.data), 1);
  Node get = make_node("OptionalGetElement");
  EXPECT_EQ(floats(run1(get, {some})), (std::vector<float>{7, 8}));
  std::string err = error_of(get, {none});
  EXPECT_NE(err.find("OptionalGetElement node 'n': the optional is empty"), std::string::npos)
      << err;
  HostValue of_sequence = run1(make_node("Optional"), {three_element_sequence()});
  EXPECT_EQ(of_sequence.kind, ValueKind::kOptionalSequence);
  EXPECT_EQ(run1(get, {of_sequence}).elements.size(), 3u);
  EXPECT_NE(error_of(make_node("Optional"), {some}).find("already an optional"), std::string::npos);
}

TEST(SequenceOps, IdentityPassesContainers) {
  HostValue s = three_element_sequence();
  HostValue same = run1(make_node("Identity"), {s});
  EXPECT_EQ(same.kind, ValueKind::kSequence);
  EXPECT_EQ(same.elements.size(), 3u);
}

// SequenceMap with a body that doubles (as a fake body runner: the session's child sessions
// are tested end to end by the conformance suite).
class DoublingBody final : public BodyRunner {
 public:
  DoublingBody() {
    graph_.outputs.push_back(graph_.intern("y"));
    graph_.values[0].dtype = LOOM_DTYPE_FLOAT32;
  }
  std::vector<HostValue> run_body(const std::string& attribute,
                                  const std::vector<HostValue>& inputs) override {
    EXPECT_EQ(attribute, "body");
    HostValue out = allocate_host_value(LOOM_DTYPE_FLOAT32, dims(inputs[0]));
    const auto* a = static_cast<const float*>(inputs[0].t.data);
    const auto* b = inputs.size() > 1 ? static_cast<const float*>(inputs[1].t.data) : nullptr;
    for (size_t i = 0; i < out.t.byte_size / sizeof(float); ++i)
      static_cast<float*>(out.t.data)[i] = 2 * a[i] + (b ? b[0] : 0);
    ++calls;
    return {out};
  }
  const Graph& body(const std::string&) const override { return graph_; }
  int calls = 0;

 private:
  Graph graph_;
};

TEST(SequenceOps, MapRunsTheBodyPerElement) {
  DoublingBody body;
  Node map = make_node("SequenceMap");
  std::vector<HostValue> out =
      run_sequence_op(map, {three_element_sequence(), float_tensor({1}, 100)}, &body);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].elements.size(), 3u);
  EXPECT_EQ(body.calls, 3);
  EXPECT_EQ(floats(out[0].elements[1]), (std::vector<float>{120, 122}));
  // Sequences of different lengths are refused.
  HostValue two = run1(make_node("SequenceConstruct"), {float_tensor({2}), float_tensor({2})});
  try {
    run_sequence_op(map, {three_element_sequence(), two}, &body);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 is a sequence of 2 elements, input 0 has 3"),
              std::string::npos)
        << e.what();
  }
  // An empty sequence maps to an empty sequence of the body's output type.
  std::vector<HostValue> none = run_sequence_op(map, {run1(make_node("SequenceEmpty"), {})}, &body);
  EXPECT_TRUE(none[0].elements.empty());
  EXPECT_EQ(none[0].elem_dtype, LOOM_DTYPE_FLOAT32);
}

// ---- inference --------------------------------------------------------------------------------

ValueFacts tensor_facts(loom_dtype_t dtype, const Dims& d) {
  ValueFacts f;
  f.known = true;
  f.dtype = dtype;
  f.shape.rank = static_cast<int32_t>(d.size());
  f.shape.dims = d;
  return f;
}

std::vector<ValueFacts> infer(const Node& n, const std::vector<const ValueFacts*>& inputs) {
  std::vector<ValueFacts> out;
  EXPECT_TRUE(infer_sequence_node(n, inputs, out));
  return out;
}

TEST(SequenceInference, ElementTypesFlowThroughSequences) {
  ValueFacts a = tensor_facts(LOOM_DTYPE_FLOAT32, {2, 3}),
             b = tensor_facts(LOOM_DTYPE_FLOAT32, {4, 3});
  ValueFacts seq = infer(make_node("SequenceConstruct"), {&a, &b})[0];
  EXPECT_EQ(seq.kind, ValueKind::kSequence);
  EXPECT_EQ(seq.dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(seq.shape.dims, (Dims{-1, 3}));
  ValueFacts pos = tensor_facts(LOOM_DTYPE_INT64, {});
  ValueFacts at = infer(make_node("SequenceAt"), {&seq, &pos})[0];
  EXPECT_EQ(at.kind, ValueKind::kTensor);
  EXPECT_EQ(at.dtype, LOOM_DTYPE_FLOAT32);
  // The elements differ in shape: which one the data picks is known at run time only, which
  // devices that compile for known shapes must see as an unknown rank.
  EXPECT_EQ(at.shape.rank, -1);
  ValueFacts same = infer(make_node("SequenceConstruct"), {&a, &a})[0];
  ValueFacts at_same = infer(make_node("SequenceAt"), {&same, &pos})[0];
  EXPECT_EQ(at_same.shape.dims, (Dims{2, 3}));
  Node concat = make_node("ConcatFromSequence");
  set_int(concat, "axis", 1);
  set_int(concat, "new_axis", 1);
  ValueFacts stacked = infer(concat, {&same})[0];
  EXPECT_EQ(stacked.dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(stacked.shape.rank, -1);  // the element count is data
  ValueFacts len = infer(make_node("SequenceLength"), {&seq})[0];
  EXPECT_EQ(len.dtype, LOOM_DTYPE_INT64);
  EXPECT_EQ(len.shape.rank, 0);
}

TEST(SequenceInference, SplitAndOptionals) {
  ValueFacts x = tensor_facts(LOOM_DTYPE_FLOAT64, {2, 3, 4});
  Node split = make_node("SplitToSequence");
  set_int(split, "keepdims", 0);
  ValueFacts seq = infer(split, {&x})[0];
  EXPECT_EQ(seq.dtype, LOOM_DTYPE_FLOAT64);
  EXPECT_EQ(seq.shape.dims, (Dims{3, 4}));
  ValueFacts opt = infer(make_node("Optional"), {&seq})[0];
  EXPECT_EQ(opt.kind, ValueKind::kOptionalSequence);
  EXPECT_EQ(infer(make_node("OptionalGetElement"), {&opt})[0].kind, ValueKind::kSequence);
  EXPECT_EQ(infer(make_node("OptionalHasElement"), {&opt})[0].dtype, LOOM_DTYPE_BOOL);
  EXPECT_EQ(infer(make_node("Identity"), {&seq})[0].kind, ValueKind::kSequence);
  // Identity of a tensor is not a sequence op: the schemas infer it.
  std::vector<ValueFacts> out;
  EXPECT_FALSE(infer_sequence_node(make_node("Identity"), {&x}, out));
}

}  // namespace
}  // namespace loom::core
