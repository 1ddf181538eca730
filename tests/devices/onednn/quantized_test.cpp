// Quantized models on the onednn device (quantized.cpp, ops_quant.cpp) against the cpu reference:
// QDQ Conv/MatMul/Gemm as onnxruntime's quantize_static emits them, QLinearConv/QLinearMatMul,
// a ResNet residual, and the refusals (standalone QuantizeLinear/DequantizeLinear and the ops on
// quantized tensors: quantized_linear_test.cpp; dynamic quantization:
// quantized_dynamic_test.cpp). oneDNN adds y's
// zero point before rounding (ONNX rounds first) and sums in int32 where the reference sums
// floats, so quantized outputs may differ by one step: dequantized outputs are compared with an
// absolute tolerance of 1.01 output scales, uint8/int8 outputs within 1.
#include <gtest/gtest.h>

#include <cmath>

#include "quantize_image.hpp"
#include "quantized_test_util.hpp"

namespace loom::onednn_testing {
namespace {

constexpr float kXScale = 0.02f;

// v -> QuantizeLinear -> DequantizeLinear (parameters v_s, v_z); returns the dequantized name.
std::string qdq(ModelBuilder& m, const std::string& v, float scale, loom_dtype_t type, int zero) {
  m.initializer(v + "_s", scalar(scale));
  m.initializer(v + "_z", int_tensor(type, {}, {zero}));
  m.node("QuantizeLinear", {v, v + "_s", v + "_z"}, {v + "_q"});
  m.node("DequantizeLinear", {v + "_q", v + "_s", v + "_z"}, {v + "_dq"});
  return v + "_dq";
}

// Constant full-range int8 weights `w` of `shape` dequantized with scales 0.002..0.006 along
// `axis` (zero points 0), or one scale when `per_tensor`; returns the scales.
std::vector<float> add_weights(ModelBuilder& m, const std::string& w, std::vector<int64_t> shape,
                               int64_t axis, bool per_tensor, uint32_t seed) {
  int64_t n = per_tensor ? 1 : shape[static_cast<size_t>(axis)];
  Tensor s = random_tensor(LOOM_DTYPE_FLOAT32, {n}, seed + 100, 0.002, 0.006);
  std::vector<float> scales(s.data<float>(), s.data<float>() + n);
  m.initializer(w + "_q", random_tensor(LOOM_DTYPE_INT8, shape, seed, -128, 127));
  m.initializer(w + "_s", per_tensor ? scalar(scales[0]) : s);
  m.initializer(w + "_z", int_tensor(LOOM_DTYPE_INT8,
                                     per_tensor ? std::vector<int64_t>{} : std::vector<int64_t>{n},
                                     std::vector<int64_t>(static_cast<size_t>(n), 0)));
  m.node("DequantizeLinear", {w + "_q", w + "_s", w + "_z"}, {w}).i("axis", axis);
  return scales;
}

// An int32 bias b of `channels` dequantized with scales x_scale * w_scale[c] (axis 0), as
// quantize_static writes it.
void add_bias(ModelBuilder& m, const std::string& b, int64_t channels,
              const std::vector<float>& wscales, uint32_t seed) {
  std::vector<float> s;
  for (float w : wscales) s.push_back(kXScale * w);
  bool one = s.size() == 1;
  m.initializer(b + "_q", random_tensor(LOOM_DTYPE_INT32, {channels}, seed, -3000, 3000));
  m.initializer(b + "_s", one ? scalar(s[0]) : float_tensor({channels}, s));
  m.initializer(b + "_z", int_tensor(LOOM_DTYPE_INT32,
                                     one ? std::vector<int64_t>{} : std::vector<int64_t>{channels},
                                     std::vector<int64_t>(s.size(), 0)));
  m.node("DequantizeLinear", {b + "_q", b + "_s", b + "_z"}, {b}).i("axis", 0);
}

// An output scale that spreads a sum of `fan_in` products of the test's activations and weights
// over about +-80 steps (+-160 with the full uint8 range), so that rounding differences show.
float output_scale(int64_t fan_in) {
  return 0.01f * std::sqrt(static_cast<float>(fan_in)) * static_cast<float>(max_activation()) /
         127.f;
}

struct QdqConv {
  std::vector<int64_t> x = {}, w = {};
  std::vector<int64_t> strides = {}, pads = {};
  int64_t group = 1;
  std::string auto_pad = "NOTSET";
  bool bias = true, relu = false, signed_x = false, per_tensor_w = false, quantized_y = true;
  std::string step = "";  // text some compiled step must contain
};

// x -> Q -> DQ -> Conv(DQ(w), DQ(b)) -> [Relu] -> Q -> DQ -> y, as quantize_static emits it.
void check_qdq_conv(const QdqConv& c) {
  loom_dtype_t act = c.signed_x ? LOOM_DTYPE_INT8 : LOOM_DTYPE_UINT8;
  int xz = c.signed_x ? -10 : 64, yz = c.signed_x ? 0 : 128;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, c.x);
  std::string xd = qdq(m, "x", kXScale, act, xz);
  std::vector<float> ws = add_weights(m, "w", c.w, 0, c.per_tensor_w, 2);
  std::vector<std::string> inputs{xd, "w"};
  if (c.bias) {
    add_bias(m, "b", c.w[0], ws, 3);
    inputs.push_back("b");
  }
  NodeRef n = m.node("Conv", inputs, {"conv"});
  n.i("group", c.group);
  if (!c.strides.empty()) n.ints("strides", c.strides);
  if (!c.pads.empty()) n.ints("pads", c.pads);
  if (c.auto_pad != "NOTSET") n.s("auto_pad", c.auto_pad);
  std::string y = "conv";
  if (c.relu) m.node("Relu", {"conv"}, {y = "relu"});
  int64_t fan_in = 1;
  for (size_t i = 1; i < c.w.size(); ++i) fan_in *= c.w[i];
  float ys = output_scale(fan_in);
  if (c.quantized_y) y = qdq(m, y, ys, act, yz);
  m.output(y);
  std::vector<std::pair<std::string, Tensor>> inputs_{
      {"x", grid_input(c.x, 1, kXScale, xz, c.signed_x ? 127 : max_activation())}};
  expect_within_one_step(m, inputs_, c.quantized_y ? 1.01 * ys : 1e-3);
  // Without VNNI an int8 source runs the QDQ graph in float (quantized.cpp says why).
  expect_int8_step(m, inputs_, "Conv", c.signed_x && !has_vnni() ? 0 : 1);
  if (!c.step.empty()) {
    std::string all;
    for (const std::string& step : compiled_steps(m, inputs_)) all += step + "\n";
    EXPECT_NE(all.find(c.step), std::string::npos) << all;
  }
}

// A 3x3 Conv with pads 1, bias and per-channel weight scales.
TEST(OnednnQuantConv, Plain3x3) {
  check_qdq_conv({.x = {1, 8, 10, 10}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}});
}
// Stride 2 on odd sizes, a batch of two.
TEST(OnednnQuantConv, Stride2) {
  check_qdq_conv(
      {.x = {2, 8, 13, 11}, .w = {16, 8, 3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}});
}
// Depthwise (group = channels).
TEST(OnednnQuantConv, Depthwise) {
  check_qdq_conv({.x = {1, 16, 12, 12}, .w = {16, 1, 3, 3}, .pads = {1, 1, 1, 1}, .group = 16});
}
// Two groups.
TEST(OnednnQuantConv, Grouped) {
  check_qdq_conv({.x = {1, 8, 10, 10}, .w = {12, 4, 3, 3}, .pads = {1, 1, 1, 1}, .group = 2});
}
// A pointwise 1x1 Conv.
TEST(OnednnQuantConv, Pointwise) {
  check_qdq_conv({.x = {1, 16, 7, 7}, .w = {24, 16, 1, 1}});
}
// A Relu between the Conv and its QuantizeLinear (folded into the primitive), with a non-zero
// output zero point: the Relu must clamp the real value, before the zero point is added.
TEST(OnednnQuantConv, ReluBeforeQuantize) {
  check_qdq_conv({.x = {1, 8, 9, 9}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}, .relu = true});
}
// Signed int8 activations (source and result), with a non-zero source zero point. Without VNNI
// oneDNN's int8-source convolution halves the weights (descriptor "sa0.5"), so odd weights
// lost their low bit (510 of 1600 outputs off, 28 by two steps, on AVX2): there the device now
// runs the graph in float, and with VNNI as one int8 primitive.
TEST(OnednnQuantConv, SignedActivations) {
  check_qdq_conv({.x = {1, 8, 10, 10}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}, .signed_x = true});
}
// One weight scale for the whole tensor.
TEST(OnednnQuantConv, PerTensorWeightScale) {
  check_qdq_conv(
      {.x = {1, 8, 10, 10}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}, .per_tensor_w = true});
}
// No bias input.
TEST(OnednnQuantConv, NoBias) {
  check_qdq_conv({.x = {1, 8, 10, 10}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}, .bias = false});
}
// A Conv whose float result is a graph output (no QuantizeLinear after it): a float result.
TEST(OnednnQuantConv, FloatOutput) {
  check_qdq_conv(
      {.x = {1, 8, 10, 10}, .w = {16, 8, 3, 3}, .pads = {1, 1, 1, 1}, .quantized_y = false});
}
// A 1-D Conv.
TEST(OnednnQuantConv, OneDimensional) {
  check_qdq_conv({.x = {2, 6, 20}, .w = {10, 6, 5}, .pads = {2, 2}});
}
// auto_pad SAME_UPPER with stride 2 (the odd total pad goes at the end).
TEST(OnednnQuantConv, AutoPadSameUpper) {
  check_qdq_conv(
      {.x = {1, 8, 10, 10}, .w = {8, 8, 3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"});
}
// Odd channel counts (3 in, 5 out), which oneDNN pads to its channel blocks.
TEST(OnednnQuantConv, OddChannels) {
  check_qdq_conv({.x = {1, 3, 11, 11}, .w = {5, 3, 3, 3}, .pads = {1, 1, 1, 1}});
}

// A 7x7 stride-2 stem on a three-channel image, as ResNet's: the input's QuantizeLinear writes
// channels-last with the device's own kernel (quantize_image_test.cpp checks its bytes).
TEST(OnednnQuantConv, ImageStem) {
  check_qdq_conv({.x = {2, 3, 40, 40},
                  .w = {16, 3, 7, 7},
                  .strides = {2, 2},
                  .pads = {3, 3, 3, 3},
                  .step = onednn::quantize_image_supported(3) ? "loom quantize image" : ""});
}

// The constant inputs of a QLinearConv / QLinearMatMul: xs, xz (64), full-range int8 weights w
// of `shape` with scales ws per output channel (along `axis`) and zero points wz 0, ys, yz (128).
void add_qlinear_params(ModelBuilder& m, std::vector<int64_t> shape, size_t axis, int64_t fan_in) {
  int64_t n = shape[axis];
  m.initializer("xs", scalar(kXScale));
  m.initializer("xz", int_tensor(LOOM_DTYPE_UINT8, {}, {64}));
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, shape, 2, -128, 127));
  m.initializer("ws", random_tensor(LOOM_DTYPE_FLOAT32, {n}, 4, 0.002, 0.006));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {n}, std::vector<int64_t>(n, 0)));
  m.initializer("ys", scalar(output_scale(fan_in)));
  m.initializer("yz", int_tensor(LOOM_DTYPE_UINT8, {}, {128}));
}

