// Type and shape inference of the built-in schemas, one block per op family: the shapes of
// ResNet-50 / MobileNetV2 / BERT layers, the attribute and input forms of each op, symbolic
// (-1) extents, and the errors for shapes that can never be valid.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "schemas/builtin_schemas.hpp"

namespace {

using Dims = std::vector<int64_t>;
constexpr int64_t U = -1;  // unknown extent

// Owns everything a loom_node_t view points to and runs the inference of the schema the core
// would pick: the newest version of the op not newer than the node's opset.
class TestNode {
 public:
  explicit TestNode(std::string op_type, int64_t opset = 17, std::string domain = "")
      : op_type_(std::move(op_type)), domain_(std::move(domain)), opset_(opset) {}

  TestNode& input(loom_dtype_t dtype, Dims dims) { return add_value(dtype, std::move(dims), true); }
  TestNode& unknown_rank_input(loom_dtype_t dtype) { return add_value(dtype, {}, false); }
  TestNode& omitted() {
    inputs_.push_back(nullptr);
    return *this;
  }
  TestNode& ints_input(const std::vector<int64_t>& values, bool scalar = false) {
    return const_input(LOOM_DTYPE_INT64, values.data(), values.size() * 8,
                       scalar ? Dims{} : Dims{static_cast<int64_t>(values.size())});
  }
  TestNode& floats_input(const std::vector<float>& values, bool scalar = false) {
    return const_input(LOOM_DTYPE_FLOAT32, values.data(), values.size() * 4,
                       scalar ? Dims{} : Dims{static_cast<int64_t>(values.size())});
  }
  TestNode& const_input(loom_dtype_t dtype, const void* data, size_t bytes, Dims dims) {
    add_value(dtype, std::move(dims), true);
    Value& v = *values_.back();
    v.bytes.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    v.info.flags = LOOM_VALUE_CONSTANT;
    v.info.data = v.bytes.data();
    v.info.data_size = v.bytes.size();
    return *this;
  }

  TestNode& attr(const char* name, int64_t i) { return add_attr(name, LOOM_ATTR_INT).i = i, *this; }
  TestNode& attr(const char* name, float f) { return add_attr(name, LOOM_ATTR_FLOAT).f = f, *this; }
  TestNode& attr(const char* name, const char* s) {
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_STRING);
    strings_.emplace_back(s);
    a.s = strings_.back().c_str();
    a.s_size = strings_.back().size();
    return *this;
  }
  TestNode& attr_ints(const char* name, std::vector<int64_t> ints) {
    int_lists_.push_back(std::move(ints));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_INTS);
    a.ints = int_lists_.back().data();
    a.count = int_lists_.back().size();
    return *this;
  }
  TestNode& attr_floats(const char* name, std::vector<float> floats) {
    float_lists_.push_back(std::move(floats));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_FLOATS);
    a.floats = float_lists_.back().data();
    a.count = float_lists_.back().size();
    return *this;
  }
  TestNode& attr_strings(const char* name, size_t count) {
    string_lists_.emplace_back(count, loom_string_t{"", 0});
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_STRINGS);
    a.strings = string_lists_.back().data();
    a.count = count;
    return *this;
  }
  TestNode& attr_tensor(const char* name, loom_dtype_t dtype, Dims dims) {
    auto v = std::make_unique<Value>();
    v->dims = std::move(dims);
    v->info = value_info(dtype, v->dims, true);
    add_attr(name, LOOM_ATTR_TENSOR).tensor = &v->info;
    values_.push_back(std::move(v));
    return *this;
  }
  TestNode& attr_graph(const char* name, const loom_graph_t* graph) {
    add_attr(name, LOOM_ATTR_GRAPH).graph = graph;
    return *this;
  }
  TestNode& outputs(size_t n) {
    num_outputs_ = n;
    return *this;
  }

  // Runs inference; returns the outputs.
  std::vector<loom_inferred_t> infer() {
    const loom::core::BuiltinSchema* best = nullptr;
    for (const loom::core::BuiltinSchema& s : loom::core::builtin_schemas())
      if (domain_ == s.domain && op_type_ == s.op_type && s.since_version <= opset_ &&
          (!best || s.since_version > best->since_version))
        best = &s;
    if (!best) throw std::runtime_error("no schema for " + op_type_);
    if (!best->infer) throw std::runtime_error("no inference for " + op_type_);
    std::vector<const loom_attribute_t*> attr_ptrs;
    for (const loom_attribute_t& a : attrs_) attr_ptrs.push_back(&a);
    std::vector<int32_t> ins(inputs_.size()), outs(num_outputs_);
    for (size_t i = 0; i < ins.size(); ++i) ins[i] = inputs_[i] ? static_cast<int32_t>(i) : -1;
    for (size_t i = 0; i < outs.size(); ++i) outs[i] = static_cast<int32_t>(ins.size() + i);
    loom_node_t node{};
    node.struct_size = sizeof node;
    node.name = "n";
    node.op_type = op_type_.c_str();
    node.domain = domain_.c_str();
    node.opset = opset_;
    node.num_inputs = ins.size();
    node.inputs = ins.data();
    node.num_outputs = outs.size();
    node.outputs = outs.data();
    node.num_attributes = attr_ptrs.size();
    node.attributes = attr_ptrs.data();
    std::vector<loom_inferred_t> out(num_outputs_);
    for (loom_inferred_t& o : out) {
      std::memset(&o, 0, sizeof o);
      o.struct_size = sizeof o;
      o.rank = -1;
    }
    best->infer(node, inputs_, out);
    return out;
  }
  loom_inferred_t infer0() { return infer().at(0); }

  static loom_value_info_t value_info(loom_dtype_t dtype, const Dims& dims, bool rank_known) {
    loom_value_info_t info{};
    info.struct_size = sizeof info;
    info.name = "v";
    info.dtype = dtype;
    info.rank = rank_known ? static_cast<int32_t>(dims.size()) : -1;
    info.dims = dims.data();
    info.arena_offset = -1;
    return info;
  }

 private:
  struct Value {
    Dims dims;
    std::vector<char> bytes;
    loom_value_info_t info;
  };
  TestNode& add_value(loom_dtype_t dtype, Dims dims, bool rank_known) {
    auto v = std::make_unique<Value>();
    v->dims = std::move(dims);
    v->info = value_info(dtype, v->dims, rank_known);
    inputs_.push_back(&v->info);
    values_.push_back(std::move(v));
    return *this;
  }
  loom_attribute_t& add_attr(const char* name, loom_attr_type_t type) {
    strings_.emplace_back(name);
    loom_attribute_t a{};
    a.struct_size = sizeof a;
    a.name = strings_.back().c_str();
    a.type = type;
    attrs_.push_back(a);
    return attrs_.back();
  }

  std::string op_type_, domain_;
  int64_t opset_;
  size_t num_outputs_ = 1;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<const loom_value_info_t*> inputs_;
  std::deque<loom_attribute_t> attrs_;
  std::deque<std::string> strings_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::vector<float>> float_lists_;
  std::deque<std::vector<loom_string_t>> string_lists_;
};

