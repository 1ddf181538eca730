// Resize against the cpu device: nearest (every nearest_mode) and linear, the coordinate
// transformation modes, up- and downscaling, scales and sizes inputs.
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

TEST(OpenclResize, ModesAndCoordinateTransforms) {
  LOOM_REQUIRE_OPENCL();
  const char* const transforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                    "asymmetric"};
  for (const char* mode : {"nearest", "linear"})
    for (const char* ctm : transforms)
      for (std::vector<float> scales :
           {std::vector<float>{1, 1, 2, 3}, std::vector<float>{1, 1, 0.5f, 0.75f}}) {
        ModelBuilder m;
        m.input("x", LOOM_DTYPE_FLOAT32, {1, 2, 6, 8});
        m.initializer("scales", float_tensor({4}, scales));
        m.node("Resize", {"x", "", "scales"}, {"y"})
            .s("mode", mode)
            .s("coordinate_transformation_mode", ctm);
        m.output("y");
        SCOPED_TRACE(std::string(mode) + " " + ctm + " scale " + std::to_string(scales[2]));
        expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 6, 8}, 1)}},
                           on_opencl());
      }
}

TEST(OpenclResize, NearestModesWithSizes) {
  LOOM_REQUIRE_OPENCL();
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 5, 5});
    m.initializer("sizes", int64_tensor({4}, {2, 3, 8, 13}));
    m.node("Resize", {"x", "", "", "sizes"}, {"y"}).s("nearest_mode", nearest);
    m.output("y");
    SCOPED_TRACE(nearest);
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 5}, 2)}}, on_opencl());
  }
}

}  // namespace
}  // namespace loom::device_testing