// QLinearConv from a uint8 graph input to a uint8 graph output, with an int32 bias and
// per-channel weight scales.
TEST(OnednnQuantQOperator, QLinearConv) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_UINT8, {1, 8, 10, 10});
  add_qlinear_params(m, {16, 8, 3, 3}, 0, 72);
  m.initializer("b", random_tensor(LOOM_DTYPE_INT32, {16}, 3, -3000, 3000));
  m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"})
      .ints("pads", {1, 1, 1, 1});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_UINT8, {1, 8, 10, 10}, 1, 0, max_activation())}};
  expect_within_one_step(m, in, 0);
  expect_int8_step(m, in, "QLinearConv");
}

// QLinearConv of int8 (signed) activations to an int8 result, as TFLite's int8 models have
// them: with VNNI one int8 primitive; without, oneDNN's int8-source kernels are inexact, and the
// device computes it in its float form (dequantize, float convolution, quantize).
TEST(OnednnQuantQOperator, QLinearConvSigned) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_INT8, {1, 8, 10, 10});
  m.initializer("xs", scalar(kXScale));
  m.initializer("xz", int_tensor(LOOM_DTYPE_INT8, {}, {-5}));
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, {16, 8, 3, 3}, 2, -128, 127));
  m.initializer("ws", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 4, 0.002, 0.006));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {16}, std::vector<int64_t>(16, 0)));
  m.initializer("ys", scalar(output_scale(72)));
  m.initializer("yz", int_tensor(LOOM_DTYPE_INT8, {}, {3}));
  m.initializer("b", random_tensor(LOOM_DTYPE_INT32, {16}, 3, -3000, 3000));
  m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"})
      .ints("pads", {1, 1, 1, 1});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_INT8, {1, 8, 10, 10}, 1, -128, 127)}};
  expect_within_one_step(m, in, 0);
  if (has_vnni()) {
    expect_int8_step(m, in, "QLinearConv");
  } else {
    std::string all;
    for (const std::string& step : compiled_steps(m, in)) all += step + "\n";
    EXPECT_NE(all.find("float form"), std::string::npos) << all;
  }
}

