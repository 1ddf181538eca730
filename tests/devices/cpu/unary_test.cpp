// Unary math, activations and comparisons: the cases where a plain C++ expression would be
// wrong (rounding halves, integer minimum, NaN handling, half precision, string equality).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "testing/kernel_harness.hpp"
#include "types.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

TEST(Unary, RoundHalvesToEven) {
  KernelHarness h("Round", 11);
  h.input(make_filled<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}));
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{0, 2, 2, -0, -2, 2}));
}

TEST(Unary, AbsAndNegOfTheIntegerMinimumWrap) {
  const int8_t lo = std::numeric_limits<int8_t>::min();
  KernelHarness a("Abs", 13);
  a.input(make_filled<int8_t>({3}, {lo, -3, 4}));
  EXPECT_EQ(values_of<int8_t>(a.run(1)[0]), (std::vector<int8_t>{lo, 3, 4}));
  KernelHarness n("Neg", 13);
  n.input(make_filled<int8_t>({2}, {lo, 5}));
  EXPECT_EQ(values_of<int8_t>(n.run(1)[0]), (std::vector<int8_t>{lo, -5}));
}

TEST(Unary, HalfPrecisionComputesInFloat) {
  Tensor x = make_tensor(LOOM_DTYPE_FLOAT16, std::vector<int64_t>{2});
  auto* p = static_cast<Half*>(x.view.data);
  p[0] = Half(4.0f);
  p[1] = Half(0.25f);
  KernelHarness h("Sqrt", 13);
  h.input(std::move(x));
  Tensor out = h.run(1)[0];
  ASSERT_EQ(out.view.dtype, LOOM_DTYPE_FLOAT16);
  const auto* r = static_cast<const Half*>(out.view.data);
  EXPECT_EQ(static_cast<float>(r[0]), 2.0f);
  EXPECT_EQ(static_cast<float>(r[1]), 0.5f);
}

TEST(Unary, IsInfHonoursItsDirectionAttributes) {
  const float inf = std::numeric_limits<float>::infinity();
  KernelHarness h("IsInf", 10);
  h.attr_int("detect_negative", 0);
  h.input(make_filled<float>({3}, {inf, -inf, 1.0f}));
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{1, 0, 0}));
}

TEST(Unary, SignKeepsNaN) {
  KernelHarness h("Sign", 13);
  h.input(make_filled<float>({4}, {-2, 0, 3, std::nanf("")}));
  std::vector<float> v = values_of<float>(h.run(1)[0]);
  EXPECT_EQ(v[0], -1);
  EXPECT_EQ(v[1], 0);
  EXPECT_EQ(v[2], 1);
  EXPECT_TRUE(std::isnan(v[3]));
}

TEST(Activation, SigmoidAndSoftplusDoNotOverflow) {
  KernelHarness s("Sigmoid", 13);
  s.input(make_filled<float>({2}, {-1000, 1000}));
  EXPECT_EQ(values_of<float>(s.run(1)[0]), (std::vector<float>{0, 1}));
  KernelHarness p("Softplus", 1);
  p.input(make_filled<float>({2}, {1000, -1000}));
  EXPECT_EQ(values_of<float>(p.run(1)[0]), (std::vector<float>{1000, 0}));
}

TEST(Activation, PReluBroadcastsTheSlopeOverChannels) {
  KernelHarness h("PRelu", 16);
  h.input(make_filled<float>({1, 2, 2}, {-1, 2, -3, 4}));
  h.input(make_filled<float>({2, 1}, {0.5f, 0.25f}));
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
}

TEST(Compare, EqualOnIntegersAndBroadcastLess) {
  KernelHarness e("Equal", 13);
  e.input(make_filled<int64_t>({3}, {1, 2, 3}));
  e.input(make_filled<int64_t>({1}, {2}));
  EXPECT_EQ(values_of<uint8_t>(e.run(1)[0]), (std::vector<uint8_t>{0, 1, 0}));
  KernelHarness l("LessOrEqual", 16);
  l.input(make_filled<float>({2, 1}, {1, 3}));
  l.input(make_filled<float>({2}, {2, 3}));
  EXPECT_EQ(values_of<uint8_t>(l.run(1)[0]), (std::vector<uint8_t>{1, 1, 0, 1}));
}

TEST(Logical, XorBroadcasts) {
  KernelHarness h("Xor", 7);
  h.input(make_filled<bool>({2, 2}, {true, false, true, true}));
  h.input(make_filled<bool>({2}, {true, false}));
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{0, 0, 0, 1}));
}

}  // namespace
}  // namespace loom::cpu