Dims dims_of(const loom_inferred_t& o) {
  return o.rank < 0 ? Dims{} : Dims(o.dims, o.dims + o.rank);
}

#define EXPECT_INFERRED(out, dtype_, ...)      \
  do {                                         \
    loom_inferred_t o_ = (out);                \
    EXPECT_EQ(o_.dtype, dtype_);               \
    EXPECT_EQ(dims_of(o_), Dims(__VA_ARGS__)); \
    EXPECT_GE(o_.rank, 0);                     \
  } while (0)

// Expects inference to throw INVALID_MODEL naming the node and containing `part`.
void expect_invalid(TestNode& node, const std::string& part) {
  try {
    node.infer();
    ADD_FAILURE() << "expected an error containing '" << part << "'";
  } catch (const loom::sdk::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_MODEL);
    std::string what = e.what();
    EXPECT_NE(what.find("node 'n': "), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

constexpr loom_dtype_t F32 = LOOM_DTYPE_FLOAT32;
constexpr loom_dtype_t I64 = LOOM_DTYPE_INT64;
constexpr loom_dtype_t BOOL = LOOM_DTYPE_BOOL;

// ---- element-wise -----------------------------------------------------------------------

TEST(ElementwiseInference, BroadcastsNumpyStyle) {
  EXPECT_INFERRED(TestNode("Add").input(F32, {2, 3, 4}).input(F32, {4}).infer0(), F32, {2, 3, 4});
  EXPECT_INFERRED(TestNode("Mul").input(F32, {8, 1, 6, 1}).input(F32, {7, 1, 5}).infer0(), F32,
                  {8, 7, 6, 5});
  EXPECT_INFERRED(TestNode("Pow").input(F32, {2, 3}).input(I64, {}).infer0(), F32, {2, 3});
}

TEST(ElementwiseInference, SymbolicDimsStayUnknownOrResolve) {
  // Unknown vs known > 1 must be that extent; unknown vs 1 stays unknown.
  EXPECT_INFERRED(TestNode("Sub").input(F32, {U, 3}).input(F32, {5, 1}).infer0(), F32, {5, 3});
  EXPECT_INFERRED(TestNode("Div").input(F32, {U, U}).input(F32, {1, U}).infer0(), F32, {U, U});
  loom_inferred_t unknown = TestNode("Add").unknown_rank_input(F32).input(F32, {3}).infer0();
  EXPECT_EQ(unknown.dtype, F32);
  EXPECT_EQ(unknown.rank, -1);
}

TEST(ElementwiseInference, BroadcastMismatchIsAnError) {
  TestNode add("Add");
  add.input(F32, {2, 3}).input(F32, {4});
  expect_invalid(add, "[2,3] and [4] cannot be broadcast");
}

TEST(ElementwiseInference, LegacyBroadcastKeepsFirstShape) {
  EXPECT_INFERRED(TestNode("Add", 6)
                      .input(F32, {2, 3, 4})
                      .input(F32, {3})
                      .attr("broadcast", int64_t{1})
                      .attr("axis", int64_t{1})
                      .infer0(),
                  F32, {2, 3, 4});
  TestNode strict("Add", 6);
  strict.input(F32, {2, 3}).input(F32, {3});
  expect_invalid(strict, "broadcast is not set");
}

TEST(ElementwiseInference, ComparisonsAndLogicGiveBool) {
  EXPECT_INFERRED(TestNode("Equal").input(I64, {1, 128}).input(I64, {}).infer0(), BOOL, {1, 128});
  EXPECT_INFERRED(TestNode("Less", 9).input(F32, {3}).input(F32, {2, 1}).infer0(), BOOL, {2, 3});
  EXPECT_INFERRED(TestNode("Not").input(BOOL, {4}).infer0(), BOOL, {4});
  EXPECT_INFERRED(TestNode("IsNaN").input(F32, {2, 2}).infer0(), BOOL, {2, 2});
}

TEST(ElementwiseInference, WhereBroadcastsThreeInputs) {
  EXPECT_INFERRED(TestNode("Where")
                      .input(BOOL, {1, 1, 1, 128})
                      .input(F32, {})
                      .input(F32, {2, 12, 128, 128})
                      .infer0(),
                  F32, {2, 12, 128, 128});
}

TEST(ElementwiseInference, ActivationsKeepTypeAndShape) {
  for (const char* op : {"Relu", "Erf", "Sqrt", "Sigmoid", "Tanh", "Identity", "Clip", "Mish"}) {
    SCOPED_TRACE(op);
    EXPECT_INFERRED(TestNode(op, 18).input(F32, {U, 64, 7}).infer0(), F32, {U, 64, 7});
  }
}

TEST(ElementwiseInference, DropoutMaskIsBoolSinceOpset10) {
  auto out = TestNode("Dropout", 13).input(F32, {2, 5}).outputs(2).infer();
  EXPECT_INFERRED(out[1], BOOL, {2, 5});
  auto old = TestNode("Dropout", 7).input(F32, {2, 5}).outputs(2).infer();
  EXPECT_INFERRED(old[1], F32, {2, 5});
}

TEST(ElementwiseInference, VariadicSumBroadcasts) {
  EXPECT_INFERRED(TestNode("Sum").input(F32, {3, 1}).input(F32, {4}).input(F32, {1, 1}).infer0(),
                  F32, {3, 4});
}

// ---- convolution and pooling ------------------------------------------------------------

TEST(ConvInference, ResNetStem) {
  EXPECT_INFERRED(TestNode("Conv", 11)
                      .input(F32, {1, 3, 224, 224})
                      .input(F32, {64, 3, 7, 7})
                      .input(F32, {64})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {3, 3, 3, 3})
                      .infer0(),
                  F32, {1, 64, 112, 112});
}

TEST(ConvInference, DepthwiseGroupAndSymbolicBatch) {
  EXPECT_INFERRED(TestNode("Conv")
                      .input(F32, {U, 32, 112, 112})
                      .input(F32, {32, 1, 3, 3})
                      .attr("group", int64_t{32})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .attr_ints("strides", {2, 2})
                      .infer0(),
                  F32, {U, 32, 56, 56});
}

TEST(ConvInference, AutoPadAndDilations) {
  EXPECT_INFERRED(TestNode("Conv")
                      .input(F32, {1, 1, 7, 5})
                      .input(F32, {2, 1, 3, 3})
                      .attr("auto_pad", "SAME_UPPER")
                      .attr_ints("strides", {2, 2})
                      .infer0(),
                  F32, {1, 2, 4, 3});
  EXPECT_INFERRED(TestNode("Conv")
                      .input(F32, {1, 1, 10})
                      .input(F32, {1, 1, 3})
                      .attr("auto_pad", "VALID")
                      .attr_ints("dilations", {2})
                      .infer0(),
                  F32, {1, 1, 6});
}

TEST(ConvInference, ChannelMismatchWithWeightsAndGroup) {
  TestNode conv("Conv");
  conv.input(F32, {1, 3, 8, 8}).input(F32, {16, 4, 3, 3});
  expect_invalid(conv, "has 3 channels but weights [16,4,3,3] with group 1 expect 4");
  TestNode grouped("Conv");
  grouped.input(F32, {1, 8, 8, 8}).input(F32, {6, 2, 3, 3}).attr("group", int64_t{4});
  expect_invalid(grouped, "not divisible by group 4");
  TestNode big_kernel("Conv");
  big_kernel.input(F32, {1, 1, 2, 2}).input(F32, {1, 1, 3, 3});
  expect_invalid(big_kernel, "larger than the padded input");
}

TEST(ConvInference, ConvTransposeUpsamples) {
  EXPECT_INFERRED(TestNode("ConvTranspose")
                      .input(F32, {1, 16, 8, 8})
                      .input(F32, {16, 8, 4, 4})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .infer0(),
                  F32, {1, 8, 16, 16});
  EXPECT_INFERRED(TestNode("ConvTranspose")
                      .input(F32, {1, 4, 3, 3})
                      .input(F32, {4, 2, 3, 3})
                      .attr("group", int64_t{2})
                      .attr_ints("output_shape", {10, 8})
                      .infer0(),
                  F32, {1, 4, 10, 8});
}

TEST(PoolInference, MaxPoolPadsAndCeilMode) {
  EXPECT_INFERRED(TestNode("MaxPool", 12)
                      .input(F32, {1, 64, 112, 112})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .infer0(),
                  F32, {1, 64, 56, 56});
  EXPECT_INFERRED(TestNode("MaxPool", 12)
                      .input(F32, {1, 1, 6, 6})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .attr("ceil_mode", int64_t{1})
                      .infer0(),
                  F32, {1, 1, 3, 3});
  EXPECT_INFERRED(TestNode("AveragePool")
                      .input(F32, {1, 1, 6, 6})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .infer0(),
                  F32, {1, 1, 2, 2});
  auto indices = TestNode("MaxPool")
                     .input(F32, {1, 1, 4, 4})
                     .attr_ints("kernel_shape", {2, 2})
                     .outputs(2)
                     .infer();
  EXPECT_INFERRED(indices[1], I64, {1, 1, 3, 3});
  TestNode no_kernel("MaxPool");
  no_kernel.input(F32, {1, 1, 4, 4});
  expect_invalid(no_kernel, "kernel_shape is required");
}

TEST(PoolInference, GlobalPool) {
  EXPECT_INFERRED(TestNode("GlobalAveragePool").input(F32, {U, 2048, 7, 7}).infer0(), F32,
                  {U, 2048, 1, 1});
}

// ---- matrix products --------------------------------------------------------------------

TEST(LinalgInference, GemmWithTransBAndBias) {
  EXPECT_INFERRED(TestNode("Gemm")
                      .input(F32, {1, 2048})
                      .input(F32, {1000, 2048})
                      .input(F32, {1000})
                      .attr("transB", int64_t{1})
                      .infer0(),
                  F32, {1, 1000});
  TestNode bad("Gemm");
  bad.input(F32, {1, 2048}).input(F32, {1000, 2048});
  expect_invalid(bad, "inner dimensions disagree");
}

TEST(LinalgInference, MatMulBatchBroadcastAndVectors) {
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {2, 1, 3, 4}).input(F32, {5, 4, 6}).infer0(), F32,
                  {2, 5, 3, 6});
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {4}).input(F32, {4, 6}).infer0(), F32, {6});
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {3, 4}).input(F32, {4}).infer0(), F32, {3});
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {U, U, 768}).input(F32, {768, 3072}).infer0(), F32,
                  {U, U, 3072});
  TestNode bad("MatMul");
  bad.input(F32, {2, 3, 4}).input(F32, {5, 6});
  expect_invalid(bad, "A [2,3,4] has 4 columns but B [5,6] has 5 rows");
}