// int8 activations with zero point -128 (TFLite's after a ReLU) are read as uint8 + 128 with
// zero point 0, oneDNN's fast int8 form: a 5x5 depthwise convolution with padded borders (whose
// padding must stay real zero) over an odd channel count, and a 3x3 one across channels.
void check_qlinear_conv_minus_128(int64_t channels, int64_t group, int64_t k) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_INT8, {1, channels, 12, 12});
  m.initializer("xs", scalar(kXScale));
  m.initializer("xz", int_tensor(LOOM_DTYPE_INT8, {}, {-128}));
  m.initializer("w",
                random_tensor(LOOM_DTYPE_INT8, {channels, channels / group, k, k}, 2, -128, 127));
  m.initializer("ws", random_tensor(LOOM_DTYPE_FLOAT32, {channels}, 4, 0.002, 0.006));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {channels}, std::vector<int64_t>(channels, 0)));
  m.initializer("ys", scalar(output_scale(channels / group * k * k)));
  m.initializer("yz", int_tensor(LOOM_DTYPE_INT8, {}, {7}));
  m.initializer("b", random_tensor(LOOM_DTYPE_INT32, {channels}, 3, -3000, 3000));
  m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"})
      .i("group", group)
      .ints("pads", {k / 2, k / 2, k / 2, k / 2});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_INT8, {1, channels, 12, 12}, 1, -128, 127)}};
  expect_within_one_step(m, in, 0);
  if (!has_vnni()) return;  // the float form (QLinearConvSigned)
  std::string all;
  for (const std::string& step : compiled_steps(m, in)) all += step + "\n";
  EXPECT_NE(all.find("loom int8 to uint8"), std::string::npos) << all;
}

