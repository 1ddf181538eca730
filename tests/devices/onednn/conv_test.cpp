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
// The device's own 3x3 depthwise kernel (depthwise3x3.hpp) takes a depthwise Conv whose layouts
// are nChw16c (channels padded to a multiple of 16 when the clamp keeps the padding 0) and
// after which comes at most one clamp; other activations, binary post-ops, fewer than 16
// channels and larger pads keep oneDNN's jit_dw.
// Both settings of the `depthwise` option must match the cpu device.
struct DepthwiseCase {
  int64_t batch = 1, channels = 0, size = 0, stride = 1, pad = 1;
  // Relu, Clip (0..6), ClipAboveZero (0.5..6), LeakyRelu, Mul (by a per-channel constant: a binary
  // post-op), or Add (the convolution reads Relu(x) and its output is added to that: a separate
  // Add, since the convolution reads the buffer a sum post-op would write).
  std::string activation = "";
  bool device_kernel = false;  // expected to run on the device's kernel (with AVX-512)
};

void check_depthwise_kernel(const DepthwiseCase& c) {
  SCOPED_TRACE(std::to_string(c.channels) + " channels " + std::to_string(c.size) + " stride " +
               std::to_string(c.stride) + " pad " + std::to_string(c.pad) + " " + c.activation);
  ModelBuilder m;
  std::vector<int64_t> shape{c.batch, c.channels, c.size, c.size + 3};
  m.input("x", LOOM_DTYPE_FLOAT32, shape);
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {c.channels, 1, 3, 3}, 2));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {c.channels}, 3));
  std::string out = c.activation.empty() ? "y" : "d";
  std::string in = "x";
  if (c.activation == "Add") {
    m.node("Relu", {"x"}, {"r"});
    in = "r";
  }
  m.node("Conv", {in, "w", "b"}, {out})
      .i("group", c.channels)
      .ints("strides", {c.stride, c.stride})
      .ints("pads", {c.pad, c.pad, c.pad, c.pad});
  if (c.activation == "Clip" || c.activation == "ClipAboveZero") {
    m.initializer("lo", float_tensor({}, {c.activation == "Clip" ? 0.f : 0.5f}));
    m.initializer("hi", float_tensor({}, {6.f}));
    m.node("Clip", {"d", "lo", "hi"}, {"y"});
  } else if (c.activation == "LeakyRelu") {
    m.node("LeakyRelu", {"d"}, {"y"}).f("alpha", 0.1f);
  } else if (c.activation == "Add") {
    m.node("Add", {"d", "r"}, {"y"});
  } else if (c.activation == "Mul") {
    m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {1, c.channels, 1, 1}, 4));
    m.node("Mul", {"d", "s"}, {"y"});
  } else if (!c.activation.empty()) {
    m.node(c.activation, {"d"}, {"y"});
  }
  m.output("y");
  for (const char* options : {"depthwise=loom", "depthwise=onednn"}) {
    SCOPED_TRACE(options);
    check_unary_model(m, shape, 1, options);
    bool used = false;
    for (const std::string& step :
         compiled_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}}, options))
      used = used || step.find("loom depthwise3x3") != std::string::npos;
    bool avx512 = false;
#if defined(__x86_64__)
    avx512 = __builtin_cpu_supports("avx512f");
#endif
    EXPECT_EQ(used, c.device_kernel && avx512 && std::string(options) == "depthwise=loom");
  }
}