TEST(LinalgInference, Einsum) {
  EXPECT_INFERRED(TestNode("Einsum")
                      .input(F32, {2, 3, 4})
                      .input(F32, {2, 4, 5})
                      .attr("equation", "bij,bjk->bik")
                      .infer0(),
                  F32, {2, 3, 5});
  // Implicit output: labels seen once, alphabetically.
  EXPECT_INFERRED(
      TestNode("Einsum").input(F32, {3, 4}).input(F32, {4, 7}).attr("equation", "ij,jk").infer0(),
      F32, {3, 7});
  EXPECT_INFERRED(
      TestNode("Einsum").input(F32, {9, 2, 3}).attr("equation", "...ij->...ji").infer0(), F32,
      {9, 3, 2});
  TestNode bad("Einsum");
  bad.input(F32, {3, 4}).input(F32, {5, 7}).attr("equation", "ij,jk->ik");
  expect_invalid(bad, "label 'j' has extents 4 and 5");
}

// ---- normalisation ----------------------------------------------------------------------

TEST(NormalizationInference, BatchNormChecksChannels) {
  EXPECT_INFERRED(TestNode("BatchNormalization")
                      .input(F32, {1, 64, 56, 56})
                      .input(F32, {64})
                      .input(F32, {64})
                      .input(F32, {64})
                      .input(F32, {64})
                      .infer0(),
                  F32, {1, 64, 56, 56});
  TestNode bad("BatchNormalization");
  bad.input(F32, {1, 64, 56, 56})
      .input(F32, {32})
      .input(F32, {64})
      .input(F32, {64})
      .input(F32, {64});
  expect_invalid(bad, "does not match the 64 channels");
}

TEST(NormalizationInference, LayerNormStatistics) {
  auto out = TestNode("LayerNormalization")
                 .input(F32, {U, 128, 768})
                 .input(F32, {768})
                 .input(F32, {768})
                 .outputs(3)
                 .infer();
  EXPECT_INFERRED(out[0], F32, {U, 128, 768});
  EXPECT_INFERRED(out[1], F32, {U, 128, 1});
  EXPECT_INFERRED(out[2], F32, {U, 128, 1});
  TestNode bad("LayerNormalization");
  bad.input(F32, {2, 128, 768}).input(F32, {512});
  expect_invalid(bad, "Scale (input 1) [512] does not broadcast to [768]");
}