TEST(OnednnQuantQOperator, QLinearConvSignedZeroPointMinus128Depthwise) {
  check_qlinear_conv_minus_128(24, 24, 5);
}
TEST(OnednnQuantQOperator, QLinearConvSignedZeroPointMinus128) {
  check_qlinear_conv_minus_128(8, 1, 3);
}

// A Clip of a QLinearConv's quantized result by bounds of its type (what the TFLite converter
// makes of a fused RELU6): folded into the primitive (the float form's without VNNI for int8).
void check_qlinear_conv_clip(loom_dtype_t type) {
  const bool s8 = type == LOOM_DTYPE_INT8;
  ModelBuilder m;
  m.input("x", type, {1, 8, 10, 10});
  m.initializer("xs", scalar(kXScale));
  m.initializer("xz", int_tensor(type, {}, {s8 ? -5 : 64}));
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, {16, 8, 3, 3}, 2, -128, 127));
  m.initializer("ws", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 4, 0.002, 0.006));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {16}, std::vector<int64_t>(16, 0)));
  m.initializer("ys", scalar(output_scale(72)));
  m.initializer("yz", int_tensor(type, {}, {s8 ? 3 : 128}));
  m.initializer("lo", int_tensor(type, {}, {s8 ? -20 : 100}));
  m.initializer("hi", int_tensor(type, {}, {s8 ? 30 : 170}));
  m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"c"})
      .ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"c", "lo", "hi"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(type, {1, 8, 10, 10}, 1, s8 ? -128 : 0, s8 ? 127 : max_activation())}};
  expect_within_one_step(m, in, 0);
  std::vector<std::string> steps = compiled_steps(m, in);
  for (const std::string& step : steps) EXPECT_EQ(step.rfind("Clip", 0), std::string::npos) << step;
}

