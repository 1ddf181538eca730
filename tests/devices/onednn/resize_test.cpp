// Resize and Upsample on the onednn device (oneDNN's resampling primitive): every attribute
// combination it claims, against the cpu reference device, up- and downsampling, whole and
// fractional ratios, scales and sizes, 3D/4D/5D, inside a blocked conv chain; and every
// combination it refuses, with its reason, still right on onednn,cpu.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

// One Resize (or Upsample) node reading input "x". Exactly one of scales/sizes is given; both
// become initializers (oneDNN needs them when compiling).
struct ResizeCase {
  std::string op = "Resize";
  int64_t opset = 13;
  std::vector<int64_t> x{};
  std::vector<float> scales{};
  std::vector<int64_t> sizes{};
  std::vector<std::pair<std::string, std::string>> strings{};  // string attributes
  std::vector<std::pair<std::string, int64_t>> ints{};         // int attributes
  std::vector<int64_t> axes{};                                 // opset 18
  std::vector<float> roi{};                                    // tf_crop_and_resize
};

ModelBuilder resize_model(const ResizeCase& c) {
  ModelBuilder m(c.opset);
  m.input("x", LOOM_DTYPE_FLOAT32, c.x);
  std::vector<std::string> inputs{"x"};
  auto scales_tensor = [&] {
    return float_tensor({static_cast<int64_t>(c.scales.size())}, c.scales);
  };
  if (c.op == "Upsample" && c.opset < 9) {
    // Upsample-7: scales is an attribute.
  } else if (c.op == "Upsample" || c.opset < 11) {
    m.initializer("scales", scales_tensor());
    inputs.push_back("scales");
  } else {
    m.initializer("roi", float_tensor({static_cast<int64_t>(c.roi.size())}, c.roi));
    m.initializer("scales", scales_tensor());
    inputs.insert(inputs.end(), {"roi", "scales"});
    if (!c.sizes.empty()) {
      m.initializer("sizes", int64_tensor({static_cast<int64_t>(c.sizes.size())}, c.sizes));
      inputs.push_back("sizes");
    }
  }
  NodeRef n = m.node(c.op, inputs, {"y"}, "resize");
  if (c.op == "Upsample" && c.opset < 9) n.floats("scales", c.scales);
  for (const auto& [name, value] : c.strings) n.s(name, value);
  for (const auto& [name, value] : c.ints) n.i(name, value);
  if (!c.axes.empty()) n.ints("axes", c.axes);
  m.output("y");
  return m;
}

// Claimed: runs on onednn alone and matches cpu.
void check_claimed(const ResizeCase& c) {
  SCOPED_TRACE(c.op + "-" + std::to_string(c.opset));
  check_unary_model(resize_model(c), c.x);
}

// Refused: onednn alone fails naming `reason`; onednn,cpu runs it on cpu and matches.
void check_refused(const ResizeCase& c, const std::string& reason) {
  SCOPED_TRACE(c.op + "-" + std::to_string(c.opset));
  expect_refused(resize_model(c), c.x, reason);
}

using S = std::vector<std::pair<std::string, std::string>>;

// ---- nearest -----------------------------------------------------------------------------

TEST(OnednnResize, NearestHalfPixelRoundPreferFloorUpsampling) {
  // The default modes: no ties when upsampling by whole factors.
  check_claimed({.x = {1, 3, 5, 7}, .scales = {1, 1, 2, 3}});
  check_claimed({.x = {2, 19, 4, 6}, .scales = {1, 1, 4, 2}});
}

TEST(OnednnResize, NearestRoundPreferCeilAnyRatio) {
  // half_pixel + round_prefer_ceil is oneDNN's own rule at every ratio.
  S modes{{"mode", "nearest"}, {"nearest_mode", "round_prefer_ceil"}};
  check_claimed({.x = {1, 3, 9, 10}, .sizes = {1, 3, 4, 5}, .strings = modes});         // down
  check_claimed({.x = {1, 5, 5, 7}, .sizes = {1, 5, 8, 11}, .strings = modes});         // up, 1.6
  check_claimed({.x = {1, 4, 6, 9}, .sizes = {1, 4, 10, 6}, .strings = modes});         // mixed
  check_claimed({.x = {1, 4, 6, 8}, .scales = {1, 1, 0.5f, 0.75f}, .strings = modes});  // scales
  S pytorch{{"mode", "nearest"},
            {"nearest_mode", "round_prefer_ceil"},
            {"coordinate_transformation_mode", "pytorch_half_pixel"}};
  check_claimed({.x = {1, 2, 7, 5}, .sizes = {1, 2, 3, 9}, .strings = pytorch});
}

