// ScatterElements, Scatter (deprecated alias) and ScatterND of the cpu device, with reductions.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

TEST(ScatterElements, AxisOneWithNegativeIndex) {
  KernelHarness h("ScatterElements", 13);
  h.input(make_filled<float>({1, 5}, {1, 2, 3, 4, 5}));
  h.input(make_filled<int64_t>({1, 2}, {1, -2}));
  h.input(make_filled<float>({1, 2}, {10, 20}));
  h.attr_int("axis", 1);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 10, 3, 20, 5}));
}

TEST(ScatterElements, AddReductionAccumulatesDuplicates) {
  KernelHarness h("ScatterElements", 16);
  h.input(make_filled<int32_t>({3}, {1, 1, 1}));
  h.input(make_filled<int64_t>({3}, {0, 0, 2}));
  h.input(make_filled<int32_t>({3}, {5, 6, 7}));
  h.attr_string("reduction", "add");
  EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{12, 1, 8}));
}

TEST(ScatterElements, MaxNeedsOpset18) {
  KernelHarness h("ScatterElements", 18);
  h.input(make_filled<float>({2}, {3, 3}));
  h.input(make_filled<int64_t>({2}, {0, 1}));
  h.input(make_filled<float>({2}, {1, 9}));
  h.attr_string("reduction", "max");
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{3, 9}));
  KernelHarness old("ScatterElements", 16);
  old.input(make_filled<float>({2}, {3, 3}));
  old.input(make_filled<int64_t>({2}, {0, 1}));
  old.input(make_filled<float>({2}, {1, 9}));
  old.attr_string("reduction", "max");
  EXPECT_THROW(old.run(1), Error);
}

TEST(Scatter, DeprecatedOpIsScatterElements) {
  KernelHarness h("Scatter", 9);
  h.input(make_filled<float>({2, 2}, {0, 0, 0, 0}));
  h.input(make_filled<int64_t>({1, 2}, {1, 0}));
  h.input(make_filled<float>({1, 2}, {5, 6}));
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{0, 6, 5, 0}));
}

TEST(ScatterND, SlicesAndMulReduction) {
  KernelHarness h("ScatterND", 16);
  h.input(make_filled<float>({2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({2, 1}, {1, 1}));
  h.input(make_filled<float>({2, 2}, {2, 3, 10, 10}));
  h.attr_string("reduction", "mul");
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 2, 60, 120}));
}

TEST(ScatterND, OutOfRangeIndexIsAnError) {
  KernelHarness h("ScatterND", 13);
  h.input(make_filled<float>({2}, {1, 2}));
  h.input(make_filled<int64_t>({1, 1}, {2}));
  h.input(make_filled<float>({1}, {5}));
  EXPECT_THROW(h.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
