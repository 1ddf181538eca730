// Data movement: reshapes, Transpose, Concat, Split, Slice, Expand, Gather, Constant, for
// 32- and 64-bit element types.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(VulkanMovement, TransposePermutations) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const std::vector<int64_t> shape = {2, 3, 4, 5};
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 2, 3}, {0, 1, 3, 2}}) {
    for (loom_dtype_t t : {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT64}) {
      ModelBuilder m;
      m.input("x", t, shape);
      m.node("Transpose", {"x"}, {"y"}).ints("perm", perm);
      m.output("y");
      expect_matches_cpu(m, {{"x", random_tensor(t, shape, 1, -100, 100)}}, on_vulkan());
    }
  }
}

TEST(VulkanMovement, ReshapeFlattenSqueezeUnsqueeze) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 1, 6, 4});
  m.initializer("shape", int64_tensor({3}, {4, -1, 3}));
  m.initializer("axes0", int64_tensor({1}, {1}));
  m.initializer("axes2", int64_tensor({1}, {0}));
  m.node("Reshape", {"x", "shape"}, {"a"});
  m.node("Flatten", {"a"}, {"b"}).i("axis", 2);
  m.node("Unsqueeze", {"b", "axes2"}, {"c"});
  m.node("Squeeze", {"c", "axes2"}, {"d"});
  m.node("Relu", {"d"}, {"y"});
  m.node("Squeeze", {"x", "axes0"}, {"z"});
  m.output("y");
  m.output("z");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 1, 6, 4}, 1)}}, on_vulkan());
}

TEST(VulkanMovement, ConcatAndSplitOnEveryAxis) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (int64_t axis : {0, 1, 2, -1}) {
    // Three [2, 3, 4] parts concatenated: the extent along the axis triples.
    int64_t extent = 3 * std::vector<int64_t>{2, 3, 4}[static_cast<size_t>(axis < 0 ? 2 : axis)];
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 4});
    m.input("b", LOOM_DTYPE_FLOAT32, {2, 3, 4});
    m.initializer("split", int64_tensor({3}, {1, extent - 3, 2}));
    m.node("Concat", {"a", "b", "a"}, {"c"}).i("axis", axis);
    m.node("Split", {"c", "split"}, {"p", "q", "r"}).i("axis", axis);
    m.output("c");
    m.output("p");
    m.output("q");
    m.output("r");
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_matches_cpu(m,
                       {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4}, 1)},
                        {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4}, 2)}},
                       on_vulkan());
  }
}

TEST(VulkanMovement, SliceWithStepsAndNegativeIndices) {
  LOOM_SKIP_WITHOUT_VULKAN();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const Case cases[] = {{{1, 0}, {3, 5}, {0, 2}, {1, 2}},
                        {{-1}, {-100}, {1}, {-1}},
                        {{0, 1, 1}, {100, -1, 4}, {0, 1, 2}, {2, 1, 3}},
                        {{4}, {0}, {-1}, {-2}}};
  for (const Case& c : cases) {
    for (loom_dtype_t t : {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT64}) {
      ModelBuilder m;
      auto n = static_cast<int64_t>(c.starts.size());
      m.input("x", t, {4, 6, 7});
      m.initializer("s", int64_tensor({n}, c.starts));
      m.initializer("e", int64_tensor({n}, c.ends));
      m.initializer("a", int64_tensor({n}, c.axes));
      m.initializer("st", int64_tensor({n}, c.steps));
      m.node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
      m.output("y");
      expect_matches_cpu(m, {{"x", random_tensor(t, {4, 6, 7}, 1, -50, 50)}}, on_vulkan());
    }
  }
}

TEST(VulkanMovement, ExpandBroadcasts) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 1, 5});
  m.initializer("shape", int64_tensor({4}, {2, 3, 4, 5}));
  m.node("Expand", {"x", "shape"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 5}, 1)}}, on_vulkan());
}

TEST(VulkanMovement, GatherEmbeddingsAndAxes) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (int64_t axis : {0, 1, -1}) {
    for (loom_dtype_t idx : {LOOM_DTYPE_INT64, LOOM_DTYPE_INT32}) {
      ModelBuilder m;
      m.input("i", idx, {2, 3});
      m.initializer("table", random_tensor(LOOM_DTYPE_FLOAT32, {5, 6, 7}, 1));
      m.node("Gather", {"table", "i"}, {"y"}).i("axis", axis);
      m.output("y");
      Tensor indices = int64_tensor({2, 3}, {0, 4, -1, 2, -5, 3});
      if (idx == LOOM_DTYPE_INT32) {
        Tensor t32;
        t32.dtype = LOOM_DTYPE_INT32;
        t32.shape = {2, 3};
        t32.bytes.resize(6 * 4);
        for (int k = 0; k < 6; ++k)
          t32.data<int32_t>()[k] = static_cast<int32_t>(indices.data<int64_t>()[k]);
        indices = t32;
      }
      SCOPED_TRACE("axis " + std::to_string(axis));
      expect_matches_cpu(m, {{"i", indices}}, on_vulkan());
    }
  }
}

TEST(VulkanMovement, ConstantNodesFeedKernels) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3});
  NodeRef c = m.node("Constant", {}, {"k"});
  c.floats("value_floats", {1.5f, -2.0f, 0.25f});
  m.node("Mul", {"x", "k"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)}}, on_vulkan());
}

}  // namespace
}  // namespace loom::device_testing
