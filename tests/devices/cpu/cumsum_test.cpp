// CumSum: inclusive/exclusive, forward/reverse, axes and integer types.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> run_cumsum(int exclusive, int reverse, int64_t axis) {
  KernelHarness h("CumSum", 14);
  h.attr_int("exclusive", exclusive);
  h.attr_int("reverse", reverse);
  h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  h.input(make_filled<int64_t>({}, {axis}));
  return values_of<float>(h.run(1)[0]);
}

TEST(CumSumKernel, AllModes) {
  EXPECT_EQ(run_cumsum(0, 0, 1), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run_cumsum(1, 0, 1), (std::vector<float>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(run_cumsum(0, 1, 1), (std::vector<float>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(run_cumsum(1, 1, -1), (std::vector<float>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(run_cumsum(0, 0, 0), (std::vector<float>{1, 2, 3, 5, 7, 9}));
}

TEST(CumSumKernel, Int32AxisTensorAndIntegerData) {
  KernelHarness h("CumSum", 11);
  h.input(make_filled<int32_t>({4}, {1, -2, 3, 10}));
  h.input(make_filled<int32_t>({}, {0}));
  EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{1, -1, 2, 12}));
}

TEST(CumSumKernel, AxisOutOfRangeIsAnError) {
  KernelHarness h("CumSum", 14);
  h.input(make_filled<float>({2}, {1, 2}));
  h.input(make_filled<int64_t>({}, {1}));
  EXPECT_THROW(h.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