TEST(NormalizationInference, SoftmaxAxisChecked) {
  EXPECT_INFERRED(
      TestNode("Softmax").input(F32, {2, 12, 128, 128}).attr("axis", int64_t{-1}).infer0(), F32,
      {2, 12, 128, 128});
  TestNode bad("Softmax");
  bad.input(F32, {2, 3}).attr("axis", int64_t{2});
  expect_invalid(bad, "axis 2 is out of range for rank 2");
}

// ---- shape ops --------------------------------------------------------------------------

TEST(ShapeOpInference, ReshapeZeroAndMinusOne) {
  EXPECT_INFERRED(TestNode("Reshape").input(F32, {2, 3, 4}).ints_input({0, -1}).infer0(), F32,
                  {2, 12});
  EXPECT_INFERRED(TestNode("Reshape").input(F32, {U, 128, 768}).ints_input({0, 0, 12, 64}).infer0(),
                  F32, {U, 128, 12, 64});
  // A -1 next to an unknown input extent stays unknown.
  EXPECT_INFERRED(TestNode("Reshape").input(F32, {U, 4}).ints_input({-1, 2}).infer0(), F32, {U, 2});
  // allowzero: 0 is a real zero extent.
  EXPECT_INFERRED(TestNode("Reshape", 14)
                      .input(F32, {0, 4})
                      .ints_input({0, 8})
                      .attr("allowzero", int64_t{1})
                      .infer0(),
                  F32, {0, 8});
  // Reshape-1 reads the attribute.
  EXPECT_INFERRED(TestNode("Reshape", 1).input(F32, {6}).attr_ints("shape", {2, 3}).infer0(), F32,
                  {2, 3});
}

TEST(ShapeOpInference, ReshapeErrors) {
  TestNode count("Reshape");
  count.input(F32, {2, 3, 4}).ints_input({5, 5});
  expect_invalid(count, "cannot reshape input [2,3,4] (24 elements) into [5,5] (25 elements)");
  TestNode indivisible("Reshape");
  indivisible.input(F32, {2, 3, 4}).ints_input({5, -1});
  expect_invalid(indivisible, "cannot reshape input [2,3,4]");
  TestNode two("Reshape");
  two.input(F32, {2, 3, 4}).ints_input({-1, -1});
  expect_invalid(two, "more than one -1");
}

TEST(ShapeOpInference, ReshapeWithRuntimeShape) {
  loom_inferred_t out = TestNode("Reshape").input(F32, {2, 3}).input(I64, {3}).infer0();
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.dims[0], U);
}

TEST(ShapeOpInference, FlattenSqueezeUnsqueeze) {
  EXPECT_INFERRED(TestNode("Flatten").input(F32, {U, 2048, 1, 1}).infer0(), F32, {U, 2048});
  EXPECT_INFERRED(TestNode("Flatten").input(F32, {2, 3, 4}).attr("axis", int64_t{0}).infer0(), F32,
                  {1, 24});
  EXPECT_INFERRED(TestNode("Squeeze", 11).input(F32, {1, 3, 1}).attr_ints("axes", {-1}).infer0(),
                  F32, {1, 3});
  EXPECT_INFERRED(TestNode("Squeeze", 13).input(F32, {1, 3, 1}).ints_input({0}).infer0(), F32,
                  {3, 1});
  EXPECT_INFERRED(TestNode("Squeeze", 13).input(F32, {1, 3, 1}).infer0(), F32, {3});
  EXPECT_INFERRED(TestNode("Unsqueeze", 11).input(I64, {U, 128}).attr_ints("axes", {1, 2}).infer0(),
                  I64, {U, 1, 1, 128});
  EXPECT_INFERRED(TestNode("Unsqueeze", 13).input(I64, {}).ints_input({0}).infer0(), I64, {1});
  TestNode bad("Squeeze", 13);
  bad.input(F32, {2, 3}).ints_input({0});
  expect_invalid(bad, "cannot squeeze dimension 0 of extent 2");
}

TEST(ShapeOpInference, TransposeConcatSplit) {
  EXPECT_INFERRED(
      TestNode("Transpose").input(F32, {2, 128, 12, 64}).attr_ints("perm", {0, 2, 1, 3}).infer0(),
      F32, {2, 12, 128, 64});
  EXPECT_INFERRED(TestNode("Transpose").input(F32, {2, 3, 4}).infer0(), F32, {4, 3, 2});
  EXPECT_INFERRED(TestNode("Concat")
                      .input(I64, {1})
                      .input(I64, {1})
                      .input(I64, {2})
                      .attr("axis", int64_t{0})
                      .infer0(),
                  I64, {4});
  EXPECT_INFERRED(
      TestNode("Concat").input(F32, {U, 3}).input(F32, {2, 3}).attr("axis", int64_t{1}).infer0(),
      F32, {2, 6});
  TestNode bad_concat("Concat");
  bad_concat.input(F32, {2, 3}).input(F32, {4, 3}).attr("axis", int64_t{1});
  expect_invalid(bad_concat, "extents of dimension 0 of the inputs disagree: 2 vs 4");
  auto even = TestNode("Split", 13).input(F32, {6, 4}).outputs(3).infer();
  EXPECT_INFERRED(even[2], F32, {2, 4});
  auto sized = TestNode("Split", 13)
                   .input(F32, {6, 4})
                   .ints_input({1, 3})
                   .attr("axis", int64_t{1})
                   .outputs(2)
                   .infer();
  EXPECT_INFERRED(sized[1], F32, {6, 3});
  auto uneven =
      TestNode("Split", 18).input(F32, {7}).attr("num_outputs", int64_t{3}).outputs(3).infer();
  EXPECT_INFERRED(uneven[0], F32, {3});
  EXPECT_INFERRED(uneven[2], F32, {1});
  TestNode bad_split("Split", 13);
  bad_split.input(F32, {7}).outputs(2);
  expect_invalid(bad_split, "cannot be split evenly");
}

