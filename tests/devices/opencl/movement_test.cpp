// Data movement against the cpu device, for several element types: the reshaping family,
// Transpose, Expand, Concat, Split, Slice (negative steps, clamped ends), Gather (int32/int64
// indices, negative indices, inner axes), Pad and Constant.
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

TEST(OpenclMovement, ReshapeFamily) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4});
  m.initializer("shape", int64_tensor({2}, {4, -1}));
  m.initializer("axes", int64_tensor({2}, {0, 3}));
  m.initializer("sq", int64_tensor({1}, {0}));
  m.node("Reshape", {"x", "shape"}, {"r"});
  m.node("Flatten", {"x"}, {"f"}).i("axis", 2);
  m.node("Unsqueeze", {"x", "axes"}, {"u"});
  m.node("Squeeze", {"u", "sq"}, {"s"});
  m.node("Identity", {"s"}, {"i"});
  for (const char* out : {"r", "f", "u", "i"}) m.output(out);
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4}, 1)}}, on_opencl());
}

TEST(OpenclMovement, TransposeOfSeveralElementTypes) {
  LOOM_REQUIRE_OPENCL();
  for (loom_dtype_t dtype :
       {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT64, LOOM_DTYPE_UINT8, LOOM_DTYPE_FLOAT16}) {
    for (std::vector<int64_t> perm : {std::vector<int64_t>{0, 2, 1, 3},
                                      std::vector<int64_t>{3, 1, 0, 2}, std::vector<int64_t>{}}) {
      ModelBuilder m;
      m.input("x", dtype, {2, 3, 5, 7});
      NodeRef node = m.node("Transpose", {"x"}, {"y"});
      if (!perm.empty()) node.ints("perm", perm);
      m.output("y");
      SCOPED_TRACE("dtype " + std::to_string(dtype));
      expect_matches_cpu(m, {{"x", random_tensor(dtype, {2, 3, 5, 7}, 2, 0, 100)}}, on_opencl());
    }
  }
}

TEST(OpenclMovement, ExpandConcatSplit) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {2, 1, 5});
  m.input("b", LOOM_DTYPE_FLOAT32, {2, 3, 5});
  m.initializer("shape", int64_tensor({3}, {2, 4, 5}));
  m.initializer("split", int64_tensor({3}, {1, 4, 3}));
  m.node("Expand", {"a", "shape"}, {"e"});
  m.node("Concat", {"a", "e", "b"}, {"c"}).i("axis", 1);
  m.node("Split", {"c", "split"}, {"s0", "s1", "s2"}).i("axis", -2);
  m.node("Split", {"b"}, {"t0", "t1", "t2"}).i("axis", 1);
  for (const char* out : {"e", "c", "s0", "s1", "s2", "t0", "t2"}) m.output(out);
  expect_matches_cpu(m,
                     {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 1, 5}, 1)},
                      {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5}, 2)}},
                     on_opencl());
}

TEST(OpenclMovement, SliceStartsEndsAxesSteps) {
  LOOM_REQUIRE_OPENCL();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  for (const Case& c : {Case{{1, 0}, {3, 100}, {0, 2}, {1, 2}}, Case{{-1}, {-100}, {1}, {-1}},
                        Case{{5, -3}, {0, 100}, {2, 1}, {-2, 1}}, Case{{0}, {2}, {-1}, {1}}}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {4, 6, 7});
    auto n = static_cast<int64_t>(c.starts.size());
    m.initializer("starts", int64_tensor({n}, c.starts));
    m.initializer("ends", int64_tensor({n}, c.ends));
    m.initializer("axes", int64_tensor({n}, c.axes));
    m.initializer("steps", int64_tensor({n}, c.steps));
    m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    m.output("y");
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {4, 6, 7}, 3)}}, on_opencl());
  }
}

TEST(OpenclMovement, GatherEmbeddingsAndInnerAxes) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("table", LOOM_DTYPE_FLOAT32, {50, 8});
  m.input("ids", LOOM_DTYPE_INT64, {2, 7});
  m.initializer("cols", int64_tensor({3}, {-1, 0, 2}));
  m.node("Gather", {"table", "ids"}, {"emb"});
  m.node("Gather", {"emb", "cols"}, {"picked"}).i("axis", 2);
  m.output("emb");
  m.output("picked");
  expect_matches_cpu(
      m,
      {{"table", random_tensor(LOOM_DTYPE_FLOAT32, {50, 8}, 1)},
       {"ids", int64_tensor({2, 7}, {0, 49, 3, -1, 7, 7, 12, 1, 2, 3, -50, 5, 6, 48})}},
      on_opencl());

  ModelBuilder m32;
  m32.input("x", LOOM_DTYPE_INT64, {4, 5});
  m32.input("i", LOOM_DTYPE_INT32, {3});
  m32.node("Gather", {"x", "i"}, {"y"}).i("axis", 1);
  m32.output("y");
  Tensor idx = random_tensor(LOOM_DTYPE_INT32, {3}, 4, 0, 4);
  expect_matches_cpu(m32, {{"x", random_tensor(LOOM_DTYPE_INT64, {4, 5}, 5, -9, 9)}, {"i", idx}},
                     on_opencl());
}

TEST(OpenclMovement, ConstantPad) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4});
  m.initializer("pads", int64_tensor({6}, {0, 1, 2, 1, 0, 3}));
  m.initializer("value", float_tensor({}, {1.5f}));
  m.node("Pad", {"x", "pads", "value"}, {"y"});
  m.node("Pad", {"x", "pads"}, {"z"});
  m.output("y");
  m.output("z");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4}, 1)}}, on_opencl());
}

TEST(OpenclMovement, ConstantNodeFeedsAnOp) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3});
  m.node("Constant", {}, {"c"}).floats("value_floats", {1.0f, 2.0f, 3.0f});
  m.node("Mul", {"x", "c"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 1)}}, on_opencl());
}

}  // namespace
}  // namespace loom::device_testing