TEST(OnednnConv, DepthwiseKernelOfTheDevice) {
  check_depthwise_kernel({.channels = 32, .size = 28, .activation = "Clip", .device_kernel = true});
  check_depthwise_kernel({.batch = 2,
                          .channels = 48,
                          .size = 9,
                          .stride = 2,
                          .activation = "Relu",
                          .device_kernel = true});
  check_depthwise_kernel({.channels = 64, .size = 5, .device_kernel = true});
  check_depthwise_kernel({.channels = 16, .size = 12, .pad = 0, .device_kernel = true});
  check_depthwise_kernel({.channels = 32, .size = 12, .stride = 2, .activation = "LeakyRelu"});
  // Channels padded to a block: the padding must stay 0, so not under a clamp above 0.
  check_depthwise_kernel({.channels = 24, .size = 10, .activation = "Clip", .device_kernel = true});
  check_depthwise_kernel(
      {.channels = 72, .size = 9, .stride = 2, .activation = "Relu", .device_kernel = true});
  check_depthwise_kernel({.channels = 24, .size = 10, .activation = "ClipAboveZero"});
  check_depthwise_kernel(
      {.channels = 32, .size = 10, .activation = "ClipAboveZero", .device_kernel = true});
  check_depthwise_kernel({.channels = 8, .size = 10, .activation = "Relu"});
  check_depthwise_kernel({.channels = 16, .size = 10, .pad = 2});
  check_depthwise_kernel({.channels = 32, .size = 8, .activation = "Mul"});
  check_depthwise_kernel({.channels = 32, .size = 8, .activation = "Add", .device_kernel = true});
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

// MobileNet's stem and tail around one depthwise layer: a 3x3 stride-2 convolution of the
// 3-channel image (read straight from nchw in the blocked layout), Clip, depthwise 3x3, Clip, a
// 1x1 projection to channels that are no multiple of 16, then GlobalAveragePool, Flatten and
// Gemm. Each conv_layout must match the cpu device.
struct StemCase {
  int64_t batch = 1, width = 0, out = 0, size = 0, classes = 0;
};

void check_stem_and_tail(const StemCase& c) {
  ModelBuilder m;
  std::vector<int64_t> shape{c.batch, 3, c.size, c.size};
  m.input("x", LOOM_DTYPE_FLOAT32, shape);
  m.initializer("w_stem", random_tensor(LOOM_DTYPE_FLOAT32, {c.width, 3, 3, 3}, 2, -0.3, 0.3));
  m.initializer("b_stem", random_tensor(LOOM_DTYPE_FLOAT32, {c.width}, 3));
  m.initializer("w_dw", random_tensor(LOOM_DTYPE_FLOAT32, {c.width, 1, 3, 3}, 4, -0.5, 0.5));
  m.initializer("b_dw", random_tensor(LOOM_DTYPE_FLOAT32, {c.width}, 5));
  m.initializer("w_project",
                random_tensor(LOOM_DTYPE_FLOAT32, {c.out, c.width, 1, 1}, 6, -0.2, 0.2));
  m.initializer("fc", random_tensor(LOOM_DTYPE_FLOAT32, {c.classes, c.out}, 7, -0.2, 0.2));
  m.initializer("fcb", random_tensor(LOOM_DTYPE_FLOAT32, {c.classes}, 8));
  m.initializer("lo", float_tensor({}, {0.f}));
  m.initializer("hi", float_tensor({}, {6.f}));
  m.node("Conv", {"x", "w_stem", "b_stem"}, {"s"})
      .ints("strides", {2, 2})
      .ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"s", "lo", "hi"}, {"s6"});
  m.node("Conv", {"s6", "w_dw", "b_dw"}, {"d"}).i("group", c.width).ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"d", "lo", "hi"}, {"d6"});
  m.node("Conv", {"d6", "w_project"}, {"p"});
  m.node("GlobalAveragePool", {"p"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  m.node("Gemm", {"f", "fc", "fcb"}, {"y"}).i("transB", 1);
  m.output("y");
  for (const char* options : {"conv_layout=auto", "conv_layout=any", "conv_layout=blocked",
                              "threads=1;conv_layout=blocked"}) {
    SCOPED_TRACE(options);
    check_unary_model(m, shape, 1, options);
  }
}

TEST(OnednnConv, MobileNetStemAndTail) {
  check_stem_and_tail({.width = 32, .out = 24, .size = 32, .classes = 10});
}
TEST(OnednnConv, MobileNetStemAndTailOddSizesAndBatch) {
  check_stem_and_tail({.batch = 2, .width = 20, .out = 13, .size = 17, .classes = 7});
}

// A non-depthwise network asked for the blocked layout (ResNet-like 3x3 + 1x1 with a
// residual, channels 16 and 24): the option holds for any 2D convolution.
TEST(OnednnConv, BlockedLayoutWithoutDepthwise) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 12, 12});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {24, 16, 3, 3}, 2, -0.2, 0.2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {16, 24, 1, 1}, 3, -0.2, 0.2));
  m.node("Conv", {"x", "w1"}, {"a"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"a"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"c"});
  m.node("Add", {"c", "x"}, {"y"});
  m.output("y");
  for (const char* options : {"conv_layout=blocked", "conv_layout=any"}) {
    SCOPED_TRACE(options);
    check_unary_model(m, {1, 16, 12, 12}, 1, options);
  }
}

