// Conv against the cpu device: the pointwise GEMM path, im2col + GEMM (strides, pads,
// dilations, groups, batches, odd sizes, 1-D), the depthwise kernel, and the compile-time
// fusions (BatchNormalization folded into the weights, Relu/Clip in the epilogue).
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

// Cases name only the fields they set (designated initializers); GCC 12 still warns about the
// omitted ones, which keep their defaults by design.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;  // NCHW input, [OC, C/group, KH, KW] weights
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  bool bias = true;
  std::string auto_pad;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesCpu) {
  LOOM_REQUIRE_OPENCL();
  const ConvCase& c = GetParam();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, c.x);
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, c.w, 2));
  std::vector<std::string> inputs = {"x", "w"};
  if (c.bias) {
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {c.w[0]}, 3));
    inputs.push_back("b");
  }
  NodeRef node = m.node("Conv", inputs, {"y"});
  if (!c.strides.empty()) node.ints("strides", c.strides);
  if (!c.pads.empty()) node.ints("pads", c.pads);
  if (!c.dilations.empty()) node.ints("dilations", c.dilations);
  if (c.group != 1) node.i("group", c.group);
  if (!c.auto_pad.empty()) node.s("auto_pad", c.auto_pad);
  m.output("y");
  for (const char* gemm : {"tiled", "blocked"}) {
    RunOptions options = on_opencl();
    options.device_options = std::string("gemm=") + gemm;
    SCOPED_TRACE(gemm);
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.x, 1)}}, options);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(
        ConvCase{.name = "Pointwise", .x = {1, 16, 7, 9}, .w = {24, 16, 1, 1}},
        ConvCase{.name = "PointwiseBatch2NoBias",
                 .x = {2, 5, 3, 3},
                 .w = {7, 5, 1, 1},
                 .group = 1,
                 .bias = false},
        ConvCase{
            .name = "PointwiseStride2", .x = {1, 8, 9, 9}, .w = {12, 8, 1, 1}, .strides = {2, 2}},
        ConvCase{.name = "ThreeByThreePad1",
                 .x = {1, 3, 11, 13},
                 .w = {8, 3, 3, 3},
                 .pads = {1, 1, 1, 1}},
        ConvCase{.name = "ThreeByThreeStride2",
                 .x = {2, 4, 10, 9},
                 .w = {6, 4, 3, 3},
                 .strides = {2, 2},
                 .pads = {1, 1, 1, 1}},
        ConvCase{.name = "SevenBySevenStem",
                 .x = {1, 3, 32, 32},
                 .w = {16, 3, 7, 7},
                 .strides = {2, 2},
                 .pads = {3, 3, 3, 3}},
        ConvCase{.name = "Dilated",
                 .x = {1, 4, 12, 12},
                 .w = {5, 4, 3, 3},
                 .pads = {2, 2, 2, 2},
                 .dilations = {2, 2}},
        ConvCase{
            .name = "AsymmetricPads", .x = {1, 3, 8, 7}, .w = {4, 3, 3, 2}, .pads = {0, 1, 2, 0}},
        ConvCase{.name = "AutoPadSameUpper",
                 .x = {1, 3, 9, 8},
                 .w = {4, 3, 3, 3},
                 .strides = {2, 2},
                 .group = 1,
                 .bias = true,
                 .auto_pad = "SAME_UPPER"},
        ConvCase{.name = "AutoPadSameLower",
                 .x = {1, 3, 9, 8},
                 .w = {4, 3, 4, 4},
                 .strides = {1, 1},
                 .group = 1,
                 .bias = true,
                 .auto_pad = "SAME_LOWER"},
        ConvCase{.name = "Grouped",
                 .x = {1, 8, 9, 9},
                 .w = {12, 2, 3, 3},
                 .pads = {1, 1, 1, 1},
                 .group = 4},
        ConvCase{.name = "GroupedBatch2Strided",
                 .x = {2, 6, 8, 8},
                 .w = {6, 3, 3, 3},
                 .strides = {2, 2},
                 .pads = {1, 1, 1, 1},
                 .group = 2},
        ConvCase{.name = "Depthwise",
                 .x = {1, 32, 14, 14},
                 .w = {32, 1, 3, 3},
                 .pads = {1, 1, 1, 1},
                 .group = 32},
        ConvCase{.name = "DepthwiseStride2Batch2",
                 .x = {2, 16, 15, 15},
                 .w = {16, 1, 3, 3},
                 .strides = {2, 2},
                 .pads = {1, 1, 1, 1},
                 .group = 16},
        ConvCase{.name = "DepthwiseMultiplier2",
                 .x = {1, 4, 7, 7},
                 .w = {8, 1, 5, 5},
                 .pads = {2, 2, 2, 2},
                 .group = 4},
        ConvCase{.name = "LargeChannels",
                 .x = {1, 96, 14, 14},
                 .w = {80, 96, 3, 3},
                 .pads = {1, 1, 1, 1}},
        ConvCase{.name = "OneDimensional",
                 .x = {2, 4, 20},
                 .w = {6, 4, 3},
                 .strides = {2},
                 .pads = {1, 1}},
        ConvCase{.name = "OneDimensionalDepthwise",
                 .x = {1, 6, 17},
                 .w = {6, 1, 5},
                 .pads = {2, 2},
                 .group = 6}),
    [](const auto& info) { return info.param.name; });

