// AffineGrid-20 of the cpu device: the identity transform reproduces the base grid (with and
// without align_corners, 2-D and 3-D), a translation shifts it, and bad shapes are refused.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

Tensor affine_grid(std::vector<int64_t> theta_dims, std::vector<float> theta,
                   std::vector<int64_t> size, int align) {
  KernelHarness h("AffineGrid", 20);
  h.input(make_filled<float>(theta_dims, theta));
  h.input(make_filled<int64_t>({static_cast<int64_t>(size.size())}, size));
  h.attr_int("align_corners", align);
  return h.run(1)[0];
}

TEST(AffineGrid, IdentityGivesTheBaseGrid) {
  // H = 1, W = 2: x runs over the cell centres -0.5, 0.5 (or the corners -1, 1); y is the
  // single row's centre 0 (or -1 with align_corners).
  Tensor y = affine_grid({1, 2, 3}, {1, 0, 0, 0, 1, 0}, {1, 3, 1, 2}, 0);
  EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{-0.5f, 0, 0.5f, 0}));
  EXPECT_EQ(values_of<float>(affine_grid({1, 2, 3}, {1, 0, 0, 0, 1, 0}, {1, 3, 1, 2}, 1)),
            (std::vector<float>{-1, -1, 1, -1}));
}

TEST(AffineGrid, VolumetricTranslation) {
  // D = 2, H = 1, W = 1 with align_corners; theta adds (0.5, 0, -1).
  Tensor y = affine_grid({1, 3, 4}, {1, 0, 0, 0.5f, 0, 1, 0, 0, 0, 0, 1, -1}, {1, 1, 2, 1, 1}, 1);
  EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 2, 1, 1, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{-0.5f, -1, -2, -0.5f, -1, 0}));
}

TEST(AffineGrid, RefusesMismatchedShapes) {
  EXPECT_THROW(affine_grid({1, 2, 3}, std::vector<float>(6, 0), {1, 1, 2, 2, 2}, 0), Error);
  EXPECT_THROW(affine_grid({1, 2, 3}, std::vector<float>(6, 0), {2, 1, 2, 2}, 0), Error);
  EXPECT_THROW(affine_grid({1, 2, 3}, std::vector<float>(6, 0), {1, 1, -2, 2}, 0), Error);
  EXPECT_THROW(affine_grid({1, 2, 3}, std::vector<float>(6, 0), {1, 1, 2}, 0), Error);
}

}  // namespace
}  // namespace loom::cpu
