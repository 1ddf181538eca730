// Attribute constraints the ONNX spec states, enforced by shape inference with the node named:
// pool pads below the kernel, ConvTranspose output_padding below stride or dilation, positive
// strides / dilations / kernels, non-negative pads, group dividing the channels, the enumerated
// Resize modes, Upsample scales >= 1, blocksize, LRN size, and constant Gather indices. Each
// refused case has its accepted boundary beside it.
#include "shape_inference_test_util.hpp"

namespace {

// The full error message of an inference that must fail (gtest failure when it does not).
std::string error_of(TestNode& node) {
  try {
    node.infer();
  } catch (const loom::sdk::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_MODEL);
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TestNode pool(const char* op, Dims x, Dims kernel, Dims pads, int64_t opset = 17) {
  TestNode n(op, opset);
  n.input(F32, std::move(x)).attr_ints("kernel_shape", std::move(kernel));
  if (!pads.empty()) n.attr_ints("pads", std::move(pads));
  return n;
}

// ---- pools ----------------------------------------------------------------------------------

TEST(PoolSpec, PadAsLargeAsTheKernelIsRefused) {
  TestNode max_pool = pool("MaxPool", {1, 1, 8, 8}, {3, 3}, {3, 0, 0, 0});
  EXPECT_EQ(error_of(max_pool),
            "MaxPool node 'n': pads[0] = 3 is not smaller than kernel_shape[0] = 3 (ONNX "
            "requires pad < kernel)");
  // End pads count too, on the axis they pad (pads[3] is the end of axis 1).
  TestNode end_pad = pool("AveragePool", {1, 1, 8, 8}, {3, 2}, {0, 0, 0, 2});
  expect_invalid(end_pad, "pads[3] = 2 is not smaller than kernel_shape[1] = 2");
  TestNode lp = pool("LpPool", {1, 1, 8}, {2}, {4, 0});
  expect_invalid(lp, "pads[0] = 4 is not smaller than kernel_shape[0] = 2");
  TestNode three_d = pool("MaxPool", {1, 1, 4, 4, 4}, {1, 2, 2}, {0, 0, 0, 1, 0, 0});
  expect_invalid(three_d, "pads[3] = 1 is not smaller than kernel_shape[0] = 1");
}

TEST(PoolSpec, PadOneBelowTheKernelIsAccepted) {
  EXPECT_INFERRED(pool("MaxPool", {1, 1, 8, 8}, {3, 3}, {2, 2, 2, 2}).infer0(), F32,
                  {1, 1, 10, 10});
  EXPECT_INFERRED(pool("AveragePool", {1, 2, 5}, {2}, {1, 1}).infer0(), F32, {1, 2, 6});
  EXPECT_INFERRED(pool("LpPool", {1, 2, 5}, {4}, {3, 3}, 18).infer0(), F32, {1, 2, 8});
}

TEST(PoolSpec, PadsIgnoredUnderAutoPadAreNotChecked) {
  // With auto_pad the pads attribute does not apply (exporters sometimes leave zeros or junk).
  TestNode same = pool("MaxPool", {1, 1, 7, 7}, {2, 2}, {2, 2, 2, 2});
  same.attr("auto_pad", "SAME_UPPER").attr_ints("strides", {2, 2});
  EXPECT_INFERRED(same.infer0(), F32, {1, 1, 4, 4});
}

TEST(PoolSpec, AttributesAreCheckedWithoutTheInputShape) {
  TestNode n("MaxPool");
  n.unknown_rank_input(F32).attr_ints("kernel_shape", {2, 2}).attr_ints("pads", {0, 2, 0, 0});
  expect_invalid(n, "pads[1] = 2 is not smaller than kernel_shape[1] = 2");
  TestNode ok("MaxPool");
  ok.unknown_rank_input(F32).attr_ints("kernel_shape", {2, 2}).attr_ints("pads", {1, 1, 1, 1});
  EXPECT_EQ(ok.infer0().dtype, F32);
}

TEST(PoolSpec, NonPositiveWindowAttributesNameTheEntry) {
  TestNode stride = pool("MaxPool", {1, 1, 8, 8}, {2, 2}, {});
  stride.attr_ints("strides", {1, 0});
  EXPECT_EQ(error_of(stride), "MaxPool node 'n': strides[1] = 0 must be positive");
  TestNode dilation = pool("MaxPool", {1, 1, 8, 8}, {2, 2}, {});
  dilation.attr_ints("dilations", {-1, 1});
  expect_invalid(dilation, "dilations[0] = -1 must be positive");
  TestNode kernel = pool("AveragePool", {1, 1, 8, 8}, {2, 0}, {});
  expect_invalid(kernel, "kernel_shape[1] = 0 must be positive");
  TestNode negative = pool("MaxPool", {1, 1, 8, 8}, {2, 2}, {0, 0, -1, 0});
  expect_invalid(negative, "pads[2] = -1 must not be negative");
}

// ---- Conv, ConvTranspose --------------------------------------------------------------------

TEST(ConvSpec, WindowAttributesOfConvAreChecked) {
  TestNode kernel_from_weights("Conv");
  kernel_from_weights.input(F32, {1, 2, 5, 5}).input(F32, {4, 2, 0, 3});
  expect_invalid(kernel_from_weights, "the weights' kernel extent 0 on spatial axis 0");
  TestNode stride("Conv");
  stride.input(F32, {1, 2, 5, 5}).input(F32, {4, 2, 3, 3}).attr_ints("strides", {0, 1});
  expect_invalid(stride, "strides[0] = 0 must be positive");
  // Conv itself allows pads of any size (they only add zeros around the input).
  TestNode big_pads("Conv");
  big_pads.input(F32, {1, 2, 5, 5}).input(F32, {4, 2, 3, 3}).attr_ints("pads", {3, 3, 3, 3});
  EXPECT_INFERRED(big_pads.infer0(), F32, {1, 4, 9, 9});
}

TEST(ConvSpec, GroupMustDivideKnownChannels) {
  TestNode unknown_weights("Conv");
  unknown_weights.input(F32, {1, 6, 8, 8}).unknown_rank_input(F32).attr("group", int64_t{4});
  expect_invalid(unknown_weights, "input [1,6,8,8] has 6 channels, not divisible by group 4");
  TestNode divides("Conv");
  divides.input(F32, {1, 8, 8, 8}).unknown_rank_input(F32).attr("group", int64_t{4});
  EXPECT_EQ(divides.infer0().dtype, F32);
  TestNode transpose("ConvTranspose");
  transpose.input(F32, {1, 6, 4, 4}).input(F32, {6, 2, 3, 3}).attr("group", int64_t{4});
  expect_invalid(transpose, "input has 6 channels, not divisible by group 4");
  TestNode transpose_zero("ConvTranspose");
  transpose_zero.input(F32, {1, 6, 4, 4}).input(F32, {6, 2, 3, 3}).attr("group", int64_t{0});
  expect_invalid(transpose_zero, "group 0 must be positive");
}

TestNode conv_transpose(Dims strides, Dims output_padding) {
  TestNode n("ConvTranspose");
  n.input(F32, {1, 4, 5, 5})
      .input(F32, {4, 2, 3, 3})
      .attr_ints("strides", std::move(strides))
      .attr_ints("output_padding", std::move(output_padding));
  return n;
}

TEST(ConvTransposeSpec, OutputPaddingMustBeBelowTheStride) {
  TestNode at_stride = conv_transpose({2, 2}, {0, 2});
  EXPECT_EQ(error_of(at_stride),
            "ConvTranspose node 'n': output_padding[1] = 2 is not smaller than strides[1] = 2 "
            "(ONNX requires output_padding < stride or dilation)");
  // Boundary: stride - 1 adds that many rows/columns.
  EXPECT_INFERRED(conv_transpose({2, 2}, {1, 1}).infer0(), F32, {1, 2, 12, 12});
  TestNode stride_one = conv_transpose({1, 1}, {1, 0});
  expect_invalid(stride_one, "output_padding[0] = 1 is not smaller than strides[0] = 1");
  TestNode negative = conv_transpose({2, 2}, {-1, 0});
  expect_invalid(negative, "output_padding[0] = -1 must not be negative");
}

TEST(ConvTransposeSpec, DilationAlsoBoundsOutputPadding) {
  // Stride 1, dilation 3: output_padding 2 is below the dilation, so it is allowed.
  TestNode dilated = conv_transpose({1, 1}, {2, 0});
  dilated.attr_ints("dilations", {3, 1});
  EXPECT_INFERRED(dilated.infer0(), F32, {1, 2, 13, 7});
  TestNode too_far = conv_transpose({1, 1}, {3, 0});
  too_far.attr_ints("dilations", {3, 1});
  expect_invalid(too_far,
                 "output_padding[0] = 3 is not smaller than strides[0] = 1 or dilations[0] = 3");
}

TEST(ConvTransposeSpec, OutputPaddingIsCheckedWithAnExplicitOutputShape) {
  TestNode n = conv_transpose({2, 2}, {3, 0});
  n.attr_ints("output_shape", {12, 11});
  expect_invalid(n, "output_padding[0] = 3 is not smaller than strides[0] = 2");
}

// ---- Resize, Upsample -----------------------------------------------------------------------

TestNode resize(int64_t opset) {
  TestNode n("Resize", opset);
  n.input(F32, {1, 1, 4, 4}).omitted().floats_input({1, 1, 2, 2});
  return n;
}

TEST(ResizeSpec, EnumeratedModesFollowTheOpset) {
  TestNode mode = resize(13);
  mode.attr("mode", "bilinear");
  expect_invalid(mode, "unknown mode 'bilinear' (expected nearest, linear, cubic)");
  TestNode cubic_10("Resize", 10);
  cubic_10.input(F32, {1, 1, 4, 4}).floats_input({1, 1, 2, 2}).attr("mode", "cubic");
  expect_invalid(cubic_10, "unknown mode 'cubic' (expected nearest, linear)");
  // half_pixel_symmetric arrived in opset 19, tf_half_pixel_for_nn left in 13.
  TestNode symmetric_18 = resize(18);
  symmetric_18.attr("coordinate_transformation_mode", "half_pixel_symmetric");
  expect_invalid(symmetric_18,
                 "unknown coordinate_transformation_mode 'half_pixel_symmetric' for opset 18");
  TestNode symmetric_19 = resize(19);
  symmetric_19.attr("coordinate_transformation_mode", "half_pixel_symmetric");
  EXPECT_INFERRED(symmetric_19.infer0(), F32, {1, 1, 8, 8});
  TestNode nn_13 = resize(13);
  nn_13.attr("coordinate_transformation_mode", "tf_half_pixel_for_nn");
  expect_invalid(nn_13, "unknown coordinate_transformation_mode 'tf_half_pixel_for_nn'");
  TestNode nn_11 = resize(11);
  nn_11.attr("coordinate_transformation_mode", "tf_half_pixel_for_nn");
  EXPECT_INFERRED(nn_11.infer0(), F32, {1, 1, 8, 8});
  TestNode nearest = resize(13);
  nearest.attr("nearest_mode", "round");
  expect_invalid(nearest, "unknown nearest_mode 'round'");
}

TEST(ResizeSpec, ScalesMustBePositive) {
  TestNode zero("Resize", 13);
  zero.input(F32, {1, 1, 4, 4}).omitted().floats_input({1, 1, 0, 2});
  expect_invalid(zero, "must be positive and finite");
  TestNode down("Resize", 13);
  down.input(F32, {1, 1, 4, 4}).omitted().floats_input({1, 1, 0.5f, 0.25f});
  EXPECT_INFERRED(down.infer0(), F32, {1, 1, 2, 1});
}

TEST(ResizeSpec, UpsampleOnlyEnlarges) {
  TestNode shrink("Upsample", 9);
  shrink.input(F32, {1, 1, 4, 4}).floats_input({1, 1, 0.5f, 2});
  expect_invalid(shrink, "scales[2] = 0.500000 is below 1 (Upsample requires scales >= 1");
  TestNode attribute("Upsample", 7);
  attribute.input(F32, {1, 1, 4, 4}).attr_floats("scales", {1, 1, 2, 0.75f});
  expect_invalid(attribute, "scales[3] = 0.750000 is below 1");
  TestNode same("Upsample", 9);
  same.input(F32, {1, 1, 4, 4}).floats_input({1, 1, 1, 3});
  EXPECT_INFERRED(same.infer0(), F32, {1, 1, 4, 12});
}

// ---- DepthToSpace, SpaceToDepth, LRN, Gather ------------------------------------------------

TEST(BlockSpec, BlocksizeAndModeAreChecked) {
  TestNode zero("DepthToSpace", 13);
  zero.input(F32, {1, 8, 2, 2}).attr("blocksize", int64_t{0});
  EXPECT_EQ(error_of(zero), "DepthToSpace node 'n': blocksize = 0 must be positive");
  TestNode missing("SpaceToDepth", 13);
  missing.input(F32, {1, 2, 4, 4});
  expect_invalid(missing, "attribute blocksize is required");
  TestNode negative("SpaceToDepth", 13);
  negative.input(F32, {1, 2, 4, 4}).attr("blocksize", int64_t{-2});
  expect_invalid(negative, "blocksize = -2 must be positive");
  TestNode mode("DepthToSpace", 13);
  mode.input(F32, {1, 8, 2, 2}).attr("blocksize", int64_t{2}).attr("mode", "RCD");
  expect_invalid(mode, "unknown mode 'RCD' (expected DCR or CRD)");
  TestNode crd("DepthToSpace", 13);
  crd.input(F32, {1, 8, 2, 2}).attr("blocksize", int64_t{2}).attr("mode", "CRD");
  EXPECT_INFERRED(crd.infer0(), F32, {1, 2, 4, 4});
}

TEST(LrnSpec, SizeIsRequiredAndPositive) {
  TestNode missing("LRN", 13);
  missing.input(F32, {1, 4, 3, 3});
  expect_invalid(missing, "attribute size is required");
  TestNode zero("LRN", 13);
  zero.input(F32, {1, 4, 3, 3}).attr("size", int64_t{0});
  expect_invalid(zero, "size = 0 must be positive");
  TestNode one("LRN", 13);
  one.input(F32, {1, 4, 3, 3}).attr("size", int64_t{1});
  EXPECT_INFERRED(one.infer0(), F32, {1, 4, 3, 3});
}

TEST(GatherSpec, ConstantIndicesOutsideTheAxisAreRefused) {
  TestNode beyond("Gather", 13);
  beyond.input(F32, {5, 3}).ints_input({0, 5});
  EXPECT_EQ(error_of(beyond),
            "Gather node 'n': constant index 5 is out of range for axis 0 of size 5");
  TestNode below("Gather", 13);
  below.input(F32, {5, 3}).ints_input({-4}).attr("axis", int64_t{1});
  expect_invalid(below, "constant index -4 is out of range for axis 1 of size 3");
  // The boundary values -n and n - 1 are valid, and a symbolic extent is left to run time.
  EXPECT_INFERRED(TestNode("Gather", 13).input(F32, {5, 3}).ints_input({-5, 4}).infer0(), F32,
                  {2, 3});
  EXPECT_INFERRED(TestNode("Gather", 13).input(F32, {U, 3}).ints_input({9}).infer0(), F32, {1, 3});
}

}  // namespace