TEST(OnednnResize, NearestWholeFactorUpsampleAndResize10) {
  // Asymmetric + floor (Upsample, Resize-10) equals oneDNN's rule for whole upsampling factors.
  check_claimed({.op = "Upsample", .opset = 9, .x = {1, 3, 4, 5}, .scales = {1, 1, 2, 2}});
  check_claimed({.op = "Upsample", .opset = 7, .x = {2, 6, 3, 4}, .scales = {1, 1, 3, 2}});
  check_claimed({.opset = 10, .x = {1, 17, 5, 3}, .scales = {1, 1, 2, 4}});
  check_claimed(
      {.x = {1, 3, 4, 5},
       .scales = {1, 1, 2, 3},
       .strings = {{"coordinate_transformation_mode", "asymmetric"}, {"nearest_mode", "floor"}}});
}

TEST(OnednnResize, NearestTfHalfPixelForNnFloor) {
  check_claimed({.opset = 11,
                 .x = {1, 3, 8, 9},
                 .sizes = {1, 3, 5, 13},
                 .strings = {{"coordinate_transformation_mode", "tf_half_pixel_for_nn"},
                             {"nearest_mode", "floor"}}});
}

TEST(OnednnResize, NearestThreeAndFiveDimensional) {
  check_claimed({.x = {2, 5, 9}, .scales = {1, 1, 3}});
  check_claimed({.x = {1, 3, 3, 4, 5}, .scales = {1, 1, 2, 2, 3}});
  check_claimed({.x = {1, 2, 6, 4, 5},
                 .sizes = {1, 2, 4, 7, 3},
                 .strings = {{"nearest_mode", "round_prefer_ceil"}}});
}

// ---- linear ------------------------------------------------------------------------------

TEST(OnednnResize, LinearHalfPixelUpAndDown) {
  S linear{{"mode", "linear"}};
  check_claimed({.x = {1, 3, 5, 7}, .scales = {1, 1, 2, 2}, .strings = linear});
  check_claimed({.x = {1, 3, 8, 12}, .scales = {1, 1, 0.5f, 0.25f}, .strings = linear});
  check_claimed({.x = {2, 19, 10, 7}, .sizes = {2, 19, 7, 10}, .strings = linear});  // 0.7, 1.43
  check_claimed({.x = {1, 5, 6, 9}, .scales = {1, 1, 1.5f, 0.6666667f}, .strings = linear});
}

TEST(OnednnResize, LinearPytorchHalfPixelAndExcludeOutside) {
  check_claimed(
      {.x = {1, 4, 9, 6},
       .sizes = {1, 4, 4, 11},
       .strings = {{"mode", "linear"}, {"coordinate_transformation_mode", "pytorch_half_pixel"}}});
  check_claimed({.x = {1, 4, 5, 6},
                 .scales = {1, 1, 2, 0.5f},
                 .strings = {{"mode", "linear"}},
                 .ints = {{"exclude_outside", 1}}});
}

TEST(OnednnResize, LinearThreeAndFiveDimensional) {
  S linear{{"mode", "linear"}};
  check_claimed({.x = {2, 7, 10}, .sizes = {2, 7, 25}, .strings = linear});
  check_claimed({.x = {1, 3, 4, 6, 5}, .scales = {1, 1, 2, 0.5f, 2}, .strings = linear});
}

