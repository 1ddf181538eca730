// Resize: nearest (every rounding mode) and linear with each coordinate transformation,
// upsampling and downsampling, by scales and by sizes.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(VulkanResize, ModesAndCoordinateTransformations) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const std::vector<int64_t> shape = {1, 3, 5, 7};
  for (const char* mode : {"nearest", "linear"}) {
    for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
      for (std::vector<float> scale : {std::vector<float>{1, 1, 2, 3}, {1, 1, 0.6f, 0.5f}}) {
        ModelBuilder m(13);
        m.input("x", LOOM_DTYPE_FLOAT32, shape);
        m.initializer("roi", float_tensor({0}, {}));
        m.initializer("scales", float_tensor({4}, scale));
        m.node("Resize", {"x", "roi", "scales"}, {"y"})
            .s("mode", mode)
            .s("coordinate_transformation_mode", coord);
        m.output("y");
        SCOPED_TRACE(std::string(mode) + " " + coord + " scale " + std::to_string(scale[2]));
        expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}}, on_vulkan());
      }
    }
  }
}

TEST(VulkanResize, NearestRoundingModesAndSizes) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const std::vector<int64_t> shape = {2, 2, 4, 6};
  for (const char* rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.initializer("roi", float_tensor({0}, {}));
    m.initializer("scales", float_tensor({0}, {}));
    m.initializer("sizes", int64_tensor({4}, {2, 2, 10, 9}));
    m.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"})
        .s("mode", "nearest")
        .s("nearest_mode", rounding)
        .s("coordinate_transformation_mode", "asymmetric");
    m.output("y");
    SCOPED_TRACE(rounding);
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 2)}}, on_vulkan());
  }
}

}  // namespace
}  // namespace loom::device_testing