TEST(OnednnQuantQOperator, QLinearConvClipUnsigned) {
  check_qlinear_conv_clip(LOOM_DTYPE_UINT8);
}
TEST(OnednnQuantQOperator, QLinearConvClipSigned) {
  check_qlinear_conv_clip(LOOM_DTYPE_INT8);
}

// QLinearMatMul of uint8 activations `a` (2-D, or batched 3-D) by constant 2-D int8 weights with
// per-column scales.
void check_qlinear_matmul(std::vector<int64_t> a) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_UINT8, a);
  add_qlinear_params(m, {32, 48}, 1, 32);
  m.node("QLinearMatMul", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_UINT8, a, 1, 0, max_activation())}};
  expect_within_one_step(m, in, 0);
  expect_int8_step(m, in, "QLinearMatMul");
}

TEST(OnednnQuantQOperator, QLinearMatMul2D) {
  check_qlinear_matmul({10, 32});
}
TEST(OnednnQuantQOperator, QLinearMatMulBatched) {
  check_qlinear_matmul({3, 10, 32});
}

// QDQ MatMul [1, 10, 32] x [32, 48] with per-column weight scales (axis 1); uint8 or int8
// activations (zero point 0 for int8, as quantize_static's symmetric activations).
void check_qdq_matmul(bool signed_x) {
  loom_dtype_t act = signed_x ? LOOM_DTYPE_INT8 : LOOM_DTYPE_UINT8;
  int xz = signed_x ? 0 : 64, yz = signed_x ? 0 : 128;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 10, 32});
  std::string xd = qdq(m, "x", kXScale, act, xz);
  add_weights(m, "w", {32, 48}, 1, false, 2);
  m.node("MatMul", {xd, "w"}, {"mm"});
  float ys = output_scale(32);
  m.output(qdq(m, "mm", ys, act, yz));
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", grid_input({1, 10, 32}, 1, kXScale, xz, signed_x ? 127 : max_activation())}};
  expect_within_one_step(m, in, 1.01 * ys);
  expect_int8_step(m, in, "MatMul", signed_x && !has_vnni() ? 0 : 1);
}

TEST(OnednnQuantMatMul, QdqMatMul) {
  check_qdq_matmul(false);
}
// Signed activations: without VNNI oneDNN's s8s8 "gemm:jit" shifts the source to u8 and
// saturates VPMADDUBSW's pair sums even for activations 0..127 (361 of 480 outputs off, by up
// to 61 steps, on AVX2): there the device runs the graph in float, with VNNI in int8.
TEST(OnednnQuantMatMul, QdqMatMulSignedActivations) {
  check_qdq_matmul(true);
}

