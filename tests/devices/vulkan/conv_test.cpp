// Conv (implicit GEMM and depthwise paths), BatchNormalization (folded and standalone) and the
// fused activations, on many shapes, against the cpu device.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

struct ConvCase {
  int64_t n, c, h, w, k, kh, kw, group;
  std::vector<int64_t> strides, pads, dilations;
  bool bias;
  const char* auto_pad = nullptr;
};

void run_conv(const ConvCase& c, const char* activation = nullptr) {
  ModelBuilder m;
  std::vector<int64_t> xs = {c.n, c.c, c.h, c.w};
  m.input("x", LOOM_DTYPE_FLOAT32, xs);
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {c.k, c.c / c.group, c.kh, c.kw}, 11));
  std::vector<std::string> in = {"x", "w"};
  if (c.bias) {
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 12));
    in.push_back("b");
  }
  NodeRef node = m.node("Conv", in, {activation ? "c" : "y"});
  node.i("group", c.group);
  if (!c.strides.empty()) node.ints("strides", c.strides);
  if (!c.pads.empty()) node.ints("pads", c.pads);
  if (!c.dilations.empty()) node.ints("dilations", c.dilations);
  if (c.auto_pad) node.s("auto_pad", c.auto_pad);
  if (activation) m.node(activation, {"c"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, xs, 13)}}, on_vulkan());
}

TEST(VulkanConv, PointwiseAndThreeByThreeShapes) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const ConvCase cases[] = {
      {1, 16, 7, 7, 24, 1, 1, 1, {}, {}, {}, true},                 // 1x1
      {2, 3, 11, 13, 5, 3, 3, 1, {}, {1, 1, 1, 1}, {}, true},       // odd sizes, batch 2
      {1, 8, 10, 9, 33, 3, 3, 1, {2, 2}, {1, 1, 1, 1}, {}, false},  // stride 2, M > tile
      {1, 70, 5, 5, 3, 3, 3, 1, {}, {0, 1, 2, 0}, {}, true},        // asymmetric pads, K > tile
      {1, 4, 12, 12, 6, 3, 3, 1, {}, {2, 2, 2, 2}, {2, 2}, true},   // dilation
      {1, 3, 15, 15, 8, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {}, true},   // ResNet stem
      {1, 5, 8, 9, 4, 2, 3, 1, {1, 2}, {}, {}, true, "SAME_UPPER"},
      {1, 5, 8, 9, 4, 2, 3, 1, {}, {}, {}, false, "SAME_LOWER"},
      {1, 5, 8, 9, 4, 3, 3, 1, {}, {}, {}, true, "VALID"},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    run_conv(cases[i]);
  }
}

TEST(VulkanConv, GroupedAndDepthwise) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const ConvCase cases[] = {
      {1, 8, 9, 9, 8, 3, 3, 8, {}, {1, 1, 1, 1}, {}, true},        // depthwise
      {2, 6, 10, 7, 12, 3, 3, 6, {2, 2}, {1, 1, 1, 1}, {}, true},  // depthwise multiplier 2
      {1, 8, 9, 9, 12, 3, 3, 4, {}, {1, 1, 1, 1}, {}, false},      // grouped
      {1, 6, 6, 6, 6, 1, 1, 3, {}, {}, {}, true},                  // grouped 1x1
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    run_conv(cases[i]);
  }
}

TEST(VulkanConv, FusedActivations) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ConvCase c{1, 6, 8, 8, 10, 3, 3, 1, {}, {1, 1, 1, 1}, {}, true};
  ConvCase dw{1, 6, 8, 8, 6, 3, 3, 6, {}, {1, 1, 1, 1}, {}, true};
  for (const char* act : {"Relu", "Sigmoid", "LeakyRelu", "HardSwish"}) {
    SCOPED_TRACE(act);
    run_conv(c, act);
    run_conv(dw, act);
  }
}

TEST(VulkanConv, Conv1d) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 4, 17});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {5, 4, 3}, 2));
  m.node("Conv", {"x", "w"}, {"y"}).ints("pads", {1, 2}).ints("strides", {2});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 17}, 3)}}, on_vulkan());
}

ModelBuilder conv_bn(bool relu_after) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {5, 4, 3, 3}, 1));
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 2, 0.5, 1.5));
  m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 3));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 4));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 5, 0.5, 2));
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {relu_after ? "n" : "y"})
      .f("epsilon", 1e-3f);
  if (relu_after) m.node("Relu", {"n"}, {"y"});
  m.output("y");
  return m;
}

TEST(VulkanConv, BatchNormalizationFoldsIntoConv) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (bool relu : {false, true})
    expect_matches_cpu(conv_bn(relu), {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4, 6, 6}, 9)}},
                       on_vulkan());
}

TEST(VulkanConv, StandaloneBatchNormalization) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 5, 4});
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 2, 0.5, 1.5));
  m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 3));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 4));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 5, 0.5, 2));
  m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 4}, 9)}}, on_vulkan());
}

}  // namespace
}  // namespace loom::device_testing