// MobileNetV2's inverted residual block: 1x1 expand -> Clip(0, 6) -> 3x3 depthwise (stride 1
// or 2, BatchNormalization after it, or a bias) -> Clip -> 1x1 project (+ the block input when
// the shapes allow). With dw_fusion=auto the expand convolution takes the depthwise one as a
// post-op where oneDNN 2.6 has a JIT kernel for the pair: it picks one by shape and thread
// count (on AVX-512, e.g. 8->48 and 16->96 at 112x112 stride 2 with 2 threads; `verbose=1`
// shows it), in nChw16c only (24->144 runs in nChw8c and stays separate); the other shapes
// check the pair stays separate.
// Every setting must match the cpu device.
struct BlockCase {
  int64_t batch = 1, in = 0, expanded = 0, out = 0, size = 0, stride = 1;
  bool batch_norm = true;  // else a bias on the depthwise convolution
  bool clip_after_depthwise = true;
};

void check_inverted_residual(const BlockCase& c) {
  ModelBuilder m;
  std::vector<int64_t> shape{c.batch, c.in, c.size, c.size};
  m.input("x", LOOM_DTYPE_FLOAT32, shape);
  m.initializer("w_expand",
                random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded, c.in, 1, 1}, 2, -0.3, 0.3));
  m.initializer("b_expand", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded}, 3));
  m.initializer("w_dw", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded, 1, 3, 3}, 4, -0.5, 0.5));
  m.initializer("w_project",
                random_tensor(LOOM_DTYPE_FLOAT32, {c.out, c.expanded, 1, 1}, 5, -0.2, 0.2));
  m.initializer("lo", float_tensor({}, {0.f}));
  m.initializer("hi", float_tensor({}, {6.f}));
  m.node("Conv", {"x", "w_expand", "b_expand"}, {"e"});
  m.node("Clip", {"e", "lo", "hi"}, {"e6"});
  std::vector<std::string> dw_inputs{"e6", "w_dw"};
  if (!c.batch_norm) {
    m.initializer("b_dw", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded}, 6));
    dw_inputs.push_back("b_dw");
  }
  m.node("Conv", dw_inputs, {c.batch_norm ? "d" : "dn"})
      .i("group", c.expanded)
      .ints("strides", {c.stride, c.stride})
      .ints("pads", {1, 1, 1, 1});
  if (c.batch_norm) {
    m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded}, 7, 0.5, 1.5));
    m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded}, 8));
    m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded}, 9));
    m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {c.expanded}, 10, 0.5, 2.0));
    m.node("BatchNormalization", {"d", "scale", "shift", "mean", "var"}, {"dn"});
  }
  if (c.clip_after_depthwise)
    m.node("Clip", {"dn", "lo", "hi"}, {"d6"});
  else
    m.node("Identity", {"dn"}, {"d6"});
  bool residual = c.stride == 1 && c.in == c.out;
  m.node("Conv", {"d6", "w_project"}, {residual ? "p" : "y"});
  if (residual) m.node("Add", {"p", "x"}, {"y"});
  m.output("y");
  // conv_layout=auto takes nChw16c here (the block has a depthwise convolution); "any" is
  // oneDNN's own choice (nhwc brgconv kernels), which fuses no depthwise pair.
  for (const char* options : {"dw_fusion=auto", "dw_fusion=off", "threads=1;dw_fusion=auto",
                              "conv_layout=any", "conv_layout=blocked;dw_fusion=off"}) {
    SCOPED_TRACE(options);
    check_unary_model(m, shape, 1, options);
  }
}

TEST(OnednnConv, InvertedResidualStride2) {
  check_inverted_residual({.in = 16, .expanded = 96, .out = 24, .size = 112, .stride = 2});
}
TEST(OnednnConv, InvertedResidualStride1WithResidual) {
  check_inverted_residual({.in = 24, .expanded = 144, .out = 24, .size = 56, .stride = 1});
}
TEST(OnednnConv, InvertedResidualNarrowInputNoBatchNorm) {
  check_inverted_residual(
      {.in = 8, .expanded = 48, .out = 12, .size = 112, .stride = 2, .batch_norm = false});
  check_inverted_residual({.batch = 2,
                           .in = 8,
                           .expanded = 48,
                           .out = 12,
                           .size = 11,
                           .stride = 2,
                           .batch_norm = false});
}
TEST(OnednnConv, InvertedResidualChannelsNotMultipleOf8) {
  check_inverted_residual({.in = 5, .expanded = 30, .out = 5, .size = 9, .stride = 1});
  check_inverted_residual({.in = 7, .expanded = 21, .out = 10, .size = 8, .stride = 2});
}
TEST(OnednnConv, InvertedResidualWideAndWithoutActivationAfterDepthwise) {
  check_inverted_residual({.in = 64,
                           .expanded = 384,
                           .out = 64,
                           .size = 7,
                           .stride = 1,
                           .clip_after_depthwise = false});
  check_inverted_residual({.in = 16,
                           .expanded = 96,
                           .out = 16,
                           .size = 112,
                           .stride = 2,
                           .clip_after_depthwise = false});
}