TEST(ShapeOpInference, SliceWithConstantInputs) {
  EXPECT_INFERRED(TestNode("Slice")
                      .input(F32, {20, 10, 5})
                      .ints_input({0, 0})
                      .ints_input({3, 10})
                      .ints_input({0, 1})
                      .ints_input({1, 3})
                      .infer0(),
                  F32, {3, 4, 5});
  // End beyond the extent (INT64_MAX as exporters write it) and a negative step.
  EXPECT_INFERRED(TestNode("Slice")
                      .input(F32, {10, 8})
                      .ints_input({1})
                      .ints_input({INT64_MAX})
                      .ints_input({1})
                      .infer0(),
                  F32, {10, 7});
  EXPECT_INFERRED(TestNode("Slice")
                      .input(F32, {10})
                      .ints_input({-1})
                      .ints_input({INT64_MIN})
                      .ints_input({0})
                      .ints_input({-3})
                      .infer0(),
                  F32, {4});
  EXPECT_INFERRED(TestNode("Slice", 1)
                      .input(F32, {4, 6})
                      .attr_ints("starts", {1})
                      .attr_ints("ends", {-1})
                      .attr_ints("axes", {1})
                      .infer0(),
                  F32, {4, 4});
  // Bounds only known at run time: the sliced axis becomes unknown.
  EXPECT_INFERRED(
      TestNode("Slice").input(F32, {4, 6}).input(I64, {1}).input(I64, {1}).ints_input({1}).infer0(),
      F32, {4, U});
  TestNode zero_step("Slice");
  zero_step.input(F32, {4}).ints_input({0}).ints_input({4}).ints_input({0}).ints_input({0});
  expect_invalid(zero_step, "contain a zero");
}

TEST(ShapeOpInference, GatherExpandTilePad) {
  EXPECT_INFERRED(TestNode("Gather").input(F32, {30522, 768}).input(I64, {U, 128}).infer0(), F32,
                  {U, 128, 768});
  EXPECT_INFERRED(TestNode("Gather").input(I64, {4}).ints_input({0}, true).infer0(), I64, {});
  EXPECT_INFERRED(TestNode("Expand").input(F32, {3, 1}).ints_input({2, 1, 6}).infer0(), F32,
                  {2, 3, 6});
  EXPECT_INFERRED(TestNode("Tile").input(F32, {2, 3}).ints_input({2, 2}).infer0(), F32, {4, 6});
  EXPECT_INFERRED(
      TestNode("Pad").input(F32, {1, 3, 4, 4}).ints_input({0, 0, 1, 1, 0, 0, 1, 1}).infer0(), F32,
      {1, 3, 6, 6});
  EXPECT_INFERRED(TestNode("Pad", 18)
                      .input(F32, {1, 3, 4, 4})
                      .ints_input({2, 3})
                      .omitted()
                      .ints_input({-1})
                      .infer0(),
                  F32, {1, 3, 4, 9});
  EXPECT_INFERRED(TestNode("Pad", 2).input(F32, {2, 2}).attr_ints("pads", {1, 0, 1, 0}).infer0(),
                  F32, {4, 2});
  TestNode bad("Expand");
  bad.input(F32, {3, 2}).ints_input({4, 3});
  expect_invalid(bad, "cannot be broadcast");
}

TEST(ShapeOpInference, ShapeSizeConstants) {
  EXPECT_INFERRED(TestNode("Shape").input(F32, {U, 128, 768}).infer0(), I64, {3});
  EXPECT_INFERRED(TestNode("Shape", 15)
                      .input(F32, {2, 3, 4, 5})
                      .attr("start", int64_t{1})
                      .attr("end", int64_t{-1})
                      .infer0(),
                  I64, {2});
  EXPECT_INFERRED(TestNode("Size").input(F32, {U, 3}).infer0(), I64, {});
  EXPECT_INFERRED(
      TestNode("ConstantOfShape").ints_input({2, 5}).attr_tensor("value", I64, {1}).infer0(), I64,
      {2, 5});
  EXPECT_INFERRED(TestNode("ConstantOfShape").input(I64, {3}).infer0(), F32, {U, U, U});
  EXPECT_INFERRED(TestNode("Constant").attr_tensor("value", F32, {2, 2}).infer0(), F32, {2, 2});
  EXPECT_INFERRED(TestNode("Constant").attr_ints("value_ints", {1, 2, 3}).infer0(), I64, {3});
  EXPECT_INFERRED(
      TestNode("Range").ints_input({0}, true).ints_input({10}, true).ints_input({3}, true).infer0(),
      I64, {4});
  EXPECT_INFERRED(TestNode("Range")
                      .floats_input({1.f}, true)
                      .floats_input({0.f}, true)
                      .floats_input({-0.25f}, true)
                      .infer0(),
                  F32, {4});
  loom_inferred_t runtime_range =
      TestNode("Range").input(I64, {}).input(I64, {}).input(I64, {}).infer0();
  EXPECT_EQ(runtime_range.rank, 1);
  EXPECT_EQ(runtime_range.dims[0], U);
}

TEST(ShapeOpInference, MalformedConstantIsRejected) {
  // A constant claiming 4 int64 values but holding 8 bytes must not be read past its end.
  int64_t one = 1;
  TestNode bad("Reshape");
  bad.input(F32, {4}).const_input(I64, &one, sizeof one, {4});
  expect_invalid(bad, "holds only 8 bytes");
}

// ---- reductions, types, indexing -------------------------------------------------------

TEST(ReductionInference, AxesAttributeAndInputForms) {
  EXPECT_INFERRED(
      TestNode("ReduceMean", 13).input(F32, {U, 128, 768}).attr_ints("axes", {-1}).infer0(), F32,
      {U, 128, 1});
  EXPECT_INFERRED(TestNode("ReduceMean", 18)
                      .input(F32, {U, 128, 768})
                      .ints_input({-1})
                      .attr("keepdims", int64_t{0})
                      .infer0(),
                  F32, {U, 128});
  EXPECT_INFERRED(TestNode("ReduceSum", 13).input(F32, {2, 3}).infer0(), F32, {1, 1});
  EXPECT_INFERRED(TestNode("ReduceSum", 13)
                      .input(F32, {2, 3})
                      .ints_input({})
                      .attr("noop_with_empty_axes", int64_t{1})
                      .infer0(),
                  F32, {2, 3});
  loom_inferred_t runtime_axes =
      TestNode("ReduceSum", 13).input(F32, {2, 3, 4}).input(I64, {1}).infer0();
  EXPECT_EQ(runtime_axes.rank, 3);
  TestNode bad("ReduceMax", 13);
  bad.input(F32, {2, 3}).attr_ints("axes", {3});
  expect_invalid(bad, "reduction axis 3 is out of range");
}

TEST(TypeOpInference, CastAndQuantization) {
  EXPECT_INFERRED(
      TestNode("Cast").input(BOOL, {1, 128}).attr("to", int64_t{LOOM_DTYPE_FLOAT32}).infer0(), F32,
      {1, 128});
  EXPECT_INFERRED(TestNode("Cast", 1).input(F32, {2}).attr("to", "INT64").infer0(), I64, {2});
  EXPECT_INFERRED(TestNode("CastLike").input(F32, {2}).input(LOOM_DTYPE_FLOAT16, {}).infer0(),
                  LOOM_DTYPE_FLOAT16, {2});
  EXPECT_INFERRED(
      TestNode("QuantizeLinear").input(F32, {4}).input(F32, {}).input(LOOM_DTYPE_INT8, {}).infer0(),
      LOOM_DTYPE_INT8, {4});
  EXPECT_INFERRED(TestNode("QuantizeLinear").input(F32, {4}).input(F32, {}).infer0(),
                  LOOM_DTYPE_UINT8, {4});
  EXPECT_INFERRED(TestNode("DequantizeLinear").input(LOOM_DTYPE_UINT8, {4}).input(F32, {}).infer0(),
                  F32, {4});
  TestNode bad("Cast");
  bad.input(F32, {2}).attr("to", int64_t{99});
  expect_invalid(bad, "not a supported element type");
}

