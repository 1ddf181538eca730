// Gated activations and squeeze-and-excitation blocks on the onednn device (EfficientNet,
// MobileNetV3, RegNetY): x * Sigmoid(x) runs as one Swish eltwise, x * HardSigmoid(x) with
// HardSwish's constants as one HardSwish, HardSigmoid itself as a linear map and a clip, and
// the per-channel scale x * s ([1,C,H,W] by [1,C,1,1]) of an SE block must get a JIT binary
// kernel in the blocked layout the convolutions use: oneDNN 2.6's reference kernel,
// which it picks for a blocked first operand with a plain second one, made EfficientNet-B0
// take 85 ms instead of 10. Outputs match the cpu device; the step list (verbose=1) shows the
// kernels and what was fused.
#include <gtest/gtest.h>

#include <algorithm>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

// The onednn steps of the model's subgraphs ("<op> <node> [<implementation>...]").
std::vector<std::string> steps(const ModelBuilder& m, const Inputs& inputs) {
  return run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn");
}

size_t count_starting(const std::vector<std::string>& lines, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(
      lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; }));
}

void expect_no_reference_kernel(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) EXPECT_EQ(l.find("ref:"), std::string::npos) << l;
}

// expand 1x1 -> Swish (x * Sigmoid(x)) -> depthwise 3x3 -> Swish -> SE (GlobalAveragePool,
// 1x1 reduce, Relu, 1x1 expand, Sigmoid, Mul) -> project 1x1. `channels` decides the blocked
// layout: multiples of 16 use nChw16c; a multiple of 8 only may use nChw8c.
ModelBuilder efficientnet_block(int64_t in, int64_t channels, int64_t size) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, in, size, size});
  auto w = [](std::vector<int64_t> shape, int64_t fan_in, uint32_t seed) {
    const double bound = 1.0 / static_cast<double>(fan_in);
    return random_tensor(LOOM_DTYPE_FLOAT32, std::move(shape), seed, -bound, 2 * bound);
  };
  const int64_t squeezed = std::max<int64_t>(channels / 4, 1);
  m.initializer("we", w({channels, in, 1, 1}, in, 2));
  m.initializer("wd", w({channels, 1, 3, 3}, 9, 3));
  m.initializer("wr", w({squeezed, channels, 1, 1}, channels, 4));
  m.initializer("br", random_tensor(LOOM_DTYPE_FLOAT32, {squeezed}, 5));
  m.initializer("wx", w({channels, squeezed, 1, 1}, squeezed, 6));
  m.initializer("bx", random_tensor(LOOM_DTYPE_FLOAT32, {channels}, 7));
  m.initializer("wp", w({in, channels, 1, 1}, channels, 8));
  m.node("Conv", {"x", "we"}, {"e"});
  m.node("Sigmoid", {"e"}, {"e_gate"});
  m.node("Mul", {"e", "e_gate"}, {"e_act"});
  m.node("Conv", {"e_act", "wd"}, {"d"}).i("group", channels).ints("pads", {1, 1, 1, 1});
  m.node("Sigmoid", {"d"}, {"d_gate"});
  m.node("Mul", {"d_gate", "d"}, {"d_act"});  // the gate first: both orders are exported
  m.node("GlobalAveragePool", {"d_act"}, {"pooled"});
  m.node("Conv", {"pooled", "wr", "br"}, {"r"});
  m.node("Relu", {"r"}, {"r_act"});
  m.node("Conv", {"r_act", "wx", "bx"}, {"s"});
  m.node("Sigmoid", {"s"}, {"scale"});
  m.node("Mul", {"d_act", "scale"}, {"excited"});
  m.node("Conv", {"excited", "wp"}, {"y"});
  m.output("y");
  return m;
}

