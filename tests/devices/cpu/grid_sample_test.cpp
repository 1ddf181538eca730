// GridSample-20/22 of the cpu device: the renamed modes, 1-D and 3-D (volumetric) inputs, the
// padding rule that clamps or reflects a coordinate before fetching taps, and hostile grids.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

struct Sample {
  std::vector<int64_t> x_dims;
  std::vector<float> x;
  std::vector<int64_t> grid_dims;
  std::vector<float> grid;
};

Tensor grid_sample(const Sample& s, int64_t opset, const char* mode, const char* padding,
                   int align) {
  KernelHarness h("GridSample", opset);
  h.input(make_filled<float>(s.x_dims, s.x));
  h.input(make_filled<float>(s.grid_dims, s.grid));
  if (mode) h.attr_string("mode", mode);
  h.attr_string("padding_mode", padding);
  h.attr_int("align_corners", align);
  return h.run(1)[0];
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
}

TEST(GridSample, Opset20RenamesTheModes) {
  const Sample s{{1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 3, 2}, {-1, -1, 1, 1, 0, 0}};
  // linear is the default from opset 20 on.
  for (const char* mode : {static_cast<const char*>(nullptr), "linear"})
    EXPECT_EQ(values_of<float>(grid_sample(s, 20, mode, "zeros", 1)),
              (std::vector<float>{1, 4, 2.5f}));
  // Nearest: the centre (0.5, 0.5) rounds half to even, to pixel (0, 0).
  EXPECT_EQ(values_of<float>(grid_sample(s, 22, "nearest", "zeros", 1)),
            (std::vector<float>{1, 4, 1}));
}

TEST(GridSample, OldAndNewModeNamesAreNotMixed) {
  const Sample s{{1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 1, 2}, {0, 0}};
  EXPECT_THROW(grid_sample(s, 20, "bilinear", "zeros", 0), Error);
  EXPECT_THROW(grid_sample(s, 20, "bicubic", "zeros", 0), Error);
  EXPECT_THROW(grid_sample(s, 16, "linear", "zeros", 0), Error);
  EXPECT_THROW(grid_sample(s, 16, "cubic", "zeros", 0), Error);
  // Opset 16 defines only 4-D inputs.
  const Sample one_d{{1, 1, 4}, {0, 1, 2, 3}, {1, 1, 1}, {0}};
  EXPECT_THROW(grid_sample(one_d, 16, "bilinear", "zeros", 0), Error);
}

TEST(GridSample, OneDimensionalLinearAndCubic) {
  const Sample s{{1, 1, 4}, {0, 1, 2, 3}, {1, 3, 1}, {-1, 1, 0}};
  expect_near(values_of<float>(grid_sample(s, 20, "linear", "zeros", 1)), {0, 3, 1.5f});
  // Cubic convolution reproduces a linear ramp wherever all four taps are inside.
  const Sample mid{{1, 1, 6}, {0, 1, 2, 3, 4, 5}, {1, 1, 1}, {0}};
  expect_near(values_of<float>(grid_sample(mid, 20, "cubic", "zeros", 1)), {2.5f});
}

TEST(GridSample, VolumetricTrilinearTakesTheCubeMean) {
  // 2x2x2 cube; with align_corners the grid origin is the centre of the cube.
  Sample s{{1, 2, 2, 2, 2}, {}, {1, 1, 1, 2, 3}, {0, 0, 0, 1, -1, 1}};
  for (int i = 0; i < 16; ++i) s.x.push_back(static_cast<float>(i));
  Tensor y = grid_sample(s, 20, "linear", "zeros", 1);
  EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 2, 1, 1, 2}));
  // Point 2 is (x, y, z) = (1, -1, 1): d = 1, h = 0, w = 1, i.e. element 4 + 1 = 5.
  expect_near(values_of<float>(y), {3.5f, 5, 11.5f, 13});
  // Nearest on the same cube: the centre rounds half to even, to voxel (0, 0, 0).
  expect_near(values_of<float>(grid_sample(s, 20, "nearest", "zeros", 1)), {0, 5, 8, 13});
}

TEST(GridSample, CoordinatesPastTheBorderAreClampedBeforeCubicTaps) {
  // Without align_corners the border of 4 pixels is 3.5; g = 1.05 maps to x = 3.6, which
  // border padding clamps to 3 before the taps: exactly pixel 3.
  const Sample s{{1, 1, 1, 4}, {0, 1, 2, 3}, {1, 1, 1, 2}, {1.05f, 0}};
  expect_near(values_of<float>(grid_sample(s, 20, "cubic", "border", 0)), {3});
  // Reflection: x = 3.6 reflects to 3.4, between pixels 3 and (reflected) 3.
  expect_near(values_of<float>(grid_sample(s, 20, "linear", "reflection", 0)), {3});
}

TEST(GridSample, HostileGridsGiveZerosOrNan) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Sample s{
      {1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 4, 2}, {1e30f, -1e30f, inf, 0, nan, 0, 0, -inf}};
  for (const char* padding : {"zeros", "border", "reflection"})
    for (const char* mode : {"linear", "nearest", "cubic"}) {
      std::vector<float> y = values_of<float>(grid_sample(s, 20, mode, padding, 0));
      ASSERT_EQ(y.size(), 4u);
      EXPECT_TRUE(std::isnan(y[2])) << mode << " " << padding;
      if (std::string(padding) == "zeros") {
        EXPECT_EQ(y[0], 0) << mode;
        EXPECT_EQ(y[1], 0) << mode;
      }
    }
  const Sample bad{{1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 1, 3}, {0, 0, 0}};
  EXPECT_THROW(grid_sample(bad, 20, "linear", "zeros", 0), Error);
}

}  // namespace
}  // namespace loom::cpu