TEST(IndexingInference, ArgMaxTopKNonZero) {
  EXPECT_INFERRED(TestNode("ArgMax").input(F32, {3, 5}).attr("axis", int64_t{1}).infer0(), I64,
                  {3, 1});
  EXPECT_INFERRED(TestNode("ArgMin").input(F32, {3, 5}).attr("keepdims", int64_t{0}).infer0(), I64,
                  {5});
  auto topk = TestNode("TopK").input(F32, {3, 10}).ints_input({4}).outputs(2).infer();
  EXPECT_INFERRED(topk[0], F32, {3, 4});
  EXPECT_INFERRED(topk[1], I64, {3, 4});
  EXPECT_INFERRED(TestNode("NonZero").input(F32, {3, 4, 5}).infer0(), I64, {3, U});
  EXPECT_INFERRED(TestNode("GatherND").input(F32, {2, 3, 4}).input(I64, {5, 2}).infer0(), F32,
                  {5, 4});
  EXPECT_INFERRED(
      TestNode("OneHot").input(I64, {3}).ints_input({10}, true).input(F32, {2}).infer0(), F32,
      {3, 10});
  TestNode bad("TopK");
  bad.input(F32, {3, 10}).ints_input({11}).outputs(2);
  expect_invalid(bad, "k = 11 is not within");
}

TEST(ResizeInference, ScalesSizesAndAspectPolicy) {
  EXPECT_INFERRED(TestNode("Resize")
                      .input(F32, {1, 3, 10, 10})
                      .omitted()
                      .floats_input({1, 1, 2, 1.5f})
                      .infer0(),
                  F32, {1, 3, 20, 15});
  EXPECT_INFERRED(TestNode("Resize")
                      .input(F32, {1, 3, 10, 10})
                      .omitted()
                      .omitted()
                      .ints_input({1, 3, 7, 9})
                      .infer0(),
                  F32, {1, 3, 7, 9});
  EXPECT_INFERRED(TestNode("Resize", 18)
                      .input(F32, {1, 3, 10, 20})
                      .omitted()
                      .omitted()
                      .ints_input({5, 5})
                      .attr_ints("axes", {2, 3})
                      .attr("keep_aspect_ratio_policy", "not_larger")
                      .infer0(),
                  F32, {1, 3, 3, 5});
  EXPECT_INFERRED(
      TestNode("Resize", 10).input(F32, {1, 1, 4, 4}).floats_input({1, 1, 0.5f, 0.5f}).infer0(),
      F32, {1, 1, 2, 2});
  EXPECT_INFERRED(
      TestNode("Upsample", 9).input(F32, {1, 1, 4, 4}).floats_input({1, 1, 2, 2}).infer0(), F32,
      {1, 1, 8, 8});
}

TEST(RecurrentInference, LstmShapes) {
  auto out = TestNode("LSTM")
                 .input(F32, {7, 2, 10})
                 .input(F32, {2, 80, 10})
                 .input(F32, {2, 80, 20})
                 .attr("hidden_size", int64_t{20})
                 .attr("direction", "bidirectional")
                 .outputs(3)
                 .infer();
  EXPECT_INFERRED(out[0], F32, {7, 2, 2, 20});
  EXPECT_INFERRED(out[1], F32, {2, 2, 20});
  EXPECT_INFERRED(out[2], F32, {2, 2, 20});
  auto gru = TestNode("GRU")
                 .input(F32, {4, 7, 10})
                 .input(F32, {1, 45, 10})
                 .input(F32, {1, 45, 15})
                 .attr("layout", int64_t{1})
                 .outputs(2)
                 .infer();
  EXPECT_INFERRED(gru[0], F32, {4, 7, 1, 15});
  TestNode bad("RNN");
  bad.input(F32, {7, 2, 10}).input(F32, {1, 20, 12}).input(F32, {1, 20, 20});
  expect_invalid(bad, "input sizes of X and W disagree: 10 vs 12");
}

// A nested graph that only declares its outputs (all inference needs of a body).
struct TestGraph {
  std::deque<Dims> dims;
  std::deque<loom_value_info_t> values;
  std::vector<const loom_value_info_t*> value_ptrs;
  std::vector<int32_t> outputs;
  loom_graph_t graph{};
  TestGraph(loom_dtype_t dtype, Dims d) : TestGraph({{dtype, std::move(d)}}) {}
  explicit TestGraph(std::vector<std::pair<loom_dtype_t, Dims>> declared) {
    for (auto& [dtype, d] : declared) {
      dims.push_back(std::move(d));
      values.push_back(TestNode::value_info(dtype, dims.back(), true));
      value_ptrs.push_back(&values.back());
      outputs.push_back(static_cast<int32_t>(outputs.size()));
    }
    graph.struct_size = sizeof graph;
    graph.name = "body";
    graph.num_values = value_ptrs.size();
    graph.values = value_ptrs.data();
    graph.num_outputs = outputs.size();
    graph.outputs = outputs.data();
  }
};

TEST(ControlFlowInference, IfJoinsBranchShapes) {
  TestGraph then_graph(F32, {2, 3}), else_graph(F32, {2, 5});
  EXPECT_INFERRED(TestNode("If")
                      .input(BOOL, {})
                      .attr_graph("then_branch", &then_graph.graph)
                      .attr_graph("else_branch", &else_graph.graph)
                      .infer0(),
                  F32, {2, U});
  TestGraph int_graph(I64, {2, 3});
  TestNode bad("If");
  bad.input(BOOL, {})
      .attr_graph("then_branch", &then_graph.graph)
      .attr_graph("else_branch", &int_graph.graph);
  expect_invalid(bad, "float32 in then_branch but int64 in else_branch");
}

