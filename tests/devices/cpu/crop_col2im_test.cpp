// CenterCropPad-18 and Col2Im-18 of the cpu device on hand-computed cases.
#include <gtest/gtest.h>

#include <numeric>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

TEST(CenterCropPad, CropsAndPadsAroundTheCentre) {
  // [3, 4] -> [2, 6]: rows 0..1 (odd difference: the extra row goes at the end), columns
  // padded by one on each side.
  KernelHarness h("CenterCropPad", 18);
  h.input(make_filled<float>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  h.input(make_filled<int64_t>({2}, {2, 6}));
  Tensor y = h.run(1)[0];
  EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0}));
  // Only the listed (negative) axis: [1, 5] cropped to [1, 3] keeps elements 1..3.
  KernelHarness a("CenterCropPad", 18);
  a.input(make_filled<int32_t>({1, 5}, {1, 2, 3, 4, 5}));
  a.input(make_filled<int64_t>({1}, {3}));
  a.attr_ints("axes", {-1});
  EXPECT_EQ(values_of<int32_t>(a.run(1)[0]), (std::vector<int32_t>{2, 3, 4}));
  KernelHarness bad("CenterCropPad", 18);
  bad.input(make_filled<float>({2}, {1, 2}));
  bad.input(make_filled<int64_t>({2}, {1, 1}));
  EXPECT_THROW(bad.run(1), Error);
}

TEST(Col2Im, SumsOverlappingBlocks) {
  // 1-D image of 4 with blocks of 2 at stride 1: 3 blocks; each pixel sums the blocks over it.
  KernelHarness h("Col2Im", 18);
  h.input(make_filled<float>({1, 2, 3}, {1, 1, 1, 10, 10, 10}));
  h.input(make_filled<int64_t>({1}, {4}));
  h.input(make_filled<int64_t>({1}, {2}));
  Tensor y = h.run(1)[0];
  EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 1, 4}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 11, 11, 10}));
}

TEST(Col2Im, InvertsNonOverlappingTwoDimensionalBlocks) {
  // One 2x2 block covering a 2x2 image: column k of the block is pixel k.
  KernelHarness h("Col2Im", 18);
  h.input(make_filled<float>({1, 4, 1}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({2}, {2, 2}));
  h.input(make_filled<int64_t>({2}, {2, 2}));
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 2, 3, 4}));
  KernelHarness bad("Col2Im", 18);
  bad.input(make_filled<float>({1, 4, 2}, std::vector<float>(8, 0)));
  bad.input(make_filled<int64_t>({2}, {2, 2}));
  bad.input(make_filled<int64_t>({2}, {2, 2}));
  EXPECT_THROW(bad.run(1), Error);
  KernelHarness huge("Col2Im", 18);
  huge.input(make_filled<float>({1, 1, 1}, {0}));
  huge.input(make_filled<int64_t>({1}, {INT64_MAX}));
  huge.input(make_filled<int64_t>({1}, {1}));
  EXPECT_THROW(huge.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
