// The 3x3 convolution kernels of the neon device against cpu: Winograd F(2x2, 3x3) for 3x3
// stride-1 convolutions (fixed edge cases, random shapes, fp16, thread independence) and the
// register-blocked 3x3 depthwise kernel (random shapes, strides 1 and 2, pads).
#include <random>

#include "conv_case.hpp"

namespace loom::neon_testing {
namespace {

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Random 3x3 convolutions: channel counts not multiples of 4, odd planes, asymmetric pads,
// batches, groups (depthwise: group == channels).
std::vector<ConvCase> random_3x3_cases(uint32_t seed, int count, bool depthwise) {
  std::mt19937 rng(seed);
  std::vector<ConvCase> cases;
  while (static_cast<int>(cases.size()) < count) {
    ConvCase k{"",
               pick(rng, 1, 2),
               0,
               pick(rng, 1, 19),
               pick(rng, 1, 23),
               0,
               3,
               3,
               1,
               {1, 1},
               {pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2)},
               {1, 1},
               pick(rng, 0, 1) == 1};
    if (k.h + k.pads[0] + k.pads[2] < 3 || k.w + k.pads[1] + k.pads[3] < 3) continue;
    if (depthwise) {
      k.c = k.cout = k.group = pick(rng, 1, 13);
      k.strides = {pick(rng, 1, 2), pick(rng, 1, 2)};
    } else {
      k.group = pick(rng, 1, 2);
      k.c = k.group * pick(rng, 4, 13);
      k.cout = k.group * pick(rng, 4, 15);
    }
    k.name = "random " + std::to_string(cases.size()) + ": " + std::to_string(k.n) + "x" +
             std::to_string(k.c) + "x" + std::to_string(k.h) + "x" + std::to_string(k.w) + " -> " +
             std::to_string(k.cout) + ", group " + std::to_string(k.group) + ", strides " +
             std::to_string(k.strides[0]) + "," + std::to_string(k.strides[1]) + ", pads " +
             std::to_string(k.pads[0]) + "," + std::to_string(k.pads[1]) + "," +
             std::to_string(k.pads[2]) + "," + std::to_string(k.pads[3]);
    cases.push_back(k);
  }
  return cases;
}

TEST(NeonConv3x3, WinogradEdgeCases) {
  const ConvCase cases[] = {
      {"one output", 1, 4, 3, 3, 4, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
      {"odd plane", 1, 5, 7, 9, 7, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {"pad 1", 2, 8, 10, 11, 16, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"asymmetric pads", 1, 6, 8, 5, 9, 3, 3, 1, {1, 1}, {0, 2, 1, 0}, {1, 1}, true},
      {"single row", 1, 4, 1, 12, 5, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"grouped", 1, 10, 9, 9, 14, 3, 3, 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"SAME_UPPER", 1, 4, 6, 7, 5, 3, 3, 1, {1, 1}, {}, {1, 1}, true, "SAME_UPPER"},
      {"VALID", 1, 9, 6, 6, 4, 3, 3, 1, {1, 1}, {}, {1, 1}, false, "VALID"},
      // 24 * 24 tiles > one chunk of 1M floats / (16 * (64 + 64)): several chunks per plane.
      {"several tile chunks", 1, 64, 47, 48, 64, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
  };
  uint32_t seed = 300;
  for (const ConvCase& k : cases) run_conv(k, seed += 10);
}

TEST(NeonConv3x3, WinogradRandomShapes) {
  uint32_t seed = 400;
  for (const ConvCase& k : random_3x3_cases(7, 12, /*depthwise=*/false)) run_conv(k, seed += 10);
}

TEST(NeonConv3x3, WinogradInFp16) {
  RunOptions f16 = on_neon();
  f16.device_options = "precision=f16";
  // fp16 GEMM operands after the transforms (which grow values by up to 4x in the input and
  // 9/4 in the weights): the f16 tolerance of device_test.cpp.
  const device_testing::Tolerance tolerance{2e-2, 2e-2};
  const ConvCase cases[] = {
      {"f16 pad 1", 1, 12, 9, 10, 8, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"f16 odd", 2, 5, 7, 5, 6, 3, 3, 1, {1, 1}, {0, 1, 0, 1}, {1, 1}, false},
  };
  uint32_t seed = 500;
  for (const ConvCase& k : cases) run_conv(k, seed += 10, f16, &tolerance);
}

TEST(NeonConv3x3, WinogradThreadCountDoesNotChangeResults) {
  const ConvCase k{"threads", 1, 12, 13, 11, 20, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true};
  auto path = conv_model(k, 600).save();
  const Inputs inputs = conv_inputs(k, 600);
  auto one = device_testing::run_model(path, inputs, on_neon(1));
  auto four = device_testing::run_model(path, inputs, on_neon(4));
  std::filesystem::remove(path);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].bytes, four[i].bytes) << "output " << i;
}

TEST(NeonConv3x3, DepthwiseRandomShapes) {
  uint32_t seed = 700;
  for (const ConvCase& k : random_3x3_cases(11, 16, /*depthwise=*/true)) run_conv(k, seed += 10);
}

}  // namespace
}  // namespace loom::neon_testing