TEST(ControlFlowInference, LoopAndScanOutputs) {
  // Loop body: (cond, carried [2,3], scan output [4]) -> final carried [2,3], stacked [?,4].
  TestGraph loop_body({{BOOL, {}}, {F32, {2, 3}}, {F32, {4}}});
  auto loop = TestNode("Loop")
                  .input(I64, {})
                  .input(BOOL, {})
                  .input(F32, {2, 3})
                  .attr_graph("body", &loop_body.graph)
                  .outputs(2)
                  .infer();
  EXPECT_INFERRED(loop[0], F32, {2, 3});
  EXPECT_INFERRED(loop[1], F32, {U, 4});
  // Scan over a [5, 8] sequence with one state [8]: state [8], scan output stacked to [5, 2].
  TestGraph scan_body({{F32, {8}}, {F32, {2}}});
  auto scan = TestNode("Scan")
                  .input(F32, {8})
                  .input(F32, {5, 8})
                  .attr("num_scan_inputs", int64_t{1})
                  .attr_graph("body", &scan_body.graph)
                  .outputs(2)
                  .infer();
  EXPECT_INFERRED(scan[0], F32, {8});
  EXPECT_INFERRED(scan[1], F32, {5, 2});
  TestNode missing("Loop");
  missing.input(I64, {}).input(BOOL, {});
  expect_invalid(missing, "attribute body (a graph) is required");
}

TEST(MiscInference, SignalLossSamplingQuantizedConv) {
  EXPECT_INFERRED(
      TestNode("GridSample", 16).input(F32, {2, 3, 8, 8}).input(F32, {2, 5, 6, 2}).infer0(), F32,
      {2, 3, 5, 6});
  EXPECT_INFERRED(TestNode("NegativeLogLikelihoodLoss")
                      .input(F32, {4, 10, 3})
                      .input(I64, {4, 3})
                      .attr("reduction", "none")
                      .infer0(),
                  F32, {4, 3});
  EXPECT_INFERRED(TestNode("SoftmaxCrossEntropyLoss").input(F32, {4, 10}).input(I64, {4}).infer0(),
                  F32, {});
  EXPECT_INFERRED(TestNode("DFT").input(F32, {1, 16, 1}).attr("onesided", int64_t{1}).infer0(), F32,
                  {1, 9, 2});
  EXPECT_INFERRED(TestNode("HannWindow").ints_input({10}, true).infer0(), F32, {10});
  EXPECT_INFERRED(TestNode("QLinearConv")
                      .input(LOOM_DTYPE_UINT8, {1, 3, 8, 8})
                      .input(F32, {})
                      .input(LOOM_DTYPE_UINT8, {})
                      .input(LOOM_DTYPE_INT8, {4, 3, 3, 3})
                      .input(F32, {})
                      .input(LOOM_DTYPE_INT8, {})
                      .input(F32, {})
                      .input(LOOM_DTYPE_UINT8, {})
                      .infer0(),
                  LOOM_DTYPE_UINT8, {1, 4, 6, 6});
  EXPECT_INFERRED(TestNode("ConvInteger")
                      .input(LOOM_DTYPE_UINT8, {1, 1, 5, 5})
                      .input(LOOM_DTYPE_UINT8, {1, 1, 2, 2})
                      .infer0(),
                  LOOM_DTYPE_INT32, {1, 1, 4, 4});
  EXPECT_INFERRED(
      TestNode("DepthToSpace").input(F32, {1, 8, 2, 3}).attr("blocksize", int64_t{2}).infer0(), F32,
      {1, 2, 4, 6});
  TestNode bad("DepthToSpace");
  bad.input(F32, {1, 6, 2, 3}).attr("blocksize", int64_t{2});
  expect_invalid(bad, "not divisible by blocksize^2 = 4");
  EXPECT_INFERRED(TestNode("CenterCropPad", 18)
                      .input(F32, {20, 10, 3})
                      .ints_input({12, 12})
                      .attr_ints("axes", {0, 1})
                      .infer0(),
                  F32, {12, 12, 3});
  EXPECT_INFERRED(TestNode("SequenceLength").unknown_rank_input(F32).infer0(), I64, {});
}

TEST(MlInference, ClassifiersRegressorsEncoders) {
  EXPECT_INFERRED(TestNode("LinearRegressor", 1, "ai.onnx.ml")
                      .input(F32, {U, 4})
                      .attr("targets", int64_t{2})
                      .infer0(),
                  F32, {U, 2});
  auto classifier = TestNode("TreeEnsembleClassifier", 3, "ai.onnx.ml")
                        .input(F32, {7, 4})
                        .attr_ints("classlabels_int64s", {0, 1, 2})
                        .outputs(2)
                        .infer();
  EXPECT_INFERRED(classifier[0], I64, {7});
  EXPECT_INFERRED(classifier[1], F32, {7, 3});
  EXPECT_INFERRED(TestNode("Scaler", 1, "ai.onnx.ml").input(LOOM_DTYPE_INT32, {3, 2}).infer0(), F32,
                  {3, 2});
  EXPECT_INFERRED(TestNode("LabelEncoder", 2, "ai.onnx.ml")
                      .input(LOOM_DTYPE_STRING, {5})
                      .attr_strings("keys_strings", 2)
                      .attr_ints("values_int64s", {1, 2})
                      .infer0(),
                  I64, {5});
  EXPECT_INFERRED(TestNode("StringNormalizer").input(LOOM_DTYPE_STRING, {1, 4}).infer0(),
                  LOOM_DTYPE_STRING, {1, 4});
}

TEST(SchemaLookup, ModelOpsOfResNetMobileNetBertHaveInference) {
  for (const char* op : {"Conv",
                         "Relu",
                         "Clip",
                         "Add",
                         "MaxPool",
                         "GlobalAveragePool",
                         "Flatten",
                         "Gemm",
                         "MatMul",
                         "Reshape",
                         "Transpose",
                         "Softmax",
                         "Div",
                         "Mul",
                         "Sub",
                         "Pow",
                         "Sqrt",
                         "ReduceMean",
                         "Erf",
                         "Where",
                         "Equal",
                         "Expand",
                         "Shape",
                         "Gather",
                         "Unsqueeze",
                         "Concat",
                         "Slice",
                         "Cast",
                         "ConstantOfShape",
                         "LayerNormalization"}) {
    for (int64_t opset : {13, 17, 18}) {
      const loom::core::BuiltinSchema* best = nullptr;
      for (const auto& s : loom::core::builtin_schemas())
        if (std::string(s.domain).empty() && std::string(s.op_type) == op &&
            s.since_version <= opset && (!best || s.since_version > best->since_version))
          best = &s;
      if (std::string(op) == "LayerNormalization" && opset < 17) continue;
      ASSERT_NE(best, nullptr) << op << " at opset " << opset;
      EXPECT_NE(best->infer, nullptr) << op << " at opset " << opset;
    }
  }
}

// ---- conformance with the ONNX backend node tests ---------------------------------------

template <typename T>
void append_as(std::vector<char>& bytes, double x) {
  T v = static_cast<T>(x);
  const char* p = reinterpret_cast<const char*>(&v);
  bytes.insert(bytes.end(), p, p + sizeof v);
}