TEST(OnednnResize, Opset18AxesKeepAspectRatioAndAntialiasUpsampling) {
  S linear{{"mode", "linear"}};
  check_claimed(
      {.opset = 18, .x = {1, 3, 6, 8}, .sizes = {9, 12}, .strings = linear, .axes = {2, 3}});
  check_claimed({.opset = 18,
                 .x = {1, 3, 6, 8},
                 .scales = {2, 0.5f},
                 .strings = {{"nearest_mode", "round_prefer_ceil"}},
                 .axes = {-1, -2}});
  // not_larger: one scale min(20 / 4, 18 / 6) = 3 for both axes, a whole ratio on each.
  S aspect{{"mode", "linear"}, {"keep_aspect_ratio_policy", "not_larger"}};
  check_claimed(
      {.opset = 18, .x = {1, 2, 4, 6}, .sizes = {20, 18}, .strings = aspect, .axes = {2, 3}});
  // antialias only widens the filter when downsampling.
  check_claimed({.opset = 18,
                 .x = {1, 3, 5, 4},
                 .scales = {1, 1, 2, 3},
                 .strings = linear,
                 .ints = {{"antialias", 1}}});
}

TEST(OnednnResize, Opset19HalfPixelSymmetric) {
  // With a whole-pixel ratio the symmetric adjustment is 1: plain half_pixel.
  check_claimed({.opset = 19,
                 .x = {1, 3, 4, 6},
                 .sizes = {1, 3, 10, 9},
                 .strings = {{"mode", "linear"},
                             {"coordinate_transformation_mode", "half_pixel_symmetric"}}});
  check_claimed({.opset = 19,
                 .x = {1, 3, 4, 6},
                 .scales = {1, 1, 2, 3},
                 .strings = {{"coordinate_transformation_mode", "half_pixel_symmetric"}}});
}

// A symbolic batch extent: the core's shape inference leaves the output's batch extent
// unknown (not the input's symbol), so onednn refuses the node for now; onednn,cpu stays right.
TEST(OnednnResize, SymbolicBatchWithScaleOne) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {-1, 5, 6, 7});
  m.initializer("roi", float_tensor({0}, {}));
  m.initializer("scales", float_tensor({4}, {1, 1, 2, 0.5f}));
  m.node("Resize", {"x", "roi", "scales"}, {"y"}).s("mode", "linear");
  m.output("y");
  RunOptions fallback;
  fallback.devices = "onednn,cpu";
  for (int64_t batch : {1, 3})
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {batch, 5, 6, 7}, 6)}},
                       fallback);
}

TEST(OnednnResize, IdentityResize) {
  check_claimed({.x = {1, 3, 5, 4}, .scales = {1, 1, 1, 1}, .strings = {{"mode", "linear"}}});
  check_claimed({.x = {1, 3, 5, 4}, .sizes = {1, 3, 5, 4}});
}

// ---- inside a conv chain -----------------------------------------------------------------

// The onednn device's steps for one compile of the model: with verbose=1 it logs the label of
// every primitive it created, reorders included.
std::string profile_steps(const ModelBuilder& m, const std::vector<int64_t>& shape) {
  std::string text;
  for (const std::string& line :
       run_model_capturing_log(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 4)}},
                               onednn_only("verbose=1"), "onednn"))
    text += line + "\n";
  return text;
}

