// The direct 3x3 stride-2 dense convolution in NC4HW4 (kernels/conv3x3s2_pack4.*): input
// channel counts that fill 1..4 lanes of the last block, output counts that leave padding
// lanes, odd planes, asymmetric and auto pads, with and without bias, inside a packed chain
// (Conv -> Relu, so the conv reads and writes NC4HW4) and followed by a packed depthwise conv
// as in MobileNetV2's stem; against the cpu reference device.
#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

struct StemCase {
  int64_t n, cin, h, w, cout;
  std::vector<int64_t> pads;
  bool bias;
  std::string auto_pad = "";
};

ModelBuilder stem_chain(const StemCase& k, uint32_t seed, bool depthwise_after) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {k.n, k.cin, k.h, k.w});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {k.cout, k.cin, 3, 3}, seed));
  std::vector<std::string> inputs = {"x", "w"};
  if (k.bias) {
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {k.cout}, seed + 1));
    inputs.push_back("b");
  }
  auto conv = m.node("Conv", inputs, {"c"});
  conv.ints("strides", {2, 2});
  if (k.auto_pad.empty())
    conv.ints("pads", k.pads);
  else
    conv.s("auto_pad", k.auto_pad);
  m.node("Relu", {"c"}, {"r"});
  if (depthwise_after) {
    m.initializer("wd", random_tensor(LOOM_DTYPE_FLOAT32, {k.cout, 1, 3, 3}, seed + 3));
    m.node("Conv", {"r", "wd"}, {"y"}).i("group", k.cout).ints("pads", {1, 1, 1, 1});
    m.output("y");
  } else {
    m.output("r");
  }
  return m;
}

TEST(NeonConv3x3Stride2, DirectPackedKernelMatchesCpu) {
  const StemCase cases[] = {
      {1, 1, 9, 9, 5, {1, 1, 1, 1}, true},        {1, 3, 17, 15, 32, {1, 1, 1, 1}, true},
      {2, 4, 8, 11, 8, {0, 0, 1, 1}, false},      {1, 7, 13, 10, 5, {1, 0, 0, 1}, true},
      {1, 16, 11, 13, 32, {0, 1, 1, 0}, true},    {1, 3, 3, 3, 8, {0, 0, 0, 0}, true},
      {1, 5, 2, 1, 5, {1, 1, 1, 1}, false},       {1, 3, 24, 23, 8, {}, true, "SAME_UPPER"},
      {1, 7, 14, 21, 8, {}, false, "SAME_LOWER"}, {1, 4, 12, 12, 5, {2, 2, 2, 2}, true},
      {1, 17, 9, 9, 8, {1, 1, 1, 1}, true},  // above the direct kernel's limit: im2col + GEMM
  };
  uint32_t seed = 700;
  for (const StemCase& k : cases) {
    for (bool depthwise_after : {false, true}) {
      SCOPED_TRACE("cin=" + std::to_string(k.cin) + " cout=" + std::to_string(k.cout) + " " +
                   std::to_string(k.h) + "x" + std::to_string(k.w) +
                   (depthwise_after ? " + depthwise" : ""));
      ModelBuilder m = stem_chain(k, seed, depthwise_after);
      expect_neon_matches_cpu(
          m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {k.n, k.cin, k.h, k.w}, seed + 2)}});
    }
    seed += 10;
  }
}

TEST(NeonConv3x3Stride2, ThreadCountDoesNotChangeResults) {
  const StemCase k = {2, 3, 21, 19, 32, {1, 1, 1, 1}, true};
  const auto path = stem_chain(k, 800, true).save();
  const Inputs inputs = {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {k.n, k.cin, k.h, k.w}, 801)}};
  const auto one = device_testing::run_model(path, inputs, on_neon(1));
  const auto four = device_testing::run_model(path, inputs, on_neon(4));
  std::filesystem::remove(path);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].bytes, four[i].bytes) << "output " << i;
}

}  // namespace
}  // namespace loom::neon_testing