// MNASNet's 24- and 40-channel stages: 1x1 expansion (x3) -> 3x3 depthwise -> 1x1 projection
// with the residual, channels that are not a multiple of 16. In a blocked subgraph these
// layers take padded channel blocks like the others, so no tensor between them is reordered
// (left to oneDNN they ran in nhwc, with a reorder to the blocked layout and back around each
// block). Matches the cpu device.
TEST(OnednnConv, PaddedChannelBlocksNeedNoReorder) {
  for (int64_t channels : {24, 40}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    ModelBuilder m;
    // The block input comes from a 16-channel layer, as in MNASNet.
    const std::vector<int64_t> shape{1, 16, 14, 14};
    const int64_t expanded = channels * 3;
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.initializer("w_in", random_tensor(LOOM_DTYPE_FLOAT32, {channels, 16, 1, 1}, 1));
    m.initializer("w_e", random_tensor(LOOM_DTYPE_FLOAT32, {expanded, channels, 1, 1}, 2));
    m.initializer("w_d", random_tensor(LOOM_DTYPE_FLOAT32, {expanded, 1, 3, 3}, 3));
    m.initializer("w_p", random_tensor(LOOM_DTYPE_FLOAT32, {channels, expanded, 1, 1}, 4));
    m.node("Conv", {"x", "w_in"}, {"a"});
    m.node("Conv", {"a", "w_e"}, {"e"});
    m.node("Relu", {"e"}, {"er"});
    m.node("Conv", {"er", "w_d"}, {"d"}).i("group", expanded).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"d"}, {"dr"});
    m.node("Conv", {"dr", "w_p"}, {"p"});
    m.node("Add", {"p", "a"}, {"y"});
    m.output("y");
    check_unary_model(m, shape);
    for (const std::string& step :
         compiled_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}})) {
      bool boundary = step == "reorder x" || step.rfind("output", 0) == 0;
      EXPECT_TRUE(step.rfind("reorder", 0) != 0 || boundary) << step;
    }
  }
}