ModelBuilder conv_resize_conv(int64_t channels, const std::string& mode) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, channels, 9, 11});
  m.initializer("w0", random_tensor(LOOM_DTYPE_FLOAT32, {channels, channels, 3, 3}, 2, -0.1, 0.1));
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {channels, channels, 3, 3}, 3, -0.1, 0.1));
  m.initializer("roi", float_tensor({0}, {}));
  m.initializer("scales", float_tensor({4}, {1, 1, 2, 2}));
  m.node("Conv", {"x", "w0"}, {"c0"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c0"}, {"r0"});
  m.node("Resize", {"r0", "roi", "scales"}, {"up"}, "up").s("mode", mode);
  m.node("Conv", {"up", "w1"}, {"y"}).ints("pads", {1, 1, 1, 1});
  m.output("y");
  return m;
}

TEST(OnednnResize, ConvResizeConvKeepsTheBlockedLayout) {
  // 64 channels: the 3x3 convolutions share nChw16c (Winograd's layout); 19: whatever oneDNN
  // picks for channels that are no multiple of 16.
  for (int64_t channels : {64, 19})
    for (const char* mode : {"nearest", "linear"}) {
      SCOPED_TRACE(std::to_string(channels) + " channels, " + mode);
      ModelBuilder m = conv_resize_conv(channels, mode);
      check_unary_model(m, {1, channels, 9, 11});
      std::string steps = profile_steps(m, {1, channels, 9, 11});
      EXPECT_NE(steps.find("Resize up"), std::string::npos) << steps;
      // The resize reads the conv's output and the next conv reads the resize's output as they
      // are: no reorder of r0 or up.
      EXPECT_EQ(steps.find("reorder r0"), std::string::npos) << steps;
      EXPECT_EQ(steps.find("reorder up"), std::string::npos) << steps;
    }
}

// ---- refused -----------------------------------------------------------------------------

TEST(OnednnResize, RefusesModesOneDnnDoesNotCompute) {
  check_refused({.x = {1, 3, 4, 5}, .scales = {1, 1, 2, 2}, .strings = {{"mode", "cubic"}}},
                "Resize: mode=cubic is not supported by oneDNN resampling");
  check_refused(
      {.x = {1, 3, 4, 5},
       .scales = {1, 1, 2, 2},
       .strings = {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}},
      "Resize: coordinate_transformation_mode=align_corners with linear is not "
      "supported by oneDNN resampling");
  check_refused({.x = {1, 3, 4, 5},
                 .sizes = {1, 3, 8, 9},
                 .strings = {{"coordinate_transformation_mode", "align_corners"}}},
                "coordinate_transformation_mode=align_corners is not supported");
  check_refused(
      {.x = {1, 3, 4, 5},
       .sizes = {1, 3, 3, 3},
       .strings = {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}},
       .roi = {0, 0, 0.2f, 0.1f, 1, 1, 0.9f, 0.8f}},
      "coordinate_transformation_mode=tf_crop_and_resize");
  check_refused({.x = {1, 3, 4, 5},
                 .scales = {1, 1, 2, 2},
                 .strings = {{"mode", "linear"}, {"coordinate_transformation_mode", "asymmetric"}}},
                "coordinate_transformation_mode=asymmetric with linear");
  check_refused({.op = "Upsample",
                 .opset = 9,
                 .x = {1, 3, 4, 5},
                 .scales = {1, 1, 2, 2},
                 .strings = {{"mode", "linear"}}},
                "Upsample: linear samples at asymmetric coordinates in opset 9");
  check_refused(
      {.opset = 10, .x = {1, 3, 4, 5}, .scales = {1, 1, 2, 2}, .strings = {{"mode", "linear"}}},
      "Resize: linear samples at asymmetric coordinates in opset 10");
}

TEST(OnednnResize, RefusesNearestIndicesThatDiffer) {
  // Halving with round_prefer_floor: every output pixel is a tie oneDNN rounds up.
  check_refused({.x = {1, 3, 8, 8}, .scales = {1, 1, 0.5f, 0.5f}},
                "nearest_mode=round_prefer_floor with coordinate_transformation_mode=half_pixel "
                "picks other pixels than oneDNN resampling on axis 2: 8 -> 4");
  check_refused({.x = {1, 3, 4, 5}, .sizes = {1, 3, 8, 10}, .strings = {{"nearest_mode", "floor"}}},
                "nearest_mode=floor with coordinate_transformation_mode=half_pixel");
  // Asymmetric floor with a fractional factor.
  check_refused({.op = "Upsample", .opset = 9, .x = {1, 3, 4, 6}, .scales = {1, 1, 1.5f, 1}},
                "nearest_mode=floor with coordinate_transformation_mode=asymmetric picks other "
                "pixels than oneDNN resampling on axis 2: 4 -> 6");
  check_refused({.x = {1, 3, 4, 5},
                 .sizes = {1, 3, 12, 15},
                 .strings = {{"coordinate_transformation_mode", "asymmetric"},
                             {"nearest_mode", "round_prefer_ceil"}}},
                "nearest_mode=round_prefer_ceil with coordinate_transformation_mode=asymmetric");
}