// QDQ Gemm: weights [N, K] with per-row scales (axis 0) under transB, else [K, N] with
// per-column scales (axis 1), an int32 bias through DequantizeLinear. One row takes the 1x1
// convolution form (ops_quant.cpp), more rows the matmul.
void check_qdq_gemm(int64_t rows, bool trans_b) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {rows, 32});
  std::string xd = qdq(m, "x", kXScale, LOOM_DTYPE_UINT8, 64);
  std::vector<float> ws =
      add_weights(m, "w", trans_b ? std::vector<int64_t>{48, 32} : std::vector<int64_t>{32, 48},
                  trans_b ? 0 : 1, false, 2);
  add_bias(m, "b", 48, ws, 3);
  m.node("Gemm", {xd, "w", "b"}, {"gemm"}).i("transB", trans_b ? 1 : 0);
  float ys = output_scale(32);
  m.output(qdq(m, "gemm", ys, LOOM_DTYPE_UINT8, 128));
  std::vector<std::pair<std::string, Tensor>> in{{"x", grid_input({rows, 32}, 1, kXScale, 64)}};
  expect_within_one_step(m, in, 1.01 * ys);
  expect_int8_step(m, in, "Gemm");
}

TEST(OnednnQuantMatMul, QdqGemmTransposed) {
  check_qdq_gemm(4, true);
}
TEST(OnednnQuantMatMul, QdqGemmOneRowTransposed) {
  check_qdq_gemm(1, true);
}
TEST(OnednnQuantMatMul, QdqGemmOneRow) {
  check_qdq_gemm(1, false);
}

// A ResNet block's end: two QDQ convs (3x3 and 1x1) whose dequantized outputs are added, Relu,
// QuantizeLinear, DequantizeLinear; the 3x3 conv's chain first in node order, or the 1x1's.
void check_residual(bool three_by_three_first) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 10, 10});
  std::string xd = qdq(m, "x", kXScale, LOOM_DTYPE_UINT8, 64);
  auto conv = [&](const std::string& y, int64_t k, uint32_t seed) {
    std::vector<float> ws = add_weights(m, "w" + y, {8, 8, k, k}, 0, false, seed);
    add_bias(m, "b" + y, 8, ws, seed + 1);
    m.node("Conv", {xd, "w" + y, "b" + y}, {y}).ints("pads", {k / 2, k / 2, k / 2, k / 2});
    return qdq(m, y, output_scale(8 * k * k), LOOM_DTYPE_UINT8, 128);
  };
  std::string a = three_by_three_first ? conv("a", 3, 2) : "";
  std::string b = conv("b", 1, 4);
  if (!three_by_three_first) a = conv("a", 3, 2);
  m.node("Add", {a, b}, {"sum"});
  m.node("Relu", {"sum"}, {"r"});
  float ys = 1.5f * output_scale(72);
  m.output(qdq(m, "r", ys, LOOM_DTYPE_UINT8, 0));
  std::vector<std::pair<std::string, Tensor>> in{{"x", grid_input({1, 8, 10, 10}, 1, kXScale, 64)}};
  expect_within_one_step(m, in, 1.01 * ys);
  expect_int8_step(m, in, "Conv", 2);
}

TEST(OnednnQuantResidual, TwoConvsAddRelu) {
  check_residual(true);
}
TEST(OnednnQuantResidual, TwoConvsAddReluOtherOrder) {
  check_residual(false);
}

