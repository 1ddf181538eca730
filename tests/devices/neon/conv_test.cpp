// Conv on the neon device against cpu: the packed-GEMM path (1x1 direct and im2col), Winograd
// (3x3 stride 1), grouped convolutions and the direct depthwise kernels, over odd sizes,
// strides, pads and dilations.
#include "conv_case.hpp"

namespace loom::neon_testing {
namespace {

TEST(NeonConv, PointwiseGemmPath) {
  const ConvCase cases[] = {
      {"1x1 direct", 1, 16, 7, 9, 24, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
      {"1x1 odd channels", 2, 3, 5, 5, 13, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {"1x1 stride 2", 1, 8, 9, 11, 5, 1, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {"1x1 padded", 1, 4, 6, 6, 9, 1, 1, 1, {1, 1}, {1, 0, 0, 1}, {1, 1}, true},
      {"1x1 large K", 1, 67, 4, 3, 17, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
  };
  uint32_t seed = 10;
  for (const ConvCase& k : cases) run_conv(k, seed += 10);
}

TEST(NeonConv, GeneralIm2colPath) {
  const ConvCase cases[] = {
      {"3x3 pad 1", 1, 8, 10, 10, 16, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"3x3 stride 2", 2, 3, 13, 11, 10, 3, 3, 1, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {"3x3 no pad odd", 1, 5, 7, 9, 7, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {"5x3 asymmetric pads", 1, 4, 9, 8, 6, 5, 3, 1, {1, 2}, {2, 0, 1, 1}, {1, 1}, true},
      {"3x3 dilation 2", 1, 3, 12, 10, 4, 3, 3, 1, {1, 1}, {2, 2, 2, 2}, {2, 2}, true},
      {"7x7 stride 2", 1, 3, 17, 17, 8, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}, true},
      {"grouped 2", 1, 8, 6, 7, 12, 3, 3, 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"grouped 3 stride 2", 2, 9, 9, 9, 6, 3, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {"SAME_UPPER", 1, 4, 7, 6, 5, 3, 3, 1, {2, 2}, {}, {1, 1}, true, "SAME_UPPER"},
      {"SAME_LOWER", 1, 4, 8, 5, 5, 4, 4, 1, {1, 1}, {}, {1, 1}, true, "SAME_LOWER"},
      {"VALID", 1, 2, 8, 9, 3, 3, 2, 1, {2, 1}, {}, {1, 1}, true, "VALID"},
  };
  uint32_t seed = 100;
  for (const ConvCase& k : cases) run_conv(k, seed += 10);
}

TEST(NeonConv, DepthwiseDirectKernel) {
  const ConvCase cases[] = {
      {"dw 3x3 s1", 1, 8, 14, 14, 8, 3, 3, 8, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"dw 3x3 s2", 1, 5, 15, 17, 5, 3, 3, 5, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {"dw 3x3 s2 even", 2, 3, 16, 16, 3, 3, 3, 3, {2, 2}, {0, 0, 1, 1}, {1, 1}, false},
      {"dw 5x5 s1", 1, 4, 13, 11, 4, 5, 5, 4, {1, 1}, {2, 2, 2, 2}, {1, 1}, true},
      {"dw 5x5 s2", 1, 6, 19, 21, 6, 5, 5, 6, {2, 2}, {2, 2, 2, 2}, {1, 1}, true},
      {"dw narrow rows", 1, 2, 3, 4, 2, 3, 3, 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"dw wide rows", 1, 2, 5, 67, 2, 3, 3, 2, {1, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {"dw dilated", 1, 3, 11, 12, 3, 3, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, true},
      {"dw stride 3", 1, 3, 11, 13, 3, 3, 3, 3, {3, 3}, {1, 1, 1, 1}, {1, 1}, true},
  };
  uint32_t seed = 200;
  for (const ConvCase& k : cases) run_conv(k, seed += 10);
}

TEST(NeonConv, RuntimeWeightsGoToAnotherDevice) {
  // Weights that are graph inputs cannot be packed at compile time: neon refuses the node, so
  // with no fallback the session cannot be created.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 2, 4, 4});
  m.input("w", LOOM_DTYPE_FLOAT32, {2, 2, 1, 1});
  m.node("Conv", {"x", "w"}, {"y"});
  m.output("y");
  auto path = m.save();
  EXPECT_THROW(
      device_testing::run_model(path,
                                {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 4, 4}, 1)},
                                 {"w", random_tensor(LOOM_DTYPE_FLOAT32, {2, 2, 1, 1}, 2)}},
                                on_neon()),
      std::exception);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::neon_testing
