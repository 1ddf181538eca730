// Softmax/LogSoftmax/Hardmax: the opset < 13 "coerce to 2-D" semantics against opset 13's
// single-axis semantics, on a 3-D input where they differ.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

Tensor input() {
  return make_filled<float>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST(Softmax, Opset11CoercesTo2DFromAxis) {
  KernelHarness h("Softmax", 11);  // axis defaults to 1: rows of 4 elements
  h.input(input());
  std::vector<float> v = values_of<float>(h.run(1)[0]);
  float denom = std::exp(0.f) + std::exp(1.f) + std::exp(2.f) + std::exp(3.f);
  EXPECT_NEAR(v[0], std::exp(0.f) / denom, 1e-6);
  EXPECT_NEAR(v[3], std::exp(3.f) / denom, 1e-6);
  EXPECT_NEAR(v[4] + v[5] + v[6] + v[7], 1.0f, 1e-6);
}

TEST(Softmax, Opset13NormalisesOneAxis) {
  KernelHarness h("Softmax", 13);
  h.attr_int("axis", 1);  // pairs (0,2), (1,3), (4,6), (5,7)
  h.input(input());
  std::vector<float> v = values_of<float>(h.run(1)[0]);
  float e = 1.0f / (1.0f + std::exp(2.0f));
  EXPECT_NEAR(v[0], e, 1e-6);
  EXPECT_NEAR(v[2], 1 - e, 1e-6);
  EXPECT_NEAR(v[5], e, 1e-6);
  EXPECT_NEAR(v[7], 1 - e, 1e-6);
}

TEST(Softmax, DefaultAxisIsLastFromOpset13AndLargeValuesAreStable) {
  KernelHarness h("LogSoftmax", 13);
  h.input(make_filled<float>({2}, {1000, 1000}));
  std::vector<float> v = values_of<float>(h.run(1)[0]);
  EXPECT_NEAR(v[0], -std::log(2.0f), 1e-6);
  EXPECT_NEAR(v[1], -std::log(2.0f), 1e-6);
}

TEST(Hardmax, MarksTheFirstMaximum) {
  KernelHarness h("Hardmax", 13);
  h.attr_int("axis", 0);
  h.input(make_filled<float>({3, 2}, {1, 9, 5, 9, 5, 0}));
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{0, 1, 1, 0, 0, 0}));
}

TEST(Softmax, AxisOutOfRangeIsAnError) {
  KernelHarness h("Softmax", 13);
  h.attr_int("axis", 3);
  h.input(input());
  EXPECT_THROW(h.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
