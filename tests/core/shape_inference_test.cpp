// Type and shape inference of the built-in schemas, one block per op family: the shapes of
// ResNet-50 / MobileNetV2 / BERT layers, the attribute and input forms of each op, symbolic
// (-1) extents, and the errors for shapes that can never be valid.
#include "shape_inference_test_util.hpp"

namespace {

// ---- element-wise -----------------------------------------------------------------------

TEST(ElementwiseInference, BroadcastsNumpyStyle) {
  EXPECT_INFERRED(TestNode("Add").input(F32, {2, 3, 4}).input(F32, {4}).infer0(), F32, {2, 3, 4});
  EXPECT_INFERRED(TestNode("Mul").input(F32, {8, 1, 6, 1}).input(F32, {7, 1, 5}).infer0(), F32,
                  {8, 7, 6, 5});
  EXPECT_INFERRED(TestNode("Pow").input(F32, {2, 3}).input(I64, {}).infer0(), F32, {2, 3});
}

TEST(ElementwiseInference, SymbolicDimsStayUnknownOrResolve) {
  // Unknown vs known > 1 must be that extent; unknown vs 1 stays unknown.
  EXPECT_INFERRED(TestNode("Sub").input(F32, {U, 3}).input(F32, {5, 1}).infer0(), F32, {5, 3});
  EXPECT_INFERRED(TestNode("Div").input(F32, {U, U}).input(F32, {1, U}).infer0(), F32, {U, U});
  loom_inferred_t unknown = TestNode("Add").unknown_rank_input(F32).input(F32, {3}).infer0();
  EXPECT_EQ(unknown.dtype, F32);
  EXPECT_EQ(unknown.rank, -1);
}

TEST(ElementwiseInference, BroadcastMismatchIsAnError) {
  TestNode add("Add");
  add.input(F32, {2, 3}).input(F32, {4});
  expect_invalid(add, "[2,3] and [4] cannot be broadcast");
}

TEST(ElementwiseInference, LegacyBroadcastKeepsFirstShape) {
  EXPECT_INFERRED(TestNode("Add", 6)
                      .input(F32, {2, 3, 4})
                      .input(F32, {3})
                      .attr("broadcast", int64_t{1})
                      .attr("axis", int64_t{1})
                      .infer0(),
                  F32, {2, 3, 4});
  TestNode strict("Add", 6);
  strict.input(F32, {2, 3}).input(F32, {3});
  expect_invalid(strict, "broadcast is not set");
}

TEST(ElementwiseInference, ComparisonsAndLogicGiveBool) {
  EXPECT_INFERRED(TestNode("Equal").input(I64, {1, 128}).input(I64, {}).infer0(), BOOL, {1, 128});
  EXPECT_INFERRED(TestNode("Less", 9).input(F32, {3}).input(F32, {2, 1}).infer0(), BOOL, {2, 3});
  EXPECT_INFERRED(TestNode("Not").input(BOOL, {4}).infer0(), BOOL, {4});
  EXPECT_INFERRED(TestNode("IsNaN").input(F32, {2, 2}).infer0(), BOOL, {2, 2});
}

TEST(ElementwiseInference, WhereBroadcastsThreeInputs) {
  EXPECT_INFERRED(TestNode("Where")
                      .input(BOOL, {1, 1, 1, 128})
                      .input(F32, {})
                      .input(F32, {2, 12, 128, 128})
                      .infer0(),
                  F32, {2, 12, 128, 128});
}

TEST(ElementwiseInference, ActivationsKeepTypeAndShape) {
  for (const char* op : {"Relu", "Erf", "Sqrt", "Sigmoid", "Tanh", "Identity", "Clip", "Mish"}) {
    SCOPED_TRACE(op);
    EXPECT_INFERRED(TestNode(op, 18).input(F32, {U, 64, 7}).infer0(), F32, {U, 64, 7});
  }
}

TEST(ElementwiseInference, DropoutMaskIsBoolSinceOpset10) {
  auto out = TestNode("Dropout", 13).input(F32, {2, 5}).outputs(2).infer();
  EXPECT_INFERRED(out[1], BOOL, {2, 5});
  auto old = TestNode("Dropout", 7).input(F32, {2, 5}).outputs(2).infer();
  EXPECT_INFERRED(old[1], F32, {2, 5});
}

TEST(ElementwiseInference, VariadicSumBroadcasts) {
  EXPECT_INFERRED(TestNode("Sum").input(F32, {3, 1}).input(F32, {4}).input(F32, {1, 1}).infer0(),
                  F32, {3, 4});
}

// ---- convolution and pooling ------------------------------------------------------------

TEST(ConvInference, ResNetStem) {
  EXPECT_INFERRED(TestNode("Conv", 11)
                      .input(F32, {1, 3, 224, 224})
                      .input(F32, {64, 3, 7, 7})
                      .input(F32, {64})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {3, 3, 3, 3})
                      .infer0(),
                  F32, {1, 64, 112, 112});
}