TEST(OnednnGatedActivations, SqueezeExciteBlockRunsOnJitKernels) {
  // Expanded channels 32 and 96: nChw16c; 24 and 40: nChw8c where AVX-512 is double-pumped.
  struct Case {
    int64_t in, channels;
  };
  for (const Case& c : {Case{16, 32}, Case{16, 96}, Case{24, 96}, Case{16, 24}, Case{16, 40}}) {
    SCOPED_TRACE("channels " + std::to_string(c.in) + "->" + std::to_string(c.channels));
    ModelBuilder m = efficientnet_block(c.in, c.channels, 14);
    Inputs inputs{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, c.in, 14, 14}, 1)}};
    expect_matches_cpu(m, inputs, onednn_only());
    std::vector<std::string> lines = steps(m, inputs);
    ASSERT_FALSE(lines.empty());
    expect_no_reference_kernel(lines);
    // Both Swish activations and the SE gate's Sigmoid ride on their convolutions: only the
    // SE scale is a step of its own.
    EXPECT_EQ(count_starting(lines, "Mul "), 1u);
    EXPECT_EQ(count_starting(lines, "Sigmoid "), 0u);
    EXPECT_EQ(count_starting(lines, "Conv "), 5u);
    // With whole 16-channel blocks in the depthwise convolution, layouts change only at the
    // subgraph's edges (the input to blocked, the output to plain): an SE scale keeps a
    // 24-channel block input in nChw16c, which has a JIT binary kernel (nChw8c would need the
    // scaled tensor reordered to plain and back).
    if (c.channels % 16 == 0) {
      EXPECT_LE(count_starting(lines, "reorder "), 2u);
    }
  }
}

// A Sigmoid read by something besides the Mul stays a Sigmoid (the rewrite needs the gate to
// have the Mul as its only reader), and a Mul by the sigmoid of another tensor is no Swish.
TEST(OnednnGatedActivations, GatesWithOtherReadersStaySeparate) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 5, 5});
  m.input("z", LOOM_DTYPE_FLOAT32, {2, 8, 5, 5});
  m.node("Sigmoid", {"x"}, {"g"});
  m.node("Mul", {"x", "g"}, {"a"});
  m.node("Add", {"a", "g"}, {"b"});  // g has a second reader
  m.node("Sigmoid", {"z"}, {"h"});
  m.node("Mul", {"x", "h"}, {"c"});  // gated by another tensor
  m.node("Add", {"b", "c"}, {"y"});
  m.output("y");
  expect_matches_cpu(m,
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 8, 5, 5}, 1, -4.0, 8.0)},
                      {"z", random_tensor(LOOM_DTYPE_FLOAT32, {2, 8, 5, 5}, 2, -4.0, 8.0)}},
                     onednn_only());
}

TEST(OnednnGatedActivations, HardSigmoidAloneAndAfterAConv) {
  // Standalone, with its defaults and with explicit constants (inputs span both clip edges).
  for (bool explicit_constants : {false, true}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 4, 5});
    auto n = m.node("HardSigmoid", {"x"}, {"y"});
    if (explicit_constants) n.f("alpha", 0.3f).f("beta", 0.4f);
    m.output("y");
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 4, 5}, 1, -6.0, 12.0)}},
                       onednn_only());
  }
  // After a convolution: two post-ops (linear, then clip), no HardSigmoid step.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 6, 6});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 16, 3, 3}, 2, -1.0, 2.0));
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("HardSigmoid", {"c"}, {"y"}).f("alpha", 0.25f).f("beta", 0.5f);
  m.output("y");
  Inputs inputs{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 6, 6}, 3)}};
  expect_matches_cpu(m, inputs, onednn_only());
  std::vector<std::string> lines = steps(m, inputs);
  EXPECT_EQ(count_starting(lines, "HardSigmoid "), 0u);
  EXPECT_EQ(count_starting(lines, "Conv "), 1u);
}

// MobileNetV3 as exported before opset 14: x * HardSigmoid(x, 1/6, 1/2) is HardSwish. With
// other constants it is not, and stays a HardSigmoid and a Mul.
TEST(OnednnGatedActivations, HardSwishFromItsDecomposition) {
  for (float alpha : {1.f / 6.f, 0.2f}) {
    SCOPED_TRACE(alpha);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 6, 6});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 1, 1}, 2, -1.0, 2.0));
    m.node("Conv", {"x", "w"}, {"c"});
    m.node("HardSigmoid", {"c"}, {"g"}).f("alpha", alpha).f("beta", 0.5f);
    m.node("Mul", {"c", "g"}, {"y"});
    m.output("y");
    Inputs inputs{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 6, 6}, 3, -4.0, 8.0)}};
    expect_matches_cpu(m, inputs, onednn_only());
    std::vector<std::string> lines = steps(m, inputs);
    EXPECT_EQ(count_starting(lines, "Mul "), alpha == 0.2f ? 1u : 0u);
  }
}

}  // namespace
}  // namespace loom::onednn_testing
