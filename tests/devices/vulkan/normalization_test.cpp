// Softmax / LogSoftmax (both opset semantics) and LayerNormalization.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(VulkanNormalization, SoftmaxOverEveryAxis) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const std::vector<int64_t> shape = {2, 3, 17, 5};
  for (int64_t opset : {11, 13}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      for (int64_t axis : {-1, 0, 1, 2}) {
        ModelBuilder m(opset);
        m.input("x", LOOM_DTYPE_FLOAT32, shape);
        m.node(op, {"x"}, {"y"}).i("axis", axis);
        m.output("y");
        SCOPED_TRACE(std::string(op) + " opset " + std::to_string(opset) + " axis " +
                     std::to_string(axis));
        expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 3, -10, 10)}},
                           on_vulkan());
      }
    }
  }
}

TEST(VulkanNormalization, SoftmaxLongRowsAndAttentionShape) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 12, 128, 128}, {3, 5000}, {4, 1}}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.node("Softmax", {"x"}, {"y"});
    m.output("y");
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 4, -20, 20)}},
                       on_vulkan());
  }
}

TEST(VulkanNormalization, LayerNormalizationAxesAndBias) {
  LOOM_SKIP_WITHOUT_VULKAN();
  struct Case {
    std::vector<int64_t> x;
    int64_t axis;
    bool bias;
  };
  const Case cases[] = {{{1, 128, 768}, -1, true},
                        {{2, 3, 7}, -1, false},
                        {{2, 3, 4, 5}, 2, true},
                        {{5, 1000}, 1, true}};
  for (const Case& c : cases) {
    std::vector<int64_t> norm(c.x.begin() + (c.axis < 0 ? c.x.size() + c.axis : c.axis), c.x.end());
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, c.x);
    m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, norm, 2, 0.5, 1.5));
    std::vector<std::string> in = {"x", "s"};
    if (c.bias) {
      m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, norm, 3));
      in.push_back("b");
    }
    m.node("LayerNormalization", in, {"y"}).i("axis", c.axis).f("epsilon", 1e-5f);
    m.output("y");
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.x, 1, -4, 4)}}, on_vulkan());
  }
}

}  // namespace
}  // namespace loom::device_testing