TEST(ConvInference, DepthwiseGroupAndSymbolicBatch) {
  EXPECT_INFERRED(TestNode("Conv")
                      .input(F32, {U, 32, 112, 112})
                      .input(F32, {32, 1, 3, 3})
                      .attr("group", int64_t{32})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .attr_ints("strides", {2, 2})
                      .infer0(),
                  F32, {U, 32, 56, 56});
}

TEST(ConvInference, AutoPadAndDilations) {
  EXPECT_INFERRED(TestNode("Conv")
                      .input(F32, {1, 1, 7, 5})
                      .input(F32, {2, 1, 3, 3})
                      .attr("auto_pad", "SAME_UPPER")
                      .attr_ints("strides", {2, 2})
                      .infer0(),
                  F32, {1, 2, 4, 3});
  EXPECT_INFERRED(TestNode("Conv")
                      .input(F32, {1, 1, 10})
                      .input(F32, {1, 1, 3})
                      .attr("auto_pad", "VALID")
                      .attr_ints("dilations", {2})
                      .infer0(),
                  F32, {1, 1, 6});
}

TEST(ConvInference, ChannelMismatchWithWeightsAndGroup) {
  TestNode conv("Conv");
  conv.input(F32, {1, 3, 8, 8}).input(F32, {16, 4, 3, 3});
  expect_invalid(conv, "has 3 channels but weights [16,4,3,3] with group 1 expect 4");
  TestNode grouped("Conv");
  grouped.input(F32, {1, 8, 8, 8}).input(F32, {6, 2, 3, 3}).attr("group", int64_t{4});
  expect_invalid(grouped, "not divisible by group 4");
  TestNode big_kernel("Conv");
  big_kernel.input(F32, {1, 1, 2, 2}).input(F32, {1, 1, 3, 3});
  expect_invalid(big_kernel, "larger than the padded input");
}

TEST(ConvInference, ConvTransposeUpsamples) {
  EXPECT_INFERRED(TestNode("ConvTranspose")
                      .input(F32, {1, 16, 8, 8})
                      .input(F32, {16, 8, 4, 4})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .infer0(),
                  F32, {1, 8, 16, 16});
  EXPECT_INFERRED(TestNode("ConvTranspose")
                      .input(F32, {1, 4, 3, 3})
                      .input(F32, {4, 2, 3, 3})
                      .attr("group", int64_t{2})
                      .attr_ints("output_shape", {10, 8})
                      .infer0(),
                  F32, {1, 4, 10, 8});
}