// MobileNetV2's 56x56 stage, where the channel blocks change: a 16->96 expansion (nChw16c),
// the 96->24 projection (keeps its wide input's nChw16c, 24 padded to 32), a 24->144->24
// block with its residual (nChw8c: the narrow 24-channel tensor is what gets reordered, and
// the residual Add sums into that copy), a stride-2 24->144->32 block whose projection keeps
// nChw8c, a 32->192->32 block back in nChw16c with its residual, then a 1x1 32->40 (nChw8c
// again). Checked at 1 and 2 threads and with every layout option against the cpu device;
// where the narrow blocks are used (Zen 4), no wide tensor is reordered and both residual
// Adds are fused.
TEST(OnednnConv, ChannelBlocksChangeBetweenLayers) {
  ModelBuilder m;
  const std::vector<int64_t> shape{1, 16, 20, 20};
  m.input("x", LOOM_DTYPE_FLOAT32, shape);
  m.initializer("lo", float_tensor({}, {0.f}));
  m.initializer("hi", float_tensor({}, {6.f}));
  uint64_t seed = 2;
  auto conv = [&](const std::string& in, const std::string& out, int64_t cin, int64_t cout,
                  int64_t group, int64_t kernel, int64_t stride) {
    m.initializer("w_" + out, random_tensor(LOOM_DTYPE_FLOAT32, {cout, cin / group, kernel, kernel},
                                            seed++, -0.3, 0.3));
    m.initializer("b_" + out, random_tensor(LOOM_DTYPE_FLOAT32, {cout}, seed++));
    int64_t pad = kernel / 2;
    m.node("Conv", {in, "w_" + out, "b_" + out}, {out})
        .i("group", group)
        .ints("strides", {stride, stride})
        .ints("pads", {pad, pad, pad, pad});
  };
  auto clipped = [&](const std::string& in, const std::string& out, int64_t cin, int64_t cout,
                     int64_t group, int64_t kernel, int64_t stride) {
    conv(in, out + "_raw", cin, cout, group, kernel, stride);
    m.node("Clip", {out + "_raw", "lo", "hi"}, {out});
  };
  clipped("x", "e0", 16, 96, 1, 1, 1);
  conv("e0", "a", 96, 24, 1, 1, 1);
  clipped("a", "e1", 24, 144, 1, 1, 1);
  clipped("e1", "d1", 144, 144, 144, 3, 1);
  conv("d1", "p1", 144, 24, 1, 1, 1);
  m.node("Add", {"p1", "a"}, {"r1"});
  clipped("r1", "e2", 24, 144, 1, 1, 1);
  clipped("e2", "d2", 144, 144, 144, 3, 2);
  conv("d2", "p2", 144, 32, 1, 1, 1);
  clipped("p2", "e3", 32, 192, 1, 1, 1);
  clipped("e3", "d3", 192, 192, 192, 3, 1);
  conv("d3", "p3", 192, 32, 1, 1, 1);
  m.node("Add", {"p2", "p3"}, {"r3"});
  conv("r3", "y", 32, 40, 1, 1, 1);
  m.output("y");
  for (const char* options : {"conv_layout=auto", "threads=1;conv_layout=auto",
                              "conv_layout=blocked;dw_fusion=off", "conv_layout=any"}) {
    SCOPED_TRACE(options);
    check_unary_model(m, shape, 1, options);
  }
  std::vector<std::pair<std::string, Tensor>> inputs{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}};
  std::vector<std::string> steps =
      run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn");
  bool narrow_blocks = false;
  for (const std::string& s : steps) narrow_blocks |= s.find(":avx2") != std::string::npos;
  // Without AVX-512 every layer runs in 8-channel blocks, and with it some CPUs pad every
  // layer to 16 channels: only a CPU that mixes the two widths is checked.
  if (!narrow_blocks || !__builtin_cpu_supports("avx512f")) return;
  std::vector<std::string> reordered;
  for (const std::string& s : steps) {
    EXPECT_NE(s.rfind("Add ", 0), 0u) << "residual Add not fused: " << s;
    if (s.rfind("reorder ", 0) == 0) reordered.push_back(s.substr(8));
  }
  // Only narrow tensors: the 16-channel image into nChw16c, the 24-channel input of the
  // 24->144 expansion into nChw8c, the 32-channel one of 32->192 into nChw16c and the
  // 32-channel input of the last 1x1 into nChw8c.
  EXPECT_EQ(reordered, (std::vector<std::string>{"x", "a", "p2", "r3"}));
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

// DBNet's head: after a blocked Conv, a 2x2 stride-2 ConvTranspose to 16 channels (blocked) and
// one to a single channel (plain tensors, oneDNN's gemm implementation), then Sigmoid.
TEST(OnednnConvTranspose, FewOutputChannelsAfterBlockedLayers) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 12, 10});
  m.initializer("wc", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 3, 3}, 2, -0.3, 0.3));
  m.initializer("w16", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 2, 2}, 3, -0.3, 0.3));
  m.initializer("b16", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 4));
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {16, 1, 2, 2}, 5, -0.3, 0.3));
  m.initializer("b1", random_tensor(LOOM_DTYPE_FLOAT32, {1}, 6));
  m.node("Conv", {"x", "wc"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"});
  m.node("ConvTranspose", {"r", "w16", "b16"}, {"u"}).ints("strides", {2, 2});
  m.node("Relu", {"u"}, {"ur"});
  m.node("ConvTranspose", {"ur", "w1", "b1"}, {"p"}).ints("strides", {2, 2});
  m.node("Sigmoid", {"p"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 16, 12, 10});
  // Kernel 2, stride 2, no pads: both run as a 1x1 Conv and a depth-to-space reorder.
  size_t as_conv = 0;
  for (const std::string& step :
       compiled_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 12, 10}, 1)}}))
    as_conv += step.find("as 1x1 Conv") != std::string::npos;
  EXPECT_EQ(as_conv, 2u);
}

// Overlapping windows (kernel 3, stride 2), pads or output_padding keep the deconvolution.
TEST(OnednnConvTranspose, OverlappingWindowsStayDeconvolutions) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 5, 6});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {8, 3, 3, 3}, 2));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 3));
  m.node("ConvTranspose", {"x", "w", "b"}, {"y"}).ints("strides", {2, 2});
  m.output("y");
  check_unary_model(m, {2, 8, 5, 6});
  for (const std::string& step :
       compiled_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 8, 5, 6}, 1)}}))
    EXPECT_EQ(step.find("as 1x1 Conv"), std::string::npos) << step;
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
