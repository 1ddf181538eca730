// TopK: ties keep index order, smallest/largest, axis handling, NaN ordering, K validation.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

TEST(TopKKernel, TiesKeepLowerIndexFirst) {
  KernelHarness h("TopK", 11);
  h.input(make_filled<float>({6}, {1.f, 3.f, 3.f, 2.f, 3.f, 0.f}));
  h.input(make_filled<int64_t>({1}, {4}));
  auto out = h.run(2);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{3.f, 3.f, 3.f, 2.f}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 2, 4, 3}));
}

TEST(TopKKernel, SmallestAlongAxis0) {
  KernelHarness h("TopK", 11);
  h.attr_int("axis", 0);
  h.attr_int("largest", 0);
  h.input(make_filled<int32_t>({3, 2}, {5, 1, 2, 1, 9, 0}));
  h.input(make_filled<int64_t>({1}, {2}));
  auto out = h.run(2);
  EXPECT_EQ(out[0].view.dims[0], 2);
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{2, 0, 5, 1}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 2, 0, 0}));
}

TEST(TopKKernel, NanCountsAsLargest) {
  KernelHarness h("TopK", 11);
  h.input(make_filled<float>({3}, {1.f, NAN, 2.f}));
  h.input(make_filled<int64_t>({1}, {2}));
  auto out = h.run(2);
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 2}));
}

TEST(TopKKernel, Opset1UsesTheKAttribute) {
  KernelHarness h("TopK", 1);
  h.attr_int("k", 1);
  h.input(make_filled<float>({2, 2}, {1.f, 4.f, 3.f, 2.f}));
  auto out = h.run(2);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{4.f, 3.f}));
}

TEST(TopKKernel, KLargerThanAxisIsAnError) {
  KernelHarness h("TopK", 11);
  h.input(make_filled<float>({2}, {1.f, 2.f}));
  h.input(make_filled<int64_t>({1}, {3}));
  EXPECT_THROW(h.run(2), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