TEST(PoolInference, MaxPoolPadsAndCeilMode) {
  EXPECT_INFERRED(TestNode("MaxPool", 12)
                      .input(F32, {1, 64, 112, 112})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .infer0(),
                  F32, {1, 64, 56, 56});
  EXPECT_INFERRED(TestNode("MaxPool", 12)
                      .input(F32, {1, 1, 6, 6})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .attr("ceil_mode", int64_t{1})
                      .infer0(),
                  F32, {1, 1, 3, 3});
  // ceil_mode never starts a window in the right padding (onnx test
  // maxpool_2d_ceil_output_size_reduce_by_one): 2 would be 2 outputs rounded up, 1 remains.
  EXPECT_INFERRED(TestNode("MaxPool", 12)
                      .input(F32, {1, 1, 2, 2})
                      .attr_ints("kernel_shape", {1, 1})
                      .attr_ints("strides", {2, 2})
                      .attr("ceil_mode", int64_t{1})
                      .infer0(),
                  F32, {1, 1, 1, 1});
  EXPECT_INFERRED(TestNode("AveragePool", 19)
                      .input(F32, {1, 1, 4, 4})
                      .attr_ints("kernel_shape", {2, 2})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {0, 0, 1, 1})
                      .attr("ceil_mode", int64_t{1})
                      .infer0(),
                  F32, {1, 1, 2, 2});
  // A last window starting in the left padding or the input stays.
  EXPECT_INFERRED(TestNode("AveragePool", 19)
                      .input(F32, {1, 1, 4, 4})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .attr_ints("pads", {1, 1, 1, 1})
                      .attr("ceil_mode", int64_t{1})
                      .infer0(),
                  F32, {1, 1, 3, 3});
  EXPECT_INFERRED(TestNode("AveragePool")
                      .input(F32, {1, 1, 6, 6})
                      .attr_ints("kernel_shape", {3, 3})
                      .attr_ints("strides", {2, 2})
                      .infer0(),
                  F32, {1, 1, 2, 2});
  auto indices = TestNode("MaxPool")
                     .input(F32, {1, 1, 4, 4})
                     .attr_ints("kernel_shape", {2, 2})
                     .outputs(2)
                     .infer();
  EXPECT_INFERRED(indices[1], I64, {1, 1, 3, 3});
  TestNode no_kernel("MaxPool");
  no_kernel.input(F32, {1, 1, 4, 4});
  expect_invalid(no_kernel, "kernel_shape is required");
}

TEST(PoolInference, GlobalPool) {
  EXPECT_INFERRED(TestNode("GlobalAveragePool").input(F32, {U, 2048, 7, 7}).infer0(), F32,
                  {U, 2048, 1, 1});
}

// ---- matrix products --------------------------------------------------------------------

TEST(LinalgInference, GemmWithTransBAndBias) {
  EXPECT_INFERRED(TestNode("Gemm")
                      .input(F32, {1, 2048})
                      .input(F32, {1000, 2048})
                      .input(F32, {1000})
                      .attr("transB", int64_t{1})
                      .infer0(),
                  F32, {1, 1000});
  TestNode bad("Gemm");
  bad.input(F32, {1, 2048}).input(F32, {1000, 2048});
  expect_invalid(bad, "inner dimensions disagree");
}

TEST(LinalgInference, MatMulBatchBroadcastAndVectors) {
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {2, 1, 3, 4}).input(F32, {5, 4, 6}).infer0(), F32,
                  {2, 5, 3, 6});
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {4}).input(F32, {4, 6}).infer0(), F32, {6});
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {3, 4}).input(F32, {4}).infer0(), F32, {3});
  EXPECT_INFERRED(TestNode("MatMul").input(F32, {U, U, 768}).input(F32, {768, 3072}).infer0(), F32,
                  {U, U, 3072});
  TestNode bad("MatMul");
  bad.input(F32, {2, 3, 4}).input(F32, {5, 6});
  expect_invalid(bad, "A [2,3,4] has 4 columns but B [5,6] has 5 rows");
}

TEST(LinalgInference, Einsum) {
  EXPECT_INFERRED(TestNode("Einsum")
                      .input(F32, {2, 3, 4})
                      .input(F32, {2, 4, 5})
                      .attr("equation", "bij,bjk->bik")
                      .infer0(),
                  F32, {2, 3, 5});
  // Implicit output: labels seen once, alphabetically.
  EXPECT_INFERRED(
      TestNode("Einsum").input(F32, {3, 4}).input(F32, {4, 7}).attr("equation", "ij,jk").infer0(),
      F32, {3, 7});
  EXPECT_INFERRED(
      TestNode("Einsum").input(F32, {9, 2, 3}).attr("equation", "...ij->...ji").infer0(), F32,
      {9, 3, 2});
  TestNode bad("Einsum");
  bad.input(F32, {3, 4}).input(F32, {5, 7}).attr("equation", "ij,jk->ik");
  expect_invalid(bad, "label 'j' has extents 4 and 5");
}

}  // namespace
