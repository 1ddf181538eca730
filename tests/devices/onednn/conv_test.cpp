// Conv and ConvTranspose on the onednn device against the cpu reference: 1D/2D/3D, groups,
// depthwise, dilations, asymmetric and automatic pads, fused activations, residual sums and
// folded BatchNormalization.
#include <gtest/gtest.h>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

struct ConvCase {
  std::vector<int64_t> x = {}, w = {};
  std::vector<int64_t> strides = {}, pads = {}, dilations = {};
  int64_t group = 1;
  bool bias = true;
  std::string auto_pad = "NOTSET";
};

void check_conv(const ConvCase& c, const std::string& device_options = "winograd=off") {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, c.x);
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, c.w, 2));
  std::vector<std::string> inputs{"x", "w"};
  if (c.bias) {
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {c.w[0]}, 3));
    inputs.push_back("b");
  }
  NodeRef n = m.node("Conv", inputs, {"y"});
  n.i("group", c.group);
  if (!c.strides.empty()) n.ints("strides", c.strides);
  if (!c.pads.empty()) n.ints("pads", c.pads);
  if (!c.dilations.empty()) n.ints("dilations", c.dilations);
  if (c.auto_pad != "NOTSET") n.s("auto_pad", c.auto_pad);
  m.output("y");
  check_unary_model(m, c.x, 1, device_options);
}

TEST(OnednnConv, Plain2DWithPadsAndBias) {
  check_conv({.x = {1, 8, 9, 9}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}});
}
TEST(OnednnConv, OddSizesStridesNoBias) {
  check_conv({.x = {2, 5, 13, 11},
              .w = {7, 5, 3, 3},
              .strides = {2, 2},
              .pads = {1, 1, 1, 1},
              .bias = false});
}
TEST(OnednnConv, AsymmetricPads) {
  check_conv({.x = {1, 4, 10, 7}, .w = {6, 4, 3, 2}, .strides = {1, 2}, .pads = {0, 1, 2, 0}});
}
TEST(OnednnConv, Dilated) {
  check_conv({.x = {1, 3, 15, 15}, .w = {4, 3, 3, 3}, .pads = {2, 2, 2, 2}, .dilations = {2, 2}});
}
TEST(OnednnConv, Grouped) {
  check_conv({.x = {1, 12, 8, 8}, .w = {6, 4, 3, 3}, .pads = {1, 1, 1, 1}, .group = 3});
}
TEST(OnednnConv, Depthwise) {
  check_conv({.x = {1, 32, 14, 14},
              .w = {32, 1, 3, 3},
              .strides = {2, 2},
              .pads = {1, 1, 1, 1},
              .group = 32});
}
TEST(OnednnConv, Pointwise) {
  check_conv({.x = {1, 64, 7, 7}, .w = {40, 64, 1, 1}});
}
TEST(OnednnConv, OneDimensional) {
  check_conv({.x = {2, 6, 31}, .w = {5, 6, 4}, .strides = {2}, .pads = {1, 2}});
}
TEST(OnednnConv, ThreeDimensional) {
  check_conv({.x = {1, 3, 6, 7, 5}, .w = {4, 3, 3, 3, 3}, .pads = {1, 1, 1, 1, 1, 1}});
}
TEST(OnednnConv, AutoPadSameUpperAndLower) {
  check_conv({.x = {1, 4, 10, 10}, .w = {4, 4, 4, 4}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"});
  check_conv({.x = {1, 4, 9, 9}, .w = {4, 4, 2, 2}, .strides = {1, 1}, .auto_pad = "SAME_LOWER"});
  check_conv({.x = {1, 4, 9, 9}, .w = {4, 4, 3, 3}, .strides = {2, 2}, .auto_pad = "VALID"});
}
TEST(OnednnConv, WinogradWhereAvailable) {
  // 3x3 stride 1: oneDNN's Winograd (if this CPU has it) sums in another order.
  Tolerance tol{2e-3, 2e-4};
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 64, 28, 28});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {64, 64, 3, 3}, 2, -0.1, 0.1));
  m.node("Conv", {"x", "w"}, {"y"}).ints("pads", {1, 1, 1, 1});
  m.output("y");
  check_unary_model(m, {1, 64, 28, 28}, 1, "winograd=auto", &tol);
}

// Conv -> BatchNormalization -> Add(residual) -> Relu, the ResNet block tail: the BN folds,
// the add becomes a sum post-op into the residual's buffer and the Relu an eltwise post-op.
TEST(OnednnConv, FusedBatchNormResidualAndRelu) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 10, 10});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 3, 3}, 2, -0.2, 0.2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 1, 1}, 3, -0.2, 0.2));
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 4, 0.5, 1.5));
  m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 5));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 6));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 7, 0.5, 2.0));
  m.node("Conv", {"x", "w1"}, {"a"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"a"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"c"});
  m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}).f("epsilon", 1e-3f);
  m.node("Add", {"bn", "r"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 16, 10, 10});
}

// The residual is still read after the add: no in-place sum, a binary post-op instead.
TEST(OnednnConv, ResidualStillLiveAfterTheAdd) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 6, 6});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {8, 8, 3, 3}, 2, -0.3, 0.3));
  m.node("Relu", {"x"}, {"r"});
  m.node("Conv", {"r", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Add", {"c", "r"}, {"s"});
  m.node("Mul", {"s", "r"}, {"y"});
  m.output("y");
  m.output("r");
  check_unary_model(m, {1, 8, 6, 6});
}

TEST(OnednnConv, ClipAndScalarMulPostOps) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 7, 7});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {8, 1, 3, 3}, 2));
  m.initializer("lo", float_tensor({}, {0.f}));
  m.initializer("hi", float_tensor({}, {0.6f}));
  m.initializer("k", float_tensor({}, {1.5f}));
  m.node("Conv", {"x", "w"}, {"c"}).i("group", 8).ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"c", "lo", "hi"}, {"cl"});
  m.node("Mul", {"cl", "k"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 8, 7, 7});
}

TEST(OnednnConvTranspose, StridedGroupedWithOutputPadding) {
  for (int64_t group : {1, 2}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 5, 6});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {4, 3, 3, 3}, 2));
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3 * group}, 3));
    m.node("ConvTranspose", {"x", "w", "b"}, {"y"})
        .i("group", group)
        .ints("strides", {2, 2})
        .ints("pads", {1, 0, 1, 1})
        .ints("output_padding", {1, 1});
    m.output("y");
    check_unary_model(m, {1, 4, 5, 6});
  }
}

TEST(OnednnConvTranspose, OneDimensionalDilated) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 9});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {3, 5, 3}, 2));
  m.node("ConvTranspose", {"x", "w"}, {"y"}).ints("dilations", {2});
  m.output("y");
  check_unary_model(m, {2, 3, 9});
}

}  // namespace
}  // namespace loom::onednn_testing