// TFLite's int8 residual block on h (a QLinearConv's result, channels-last like every int8
// activation inside a network): a QLinearConv, then the shortcut (a channel Pad of h, made
// after the convolution in node order as in blazeface), DequantizeLinear of both, Add, Relu,
// QuantizeLinear. The convolution takes the Add as post-ops, deferred to the Add's place, and
// sums in place into the Pad's buffer; its own QuantizeLinear's rounding and saturation stay
// (conv_scale against sum_scale: coarser, or saturating), so the result is the graph's.
void check_qlinear_residual(loom_dtype_t type, float conv_scale, float sum_scale) {
  const bool s8 = type == LOOM_DTYPE_INT8;
  ModelBuilder m;
  m.input("x", type, {1, 4, 10, 10});
  m.initializer("xs", scalar(kXScale));
  m.initializer("xz", int_tensor(type, {}, {s8 ? -5 : 64}));
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, {8, 4, 1, 1}, 2, -128, 127));
  m.initializer("ws", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 4, 0.002, 0.006));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {8}, std::vector<int64_t>(8, 0)));
  m.initializer("cs", scalar(conv_scale));
  m.initializer("cz", int_tensor(type, {}, {s8 ? 3 : 128}));
  m.initializer("b", random_tensor(LOOM_DTYPE_INT32, {8}, 3, -3000, 3000));
  m.initializer("w0", random_tensor(LOOM_DTYPE_INT8, {4, 4, 1, 1}, 5, -128, 127));
  m.initializer("ws0", random_tensor(LOOM_DTYPE_FLOAT32, {4}, 6, 0.002, 0.006));
  m.initializer("wz0", int_tensor(LOOM_DTYPE_INT8, {4}, std::vector<int64_t>(4, 0)));
  m.node("QLinearConv", {"x", "xs", "xz", "w0", "ws0", "wz0", "xs", "xz"}, {"h"});
  m.node("QLinearConv", {"h", "xs", "xz", "w", "ws", "wz", "cs", "cz", "b"}, {"c"});
  m.initializer("pads", int64_tensor({8}, {0, 0, 0, 0, 0, 4, 0, 0}));
  m.node("Pad", {"h", "pads", "xz"}, {"p"});
  m.node("DequantizeLinear", {"c", "cs", "cz"}, {"cd"});
  m.node("DequantizeLinear", {"p", "xs", "xz"}, {"pd"});
  m.node("Add", {"cd", "pd"}, {"sum"});
  m.node("Relu", {"sum"}, {"r"});
  m.initializer("ys", scalar(sum_scale));
  m.initializer("yz", int_tensor(type, {}, {s8 ? -128 : 0}));
  m.node("QuantizeLinear", {"r", "ys", "yz"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(type, {1, 4, 10, 10}, 1, s8 ? -128 : 0, s8 ? 127 : max_activation())}};
  expect_within_one_step(m, in, 0);
  if (s8 && !has_vnni()) return;  // the float form, which takes no residual
  std::string all;
  size_t fused = 0, apart = 0;
  for (const std::string& step : compiled_steps(m, in)) {
    all += step + "\n";
    fused +=
        step.rfind("QLinearConv QLinearConv_1", 0) == 0 && step.find("int8") != std::string::npos;
    for (const char* op : {"Add", "DequantizeLinear", "QuantizeLinear", "residual copy"})
      apart += step.find(op) != std::string::npos;
  }
  EXPECT_EQ(fused, 1u) << all;
  EXPECT_EQ(apart, 0u) << all;
}

TEST(OnednnQuantResidual, QLinearConvShortcutAfterIt) {
  check_qlinear_residual(LOOM_DTYPE_UINT8, output_scale(4), 1.5f * output_scale(4));
  check_qlinear_residual(LOOM_DTYPE_INT8, output_scale(4), 1.5f * output_scale(4));
}
// The sum's scale a third of the convolution's: skipping the convolution's own rounding
// would be off by up to 1.5 steps.
TEST(OnednnQuantResidual, QLinearConvCoarserThanTheSum) {
  check_qlinear_residual(LOOM_DTYPE_UINT8, output_scale(4), output_scale(4) / 3.f);
  check_qlinear_residual(LOOM_DTYPE_INT8, output_scale(4), output_scale(4) / 3.f);
}
// Most convolution results saturate their own type before the sum.
TEST(OnednnQuantResidual, QLinearConvSaturatesBeforeTheSum) {
  check_qlinear_residual(LOOM_DTYPE_UINT8, output_scale(4) / 8.f, output_scale(4));
  check_qlinear_residual(LOOM_DTYPE_INT8, output_scale(4) / 8.f, output_scale(4));
}