// Encodes `values` in `dtype`; false for types the dump does not carry values of.
bool encode(loom_dtype_t dtype, const std::vector<double>& values, std::vector<char>& bytes) {
  for (double x : values) {
    switch (dtype) {
      case LOOM_DTYPE_FLOAT32:
        append_as<float>(bytes, x);
        break;
      case LOOM_DTYPE_FLOAT64:
        append_as<double>(bytes, x);
        break;
      case LOOM_DTYPE_INT64:
        append_as<int64_t>(bytes, x);
        break;
      case LOOM_DTYPE_INT32:
        append_as<int32_t>(bytes, x);
        break;
      case LOOM_DTYPE_INT16:
        append_as<int16_t>(bytes, x);
        break;
      case LOOM_DTYPE_INT8:
        append_as<int8_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT8:
        append_as<uint8_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT16:
        append_as<uint16_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT32:
        append_as<uint32_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT64:
        append_as<uint64_t>(bytes, x);
        break;
      default:
        return false;
    }
  }
  return true;
}

Dims read_dims(std::istream& in) {
  size_t rank = 0;
  in >> rank;
  Dims dims(rank);
  for (int64_t& d : dims) in >> d;
  return dims;
}

// Runs the inference of every single-node ONNX backend test (as dumped by
// core/src/schemas/dump_onnx_node_tests.py from Debian's libonnx-testdata) and compares it
// with the shapes of the expected outputs: no result may contradict them and no valid node may
// be rejected; extents that depend on data (NonZero, Unique...) may stay unknown.
TEST(ShapeInferenceConformance, MatchesOnnxNodeTests) {
  const char* data = "/usr/share/libonnx-testdata/data/node";
  std::filesystem::path tool =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "core" / "src" /
      "schemas" / "dump_onnx_node_tests.py";
  if (!std::filesystem::exists(data) || !std::filesystem::exists(tool) ||
      !std::filesystem::exists("/usr/bin/python3"))
    GTEST_SKIP() << "needs libonnx-testdata, python3-onnx and the source tree";
  std::string command = "/usr/bin/python3 " + tool.string() + " " + data + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string text;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  if (pclose(pipe) != 0 || text.empty())
    GTEST_SKIP() << "python3-onnx could not read the test data";

  std::istringstream lines(text);
  std::string line, name;
  std::optional<TestNode> node;
  std::vector<std::optional<std::pair<loom_dtype_t, Dims>>> expected;
  int cases = 0, exact = 0, inferable = 0;
  std::vector<std::string> problems;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "TEST") {
      in >> name;
      expected.clear();
    } else if (key == "OP") {
      std::string op, domain;
      int64_t opset;
      in >> op >> domain >> opset;
      node.emplace(op, opset, domain == "-" ? "" : domain);
    } else if (key == "IN") {
      std::string type;
      in >> type;
      if (type == "-") {
        node->omitted();
        continue;
      }
      auto dtype = static_cast<loom_dtype_t>(std::stoi(type));
      Dims dims = read_dims(in);
      std::string marker;
      std::vector<double> values;
      if (in >> marker && marker == "CONST") {
        size_t count;
        in >> count;
        values.resize(count);
        for (double& v : values) in >> v;
        std::vector<char> bytes;
        if (encode(dtype, values, bytes)) {
          node->const_input(dtype, bytes.data(), bytes.size(), dims);
          continue;
        }
      }
      node->input(dtype, dims);
    } else if (key == "ATTR") {
      std::string attr, type;
      in >> attr >> type;
      if (type == "INT") {
        int64_t i;
        in >> i;
        node->attr(attr.c_str(), i);
      } else if (type == "FLOAT") {
        float f;
        in >> f;
        node->attr(attr.c_str(), f);
      } else if (type == "STRING") {
        std::string rest;
        std::getline(in, rest);
        node->attr(attr.c_str(), rest.empty() ? "" : rest.substr(1).c_str());
      } else if (type == "INTS") {
        node->attr_ints(attr.c_str(), read_dims(in));
      } else if (type == "FLOATS") {
        size_t n;
        in >> n;
        std::vector<float> floats(n);
        for (float& f : floats) in >> f;
        node->attr_floats(attr.c_str(), std::move(floats));
      } else if (type == "STRINGS") {
        size_t n;
        in >> n;
        node->attr_strings(attr.c_str(), n);
      } else if (type == "TENSOR") {
        int dtype;
        in >> dtype;
        node->attr_tensor(attr.c_str(), static_cast<loom_dtype_t>(dtype), read_dims(in));
      }
    } else if (key == "OUT") {
      std::string type;
      in >> type;
      if (type == "-")
        expected.emplace_back();
      else
        expected.emplace_back(std::pair{static_cast<loom_dtype_t>(std::stoi(type)), read_dims(in)});
    } else if (key == "END") {
      ++cases;
      node->outputs(expected.size());
      std::vector<loom_inferred_t> got;
      try {
        got = node->infer();
      } catch (const loom::sdk::Error& e) {
        problems.push_back(name + ": rejected: " + e.what());
        continue;
      } catch (const std::runtime_error&) {
        continue;  // no schema or no inference for this op (training and text ops)
      }
      ++inferable;
      bool complete = true;
      for (size_t i = 0; i < expected.size(); ++i) {
        if (!expected[i]) continue;
        const auto& [dtype, dims] = *expected[i];
        const loom_inferred_t& o = got[i];
        if (o.dtype != LOOM_DTYPE_UNDEFINED && o.dtype != dtype)
          problems.push_back(name + ": output " + std::to_string(i) + " dtype " +
                             std::to_string(o.dtype) + ", expected " + std::to_string(dtype));
        complete = complete && o.dtype != LOOM_DTYPE_UNDEFINED && o.rank >= 0;
        if (o.rank < 0) continue;
        Dims inferred = dims_of(o);
        bool agrees = inferred.size() == dims.size();
        for (size_t k = 0; agrees && k < dims.size(); ++k) {
          agrees = inferred[k] == U || inferred[k] == dims[k];
          complete = complete && inferred[k] != U;
        }
        if (!agrees)
          problems.push_back(name + ": output " + std::to_string(i) + " inferred " +
                             testing::PrintToString(inferred) + ", expected " +
                             testing::PrintToString(dims));
      }
      if (complete) ++exact;
    }
  }
  for (const std::string& p : problems) ADD_FAILURE() << p;
  EXPECT_GT(cases, 500) << "the dump lost most of the test data";
  // Everything but data-dependent extents is known statically.
  EXPECT_GE(exact * 100, inferable * 95) << exact << " of " << inferable << " cases fully inferred";
}

}  // namespace