// Conv -> BatchNormalization -> Relu and Conv -> Clip: folded and fused at compile time.
TEST(OpenclConvFusion, BatchNormAndActivationsFold) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 6, 10, 10});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {8, 6, 3, 3}, 1));
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 2, 0.5, 1.5));
  m.initializer("bn_b", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 3));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 4));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 5, 0.5, 2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {8, 1, 3, 3}, 6));
  m.initializer("b2", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 7));
  m.initializer("lo", float_tensor({}, {0.0f}));
  m.initializer("hi", float_tensor({}, {0.5f}));
  m.node("Conv", {"x", "w1"}, {"c1"}).ints("pads", {1, 1, 1, 1});
  m.node("BatchNormalization", {"c1", "s", "bn_b", "mean", "var"}, {"n1"});
  m.node("Relu", {"n1"}, {"r1"});
  m.node("Conv", {"r1", "w2", "b2"}, {"c2"}).i("group", 8).ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"c2", "lo", "hi"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 6, 10, 10}, 8)}}, on_opencl());
}

// A fused-away intermediate that is also a graph output must still be produced.
TEST(OpenclConvFusion, ConvOutputReadElsewhereIsNotFused) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 6, 6});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {4, 3, 1, 1}, 1));
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Relu", {"c"}, {"y"});
  m.output("c");
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 6, 6}, 2)}}, on_opencl());
}

// MobileNetV2's export: Constant nodes for Clip's bounds sit between the Conv and the Clip.
// The fused Conv writes the Clip's output early, so the arena must keep it apart from the
// Constant outputs made in between (a plan made for the unfused graph would overlap them).
TEST(OpenclConvFusion, ConstantNodesBetweenConvAndClip) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 9, 9});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {16, 8, 1, 1}, 1));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {16, 1, 3, 3}, 2));
  m.initializer("w3", random_tensor(LOOM_DTYPE_FLOAT32, {8, 16, 1, 1}, 3));
  m.node("Conv", {"x", "w1"}, {"c1"});
  m.node("Constant", {}, {"lo1"}).floats("value_floats", {0.0f});
  m.node("Constant", {}, {"hi1"}).floats("value_floats", {0.5f});
  m.node("Clip", {"c1", "lo1", "hi1"}, {"r1"});
  m.node("Conv", {"r1", "w2"}, {"c2"}).i("group", 16).ints("pads", {1, 1, 1, 1});
  m.node("Constant", {}, {"lo2"}).floats("value_floats", {0.0f});
  m.node("Constant", {}, {"hi2"}).floats("value_floats", {0.25f});
  m.node("Clip", {"c2", "lo2", "hi2"}, {"r2"});
  m.node("Conv", {"r2", "w3"}, {"c3"});
  m.node("Add", {"c3", "x"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 9, 9}, 4)}}, on_opencl());
}

// Clip bounds computed at run time are read from device memory.
TEST(OpenclConv, ClipWithComputedBounds) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 5});
  m.input("lo", LOOM_DTYPE_FLOAT32, {});
  m.input("hi", LOOM_DTYPE_FLOAT32, {});
  m.node("Clip", {"x", "lo", "hi"}, {"y"});
  m.output("y");
  expect_matches_cpu(m,
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 5}, 1)},
                      {"lo", float_tensor({}, {-0.3f})},
                      {"hi", float_tensor({}, {0.4f})}},
                     on_opencl());
}

TEST(OpenclConv, WeightsFromAnInputTensor) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  m.input("w", LOOM_DTYPE_FLOAT32, {5, 4, 3, 3});
  m.node("Conv", {"x", "w"}, {"y"});
  m.output("y");
  expect_matches_cpu(m,
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4, 6, 6}, 1)},
                      {"w", random_tensor(LOOM_DTYPE_FLOAT32, {5, 4, 3, 3}, 2)}},
                     on_opencl());
}

}  // namespace
}  // namespace loom::device_testing
