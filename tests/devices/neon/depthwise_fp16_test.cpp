// The packed depthwise kernel with precision=f16 (fp16 arithmetic where the CPU has ARMv8.2
// FP16; qemu's default CPU has it): 3x3 and 5x5, strides 1 and 2, dilations, pads, channel counts
// that leave padding lanes, odd planes, against the cpu reference device; f32 runs are untouched by
// the option's existence, and fp16 results do not depend on the thread count.
#include <sys/auxv.h>

#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

bool cpu_has_fp16_arithmetic() {
#if defined(HWCAP_FPHP) && defined(HWCAP_ASIMDHP)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  return (hwcap & HWCAP_FPHP) && (hwcap & HWCAP_ASIMDHP);
#else
  return false;
#endif
}

struct DepthwiseCase {
  int64_t n, c, h, w, k, stride;
  std::vector<int64_t> pads;
  int64_t dilation = 1;
};

// depthwise Conv -> LeakyRelu: two packed nodes, so the conv runs the NC4HW4 kernel.
ModelBuilder depthwise_chain(const DepthwiseCase& k, uint32_t seed) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {k.n, k.c, k.h, k.w});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {k.c, 1, k.k, k.k}, seed));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {k.c}, seed + 1));
  m.node("Conv", {"x", "w", "b"}, {"d"})
      .i("group", k.c)
      .ints("strides", {k.stride, k.stride})
      .ints("dilations", {k.dilation, k.dilation})
      .ints("pads", k.pads);
  m.node("LeakyRelu", {"d"}, {"y"}).f("alpha", 0.1f);
  m.output("y");
  return m;
}

Inputs chain_inputs(const DepthwiseCase& k, uint32_t seed) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {k.n, k.c, k.h, k.w}, seed + 2)}};
}

const DepthwiseCase kCases[] = {
    {1, 1, 7, 7, 3, 1, {1, 1, 1, 1}},   {1, 3, 9, 11, 3, 2, {1, 1, 1, 1}},
    {2, 5, 13, 13, 3, 1, {0, 1, 1, 0}}, {1, 17, 15, 9, 3, 2, {0, 0, 1, 1}},
    {1, 5, 11, 12, 5, 1, {2, 2, 2, 2}}, {1, 17, 19, 21, 5, 2, {2, 2, 2, 2}},
    {1, 3, 6, 5, 5, 1, {1, 2, 0, 1}},   {1, 1, 4, 3, 3, 2, {1, 1, 1, 1}},
    {1, 8, 33, 31, 3, 1, {1, 1, 1, 1}}, {1, 4, 2, 2, 5, 1, {2, 2, 2, 2}},
};

RunOptions f16_options(int threads = 3) {
  RunOptions o = on_neon(threads);
  o.device_options = "precision=f16";
  return o;
}

TEST(NeonDepthwiseFp16, PackedKernelMatchesCpu) {
  // fp16 inputs and weights (relative error 2^-11 each), products summed in fp16 over at most
  // 25 taps, then widened, plus the bias in f32: with values in [-1, 1] the partial sums stay
  // below ~5, so each of the <= 25 additions rounds by at most 2^-9; 2e-2 absolute and relative
  // is the f16 tolerance of the fp16 GEMM tests (device_test.cpp, conv3x3_test.cpp).
  const device_testing::Tolerance tolerance{2e-2, 2e-2};
  uint32_t seed = 300;
  for (const DepthwiseCase& k : kCases) {
    SCOPED_TRACE("c=" + std::to_string(k.c) + " " + std::to_string(k.h) + "x" +
                 std::to_string(k.w) + " k" + std::to_string(k.k) + " s" +
                 std::to_string(k.stride));
    device_testing::expect_matches_cpu(depthwise_chain(k, seed), chain_inputs(k, seed),
                                       f16_options(), &tolerance);
    seed += 10;
  }
}

TEST(NeonDepthwiseFp16, F32RunsAreUnchangedAndF16IsReallyHalf) {
  const DepthwiseCase k = {1, 17, 19, 21, 5, 2, {2, 2, 2, 2}};
  const auto path = depthwise_chain(k, 400).save();
  const Inputs inputs = chain_inputs(k, 400);
  RunOptions f32 = on_neon();
  f32.device_options = "precision=f32";
  const auto by_default = device_testing::run_model(path, inputs, on_neon());
  const auto explicit_f32 = device_testing::run_model(path, inputs, f32);
  const auto half = device_testing::run_model(path, inputs, f16_options());
  std::filesystem::remove(path);
  ASSERT_EQ(by_default.size(), 1u);
  ASSERT_EQ(explicit_f32.size(), 1u);
  ASSERT_EQ(half.size(), 1u);
  EXPECT_EQ(by_default[0].bytes, explicit_f32[0].bytes);
  if (cpu_has_fp16_arithmetic())
    EXPECT_NE(half[0].bytes, by_default[0].bytes) << "precision=f16 should compute in fp16";
  else
    EXPECT_EQ(half[0].bytes, by_default[0].bytes) << "without FP16 the device computes in f32";
}

TEST(NeonDepthwiseFp16, ThreadCountDoesNotChangeResults) {
  const DepthwiseCase k = {2, 17, 15, 9, 3, 2, {0, 0, 1, 1}};
  const auto path = depthwise_chain(k, 500).save();
  const Inputs inputs = chain_inputs(k, 500);
  const auto one = device_testing::run_model(path, inputs, f16_options(1));
  const auto four = device_testing::run_model(path, inputs, f16_options(4));
  std::filesystem::remove(path);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].bytes, four[i].bytes) << "output " << i;
}

}  // namespace
}  // namespace loom::neon_testing