// QLinearConv with a non-zero weight zero point: oneDNN's int8 primitives take none.
TEST(OnednnQuantRefused, WeightZeroPoint) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  m.initializer("xs", scalar(kXScale));
  m.initializer("xz", int_tensor(LOOM_DTYPE_UINT8, {}, {64}));
  m.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, {4, 4, 3, 3}, 2, -100, 100));
  m.initializer("ws", scalar(0.004f));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {}, {3}));
  m.initializer("ys", scalar(output_scale(36)));
  m.initializer("yz", int_tensor(LOOM_DTYPE_UINT8, {}, {128}));
  m.node("QLinearConv", {"xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"yq"});
  m.node("DequantizeLinear", {"yq", "ys", "yz"}, {"y"});
  m.output("y");
  expect_refused(m, {1, 4, 6, 6}, "weights with a zero point");
}

// A QuantizeLinear of an activation with a scale per channel.
TEST(OnednnQuantRefused, PerChannelActivation) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 5, 5});
  m.initializer("s", float_tensor({4}, {0.01f, 0.02f, 0.03f, 0.04f}));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {4}, {10, 128, 60, 200}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"q"}).i("axis", 1);
  m.node("DequantizeLinear", {"q", "s", "z"}, {"y"}).i("axis", 1);
  m.output("y");
  expect_refused(m, {1, 4, 5, 5}, "a scale per channel on an activation");
}

// Hostile parameters: weights dequantized with 3 scales along an axis of extent 4. The device
// must refuse at placement (it would read past the scales), whatever the cpu device then says.
TEST(OnednnQuantRefused, ScalesShorterThanTheirAxis) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 6});
  m.initializer("w_q", random_tensor(LOOM_DTYPE_INT8, {6, 4}, 2, -128, 127));
  m.initializer("w_s", float_tensor({3}, {0.01f, 0.02f, 0.03f}));
  m.node("DequantizeLinear", {"w_q", "w_s"}, {"w"}).i("axis", 1);
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  try {
    run_model(path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 6}, 3)}}, onednn_only());
    ADD_FAILURE() << "onednn ran a model whose scales do not match their axis";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("scale"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// Blocked quantization (opset 21's block_size) of an activation: onednn refuses it and the cpu
// device runs it.
TEST(OnednnQuantRefused, BlockedQuantization) {
  ModelBuilder m(21);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 8});
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4, 2}, 4, 0.005, 0.01));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {1, 4, 2}, std::vector<int64_t>(8, 128)));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"q"}).i("axis", 2).i("block_size", 4);
  m.node("DequantizeLinear", {"q", "s", "z"}, {"y"}).i("axis", 2).i("block_size", 4);
  m.output("y");
  expect_refused(m, {1, 4, 8}, "blocked quantization");
}

// QuantizeLinear to the narrow types (opset 21's int4 through output_dtype, no zero point):
// onednn's 8-bit reorders refuse them and the cpu device runs them.
TEST(OnednnQuantRefused, Int4Quantization) {
  ModelBuilder m(21);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 6});
  m.initializer("s", scalar(0.25f));
  m.node("QuantizeLinear", {"x", "s"}, {"q"}).i("output_dtype", LOOM_DTYPE_INT4);
  m.node("DequantizeLinear", {"q", "s"}, {"y"});
  m.output("y");
  expect_refused(m, {2, 6}, "QuantizeLinear to a type other than int8 or uint8");
}

// Opset 23's precision: onednn divides in float32 only, so float64 is left to the cpu device.
TEST(OnednnQuantRefused, Float64Precision) {
  ModelBuilder m(23);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 6});
  m.initializer("s", scalar(0.25f));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {}, {128}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"q"}).i("precision", LOOM_DTYPE_FLOAT64);
  m.node("DequantizeLinear", {"q", "s", "z"}, {"y"});
  m.output("y");
  expect_refused(m, {2, 6}, "precision other than float32");
}

// Opset 23's output_dtype of DequantizeLinear: onednn writes float32 only.
TEST(OnednnQuantRefused, Float16Dequantization) {
  ModelBuilder m(23);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 6});
  m.initializer("s", scalar(0.25f));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {}, {128}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  m.node("DequantizeLinear", {"q", "s", "z"}, {"h"}).i("output_dtype", LOOM_DTYPE_FLOAT16);
  m.node("Cast", {"h"}, {"y"}).i("to", LOOM_DTYPE_FLOAT32);
  m.output("y");
  expect_refused(m, {2, 6}, "DequantizeLinear to a type other than float32");
}

}  // namespace
}  // namespace loom::onednn_testing