TEST(OnednnResize, RefusesScalesThatAreNotTheWholePixelRatio) {
  // 5 * 1.5 = 7.5 pixels, 7 made: ONNX interpolates by 1.5, oneDNN would by 7 / 5.
  check_refused({.x = {1, 3, 5, 4}, .scales = {1, 1, 1.5f, 2}, .strings = {{"mode", "linear"}}},
                "scale 1.5 gives 7.5 output pixels on axis 2: 5 -> 7");
}

TEST(OnednnResize, RefusesSymmetricHalfPixelWithAFractionalExtent) {
  check_refused({.opset = 19,
                 .x = {1, 3, 5, 4},
                 .scales = {1, 1, 1.5f, 2},
                 .strings = {{"coordinate_transformation_mode", "half_pixel_symmetric"}}},
                "scale 1.5 gives 7.5 output pixels on axis 2: 5 -> 7");
}

TEST(OnednnResize, RefusesAntialiasedDownsampling) {
  check_refused({.opset = 18,
                 .x = {1, 3, 8, 6},
                 .scales = {1, 1, 0.5f, 1},
                 .strings = {{"mode", "linear"}},
                 .ints = {{"antialias", 1}}},
                "antialias=1 widens the filter when downsampling (axis 2: 8 -> 4)");
}

TEST(OnednnResize, RefusesResizingBatchOrChannels) {
  check_refused({.x = {1, 3, 4, 5}, .scales = {1, 2, 2, 2}},
                "oneDNN resamples spatial axes only, not N or C (resizes axis 1: 3 -> 6)");
  check_refused({.x = {2, 3, 4, 5}, .sizes = {1, 3, 4, 5}, .strings = {{"mode", "linear"}}},
                "not N or C");
}

// `sizes` on an axis the model leaves symbolic: each run is planned for its shapes, so onednn
// takes the node where the batch the sizes name is the one fed (nothing resized along N), and
// refuses it, naming both extents, where the sizes would resize the batch.
TEST(OnednnResize, SizesOnASymbolicAxisArePlannedForTheFedShape) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {-1, 3, 4, 5});
  m.initializer("roi", float_tensor({0}, {}));
  m.initializer("scales", float_tensor({0}, {}));
  m.initializer("sizes", int64_tensor({4}, {2, 3, 8, 10}));
  m.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 5)}}, onednn_only());
  std::filesystem::path path = m.save();
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, {3, 3, 4, 5}, 5);
  try {
    run_model(path, {{"x", x}}, onednn_only());
    ADD_FAILURE() << "onednn claimed sizes that resize the batch";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("resizes axis 0: 3 -> 2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  RunOptions fallback;
  fallback.devices = "onednn,cpu";
  expect_matches_cpu(m, {{"x", x}}, fallback);
}

TEST(OnednnResize, RefusesOtherRanks) {
  check_refused({.x = {6, 8}, .scales = {2, 2}},
                "oneDNN resampling takes 3D to 5D tensors (N, C, spatial), not rank 2");
}

TEST(OnednnResize, RefusesScalesKnownOnlyAtRunTime) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 4, 5});
  m.input("scales", LOOM_DTYPE_FLOAT32, {4});
  m.initializer("roi", float_tensor({0}, {}));
  m.node("Resize", {"x", "roi", "scales"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> inputs{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 4, 5}, 1)},
      {"scales", float_tensor({4}, {1, 1, 2, 2})}};
  std::filesystem::path path = m.save();
  try {
    run_model(path, inputs, onednn_only());
    ADD_FAILURE() << "onednn claimed a Resize with run-time scales";
  } catch (const std::runtime_error& e) {
    // The output extents are unknown before the scales arrive.
    EXPECT_NE(std::string(e.what()).find("output shape depends on data"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
  RunOptions fallback;
  fallback.devices = "onednn,cpu";
  expect_matches_cpu(m, inputs, fallback);
}

}  // namespace
}  // namespace loom::onednn_testing
