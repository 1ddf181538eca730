// Resize/Upsample of the cpu device on tiny inputs against hand-computed values.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
}

// Resize-13 of a 1-D float input with either scales or sizes.
std::vector<float> resize1d(std::vector<float> in, std::vector<float> scales,
                            std::vector<int64_t> sizes, const std::string& mode,
                            const std::string& coord,
                            const std::function<void(KernelHarness&)>& extra = nullptr,
                            std::vector<float> roi = {}) {
  KernelHarness h("Resize", 13);
  h.input(make_filled<float>({static_cast<int64_t>(in.size())}, in));
  if (roi.empty())
    h.omitted_input();
  else
    h.input(make_filled<float>({static_cast<int64_t>(roi.size())}, roi));
  if (scales.empty())
    h.omitted_input();
  else
    h.input(make_filled<float>({1}, scales));
  if (!sizes.empty()) h.input(make_filled<int64_t>({1}, sizes));
  h.attr_string("mode", mode);
  h.attr_string("coordinate_transformation_mode", coord);
  if (extra) extra(h);
  return values_of<float>(h.run(1)[0]);
}

TEST(Resize, NearestUpsample2DScales) {
  KernelHarness h("Resize", 13);
  h.input(make_filled<float>({1, 1, 2, 2}, {1, 2, 3, 4}));
  h.omitted_input();
  h.input(make_filled<float>({4}, {1, 1, 2, 3}));
  h.attr_string("mode", "nearest");
  auto out = h.run(1);
  EXPECT_EQ(out[0].view.dims[2], 4);
  EXPECT_EQ(out[0].view.dims[3], 6);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                          3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Resize, NearestModesWithAsymmetricCoordinates) {
  // x_original = x / 2 = 0, .5, 1, 1.5, 2, 2.5, 3, 3.5.
  auto with_mode = [](const char* m) {
    return [m](KernelHarness& h) { h.attr_string("nearest_mode", m); };
  };
  std::vector<float> in = {0, 1, 2, 3};
  EXPECT_EQ(resize1d(in, {}, {8}, "nearest", "asymmetric", with_mode("round_prefer_floor")),
            (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(resize1d(in, {}, {8}, "nearest", "asymmetric", with_mode("round_prefer_ceil")),
            (std::vector<float>{0, 1, 1, 2, 2, 3, 3, 3}));
  EXPECT_EQ(resize1d(in, {}, {8}, "nearest", "asymmetric", with_mode("floor")),
            (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(resize1d(in, {}, {8}, "nearest", "asymmetric", with_mode("ceil")),
            (std::vector<float>{0, 1, 1, 2, 2, 3, 3, 3}));
}

TEST(Resize, LinearHalfPixelClampsAtTheBorders) {
  // x_original = (x + .5) / 2 - .5 = -.25, .25, .75, 1.25.
  expect_near(resize1d({1, 2}, {2}, {}, "linear", "half_pixel"), {1, 1.25, 1.75, 2});
}

TEST(Resize, LinearAlignCornersWithSizes) {
  expect_near(resize1d({1, 2, 3}, {}, {5}, "linear", "align_corners"), {1, 1.5, 2, 2.5, 3});
}

TEST(Resize, LinearPytorchHalfPixelSingleOutputTakesTheFirst) {
  expect_near(resize1d({4, 8, 6}, {}, {1}, "linear", "pytorch_half_pixel"), {4});
}

TEST(Resize, CubicAsymmetricAndExcludeOutside) {
  // x = 1 maps to 0.5: taps -1(->0), 0, 1, 2 with weights -0.09375, 0.59375, 0.59375,
  // -0.09375 for A = -0.75.
  auto out = resize1d({0, 1, 2, 3}, {2}, {}, "cubic", "asymmetric");
  EXPECT_NEAR(out[0], 0.0, 1e-6);
  EXPECT_NEAR(out[1], 0.40625, 1e-6);
  // exclude_outside drops tap -1 and renormalises by 1.09375.
  auto ex = resize1d({0, 1, 2, 3}, {2}, {}, "cubic", "asymmetric",
                     [](KernelHarness& h) { h.attr_int("exclude_outside", 1); });
  EXPECT_NEAR(ex[1], 0.40625 / 1.09375, 1e-6);
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  // roi [0.5, 1.5] of a length-4 axis, 3 outputs: x_original = 1.5, 3, 4.5 (outside).
  auto out =
      resize1d({0, 1, 2, 3}, {}, {3}, "linear", "tf_crop_and_resize",
               [](KernelHarness& h) { h.attr_float("extrapolation_value", 10.0f); }, {0.5f, 1.5f});
  expect_near(out, {1.5, 3, 10});
}

TEST(Resize, DownsampleScalesUseFloorOfOutputSize) {
  // 5 * 0.5 = 2.5 -> 2 outputs; half_pixel: x_original = 0.5, 2.5.
  expect_near(resize1d({0, 1, 2, 3, 4}, {0.5f}, {}, "linear", "half_pixel"), {0.5, 2.5});
}

// Resize-19 of a 1-D float input by a scale with half_pixel_symmetric coordinates.
std::vector<float> resize1d_symmetric(std::vector<float> in, float scale) {
  KernelHarness h("Resize", 19);
  h.input(make_filled<float>({static_cast<int64_t>(in.size())}, in));
  h.omitted_input();
  h.input(make_filled<float>({1}, {scale}));
  h.attr_string("mode", "linear");
  h.attr_string("coordinate_transformation_mode", "half_pixel_symmetric");
  return values_of<float>(h.run(1)[0]);
}

TEST(Resize, HalfPixelSymmetricCentresTheRoundedCanvas) {
  // 4 * 0.6 = 2.4 -> 2 outputs; the dropped 0.4 pixel shifts the samples by
  // 2 * (1 - 2 / 2.4) = 1/3: x_original = 0.5 + 1/3 and 2.1667 + 1/3.
  expect_near(resize1d_symmetric({1, 2, 3, 4}, 0.6f), {1.6666667f, 3.3333333f});
  // 2 * 2.94 = 5.88 -> 5 outputs (the ONNX upsample case's last axis).
  expect_near(resize1d_symmetric({1, 2}, 2.94f), {1, 1.1598639f, 1.5f, 1.8401361f, 2});
  // With a whole number of output pixels it is half_pixel.
  expect_near(resize1d_symmetric({0, 1, 2, 3}, 0.5f),
              resize1d({0, 1, 2, 3}, {0.5f}, {}, "linear", "half_pixel"));
}

TEST(Resize, KeepAspectRatioPolicyOfOpset18) {
  for (auto [policy, rows, cols] :
       {std::tuple{"not_larger", 2, 4}, std::tuple{"not_smaller", 4, 8}}) {
    KernelHarness h("Resize", 18);
    h.input(make_filled<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}));
    h.omitted_input();
    h.omitted_input();
    h.input(make_filled<int64_t>({2}, {4, 4}));
    h.attr_string("keep_aspect_ratio_policy", policy);
    auto out = h.run(1);
    EXPECT_EQ(out[0].view.dims[0], rows) << policy;
    EXPECT_EQ(out[0].view.dims[1], cols) << policy;
  }
}

TEST(Resize, AntialiasStretchesTheLinearFilterWhenDownscaling) {
  // 4 -> 2, half_pixel: x_original = 0.5 and 2.5. The triangle filter stretched by 2 gives
  // taps at -1..2 (resp. 1..4) with weights .125, .375, .375, .125 (edges clamped).
  KernelHarness h("Resize", 18);
  h.input(make_filled<float>({4}, {0, 1, 2, 3}));
  h.omitted_input();
  h.omitted_input();
  h.input(make_filled<int64_t>({1}, {2}));
  h.attr_string("mode", "linear");
  h.attr_int("antialias", 1);
  expect_near(values_of<float>(h.run(1)[0]), {0.625f, 2.375f});
}

TEST(Resize, IntegerLinearRoundsToNearest) {
  KernelHarness h("Resize", 13);
  h.input(make_filled<uint8_t>({2}, {10, 13}));
  h.omitted_input();
  h.input(make_filled<float>({1}, {2}));
  h.attr_string("mode", "linear");
  h.attr_string("coordinate_transformation_mode", "asymmetric");
  // x_original = 0, .5, 1, 1.5 -> 10, 11.5, 13, 13.
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{10, 12, 13, 13}));
}

TEST(Upsample, AttributeScalesOfOpset7AndLinearOfOpset9) {
  KernelHarness h7("Upsample", 7);
  h7.input(make_filled<float>({1, 2}, {1, 2}));
  h7.attr_floats("scales", {1, 2});
  EXPECT_EQ(values_of<float>(h7.run(1)[0]), (std::vector<float>{1, 1, 2, 2}));

  KernelHarness h9("Upsample", 9);
  h9.input(make_filled<float>({1, 2}, {1, 2}));
  h9.input(make_filled<float>({2}, {1, 2}));
  h9.attr_string("mode", "linear");
  expect_near(values_of<float>(h9.run(1)[0]), {1, 1.5, 2, 2});
}

TEST(Resize, ScalesAndSizesTogetherAreAnError) {
  KernelHarness h("Resize", 13);
  h.input(make_filled<float>({2}, {1, 2}));
  h.omitted_input();
  h.input(make_filled<float>({1}, {2}));
  h.input(make_filled<int64_t>({1}, {4}));
  EXPECT_THROW(h.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
