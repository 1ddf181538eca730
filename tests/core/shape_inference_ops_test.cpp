// Type and shape inference of the built-in schemas, continued: normalisation, shape ops,
// reductions, types, indexing, resize, recurrent and control-flow ops, and the ops of the
// three model tests.
#include "shape_inference_test_util.hpp"

namespace {

// ---- normalisation ----------------------------------------------------------------------

TEST(NormalizationInference, BatchNormChecksChannels) {
  EXPECT_INFERRED(TestNode("BatchNormalization")
                      .input(F32, {1, 64, 56, 56})
                      .input(F32, {64})
                      .input(F32, {64})
                      .input(F32, {64})
                      .input(F32, {64})
                      .infer0(),
                  F32, {1, 64, 56, 56});
  TestNode bad("BatchNormalization");
  bad.input(F32, {1, 64, 56, 56})
      .input(F32, {32})
      .input(F32, {64})
      .input(F32, {64})
      .input(F32, {64});
  expect_invalid(bad, "does not match the 64 channels");
}

TEST(NormalizationInference, LayerNormStatistics) {
  auto out = TestNode("LayerNormalization")
                 .input(F32, {U, 128, 768})
                 .input(F32, {768})
                 .input(F32, {768})
                 .outputs(3)
                 .infer();
  EXPECT_INFERRED(out[0], F32, {U, 128, 768});
  EXPECT_INFERRED(out[1], F32, {U, 128, 1});
  EXPECT_INFERRED(out[2], F32, {U, 128, 1});
  TestNode bad("LayerNormalization");
  bad.input(F32, {2, 128, 768}).input(F32, {512});
  expect_invalid(bad, "Scale (input 1) [512] does not broadcast to [768]");
}

TEST(NormalizationInference, SoftmaxAxisChecked) {
  EXPECT_INFERRED(
      TestNode("Softmax").input(F32, {2, 12, 128, 128}).attr("axis", int64_t{-1}).infer0(), F32,
      {2, 12, 128, 128});
  TestNode bad("Softmax");
  bad.input(F32, {2, 3}).attr("axis", int64_t{2});
  expect_invalid(bad, "axis 2 is out of range for rank 2");
}

// ---- shape ops --------------------------------------------------------------------------

TEST(ShapeOpInference, ReshapeZeroAndMinusOne) {
  EXPECT_INFERRED(TestNode("Reshape").input(F32, {2, 3, 4}).ints_input({0, -1}).infer0(), F32,
                  {2, 12});
  EXPECT_INFERRED(TestNode("Reshape").input(F32, {U, 128, 768}).ints_input({0, 0, 12, 64}).infer0(),
                  F32, {U, 128, 12, 64});
  // A -1 next to an unknown input extent stays unknown.
  EXPECT_INFERRED(TestNode("Reshape").input(F32, {U, 4}).ints_input({-1, 2}).infer0(), F32, {U, 2});
  // allowzero: 0 is a real zero extent.
  EXPECT_INFERRED(TestNode("Reshape", 14)
                      .input(F32, {0, 4})
                      .ints_input({0, 8})
                      .attr("allowzero", int64_t{1})
                      .infer0(),
                  F32, {0, 8});
  // Reshape-1 reads the attribute.
  EXPECT_INFERRED(TestNode("Reshape", 1).input(F32, {6}).attr_ints("shape", {2, 3}).infer0(), F32,
                  {2, 3});
}

TEST(ShapeOpInference, ReshapeErrors) {
  TestNode count("Reshape");
  count.input(F32, {2, 3, 4}).ints_input({5, 5});
  expect_invalid(count, "cannot reshape input [2,3,4] (24 elements) into [5,5] (25 elements)");
  TestNode indivisible("Reshape");
  indivisible.input(F32, {2, 3, 4}).ints_input({5, -1});
  expect_invalid(indivisible, "cannot reshape input [2,3,4]");
  TestNode two("Reshape");
  two.input(F32, {2, 3, 4}).ints_input({-1, -1});
  expect_invalid(two, "more than one -1");
}

TEST(ShapeOpInference, ReshapeWithRuntimeShape) {
  loom_inferred_t out = TestNode("Reshape").input(F32, {2, 3}).input(I64, {3}).infer0();
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.dims[0], U);
}

TEST(ShapeOpInference, FlattenSqueezeUnsqueeze) {
  EXPECT_INFERRED(TestNode("Flatten").input(F32, {U, 2048, 1, 1}).infer0(), F32, {U, 2048});
  EXPECT_INFERRED(TestNode("Flatten").input(F32, {2, 3, 4}).attr("axis", int64_t{0}).infer0(), F32,
                  {1, 24});
  EXPECT_INFERRED(TestNode("Squeeze", 11).input(F32, {1, 3, 1}).attr_ints("axes", {-1}).infer0(),
                  F32, {1, 3});
  EXPECT_INFERRED(TestNode("Squeeze", 13).input(F32, {1, 3, 1}).ints_input({0}).infer0(), F32,
                  {3, 1});
  EXPECT_INFERRED(TestNode("Squeeze", 13).input(F32, {1, 3, 1}).infer0(), F32, {3});
  EXPECT_INFERRED(TestNode("Unsqueeze", 11).input(I64, {U, 128}).attr_ints("axes", {1, 2}).infer0(),
                  I64, {U, 1, 1, 128});
  EXPECT_INFERRED(TestNode("Unsqueeze", 13).input(I64, {}).ints_input({0}).infer0(), I64, {1});
  TestNode bad("Squeeze", 13);
  bad.input(F32, {2, 3}).ints_input({0});
  expect_invalid(bad, "cannot squeeze dimension 0 of extent 2");
}

TEST(ShapeOpInference, TransposeConcatSplit) {
  EXPECT_INFERRED(
      TestNode("Transpose").input(F32, {2, 128, 12, 64}).attr_ints("perm", {0, 2, 1, 3}).infer0(),
      F32, {2, 12, 128, 64});
  EXPECT_INFERRED(TestNode("Transpose").input(F32, {2, 3, 4}).infer0(), F32, {4, 3, 2});
  EXPECT_INFERRED(TestNode("Concat")
                      .input(I64, {1})
                      .input(I64, {1})
                      .input(I64, {2})
                      .attr("axis", int64_t{0})
                      .infer0(),
                  I64, {4});
  EXPECT_INFERRED(
      TestNode("Concat").input(F32, {U, 3}).input(F32, {2, 3}).attr("axis", int64_t{1}).infer0(),
      F32, {2, 6});
  TestNode bad_concat("Concat");
  bad_concat.input(F32, {2, 3}).input(F32, {4, 3}).attr("axis", int64_t{1});
  expect_invalid(bad_concat, "extents of dimension 0 of the inputs disagree: 2 vs 4");
  auto even = TestNode("Split", 13).input(F32, {6, 4}).outputs(3).infer();
  EXPECT_INFERRED(even[2], F32, {2, 4});
  auto sized = TestNode("Split", 13)
                   .input(F32, {6, 4})
                   .ints_input({1, 3})
                   .attr("axis", int64_t{1})
                   .outputs(2)
                   .infer();
  EXPECT_INFERRED(sized[1], F32, {6, 3});
  auto uneven =
      TestNode("Split", 18).input(F32, {7}).attr("num_outputs", int64_t{3}).outputs(3).infer();
  EXPECT_INFERRED(uneven[0], F32, {3});
  EXPECT_INFERRED(uneven[2], F32, {1});
  TestNode bad_split("Split", 13);
  bad_split.input(F32, {7}).outputs(2);
  expect_invalid(bad_split, "cannot be split evenly");
}

TEST(ShapeOpInference, SliceWithConstantInputs) {
  EXPECT_INFERRED(TestNode("Slice")
                      .input(F32, {20, 10, 5})
                      .ints_input({0, 0})
                      .ints_input({3, 10})
                      .ints_input({0, 1})
                      .ints_input({1, 3})
                      .infer0(),
                  F32, {3, 4, 5});
  // End beyond the extent (INT64_MAX as exporters write it) and a negative step.
  EXPECT_INFERRED(TestNode("Slice")
                      .input(F32, {10, 8})
                      .ints_input({1})
                      .ints_input({INT64_MAX})
                      .ints_input({1})
                      .infer0(),
                  F32, {10, 7});
  EXPECT_INFERRED(TestNode("Slice")
                      .input(F32, {10})
                      .ints_input({-1})
                      .ints_input({INT64_MIN})
                      .ints_input({0})
                      .ints_input({-3})
                      .infer0(),
                  F32, {4});
  EXPECT_INFERRED(TestNode("Slice", 1)
                      .input(F32, {4, 6})
                      .attr_ints("starts", {1})
                      .attr_ints("ends", {-1})
                      .attr_ints("axes", {1})
                      .infer0(),
                  F32, {4, 4});
  // Bounds only known at run time: the sliced axis becomes unknown.
  EXPECT_INFERRED(
      TestNode("Slice").input(F32, {4, 6}).input(I64, {1}).input(I64, {1}).ints_input({1}).infer0(),
      F32, {4, U});
  TestNode zero_step("Slice");
  zero_step.input(F32, {4}).ints_input({0}).ints_input({4}).ints_input({0}).ints_input({0});
  expect_invalid(zero_step, "contain a zero");
}

TEST(ShapeOpInference, GatherExpandTilePad) {
  EXPECT_INFERRED(TestNode("Gather").input(F32, {30522, 768}).input(I64, {U, 128}).infer0(), F32,
                  {U, 128, 768});
  EXPECT_INFERRED(TestNode("Gather").input(I64, {4}).ints_input({0}, true).infer0(), I64, {});
  EXPECT_INFERRED(TestNode("Expand").input(F32, {3, 1}).ints_input({2, 1, 6}).infer0(), F32,
                  {2, 3, 6});
  EXPECT_INFERRED(TestNode("Tile").input(F32, {2, 3}).ints_input({2, 2}).infer0(), F32, {4, 6});
  EXPECT_INFERRED(
      TestNode("Pad").input(F32, {1, 3, 4, 4}).ints_input({0, 0, 1, 1, 0, 0, 1, 1}).infer0(), F32,
      {1, 3, 6, 6});
  EXPECT_INFERRED(TestNode("Pad", 18)
                      .input(F32, {1, 3, 4, 4})
                      .ints_input({2, 3})
                      .omitted()
                      .ints_input({-1})
                      .infer0(),
                  F32, {1, 3, 4, 9});
  EXPECT_INFERRED(TestNode("Pad", 2).input(F32, {2, 2}).attr_ints("pads", {1, 0, 1, 0}).infer0(),
                  F32, {4, 2});
  TestNode bad("Expand");
  bad.input(F32, {3, 2}).ints_input({4, 3});
  expect_invalid(bad, "cannot be broadcast");
}

TEST(ShapeOpInference, ShapeSizeConstants) {
  EXPECT_INFERRED(TestNode("Shape").input(F32, {U, 128, 768}).infer0(), I64, {3});
  EXPECT_INFERRED(TestNode("Shape", 15)
                      .input(F32, {2, 3, 4, 5})
                      .attr("start", int64_t{1})
                      .attr("end", int64_t{-1})
                      .infer0(),
                  I64, {2});
  EXPECT_INFERRED(TestNode("Size").input(F32, {U, 3}).infer0(), I64, {});
  EXPECT_INFERRED(
      TestNode("ConstantOfShape").ints_input({2, 5}).attr_tensor("value", I64, {1}).infer0(), I64,
      {2, 5});
  EXPECT_INFERRED(TestNode("ConstantOfShape").input(I64, {3}).infer0(), F32, {U, U, U});
  EXPECT_INFERRED(TestNode("Constant").attr_tensor("value", F32, {2, 2}).infer0(), F32, {2, 2});
  EXPECT_INFERRED(TestNode("Constant").attr_ints("value_ints", {1, 2, 3}).infer0(), I64, {3});
  EXPECT_INFERRED(
      TestNode("Range").ints_input({0}, true).ints_input({10}, true).ints_input({3}, true).infer0(),
      I64, {4});
  EXPECT_INFERRED(TestNode("Range")
                      .floats_input({1.f}, true)
                      .floats_input({0.f}, true)
                      .floats_input({-0.25f}, true)
                      .infer0(),
                  F32, {4});
  loom_inferred_t runtime_range =
      TestNode("Range").input(I64, {}).input(I64, {}).input(I64, {}).infer0();
  EXPECT_EQ(runtime_range.rank, 1);
  EXPECT_EQ(runtime_range.dims[0], U);
  // A 1-D input of unknown extent may hold one element (AffineGrid's function body gives Range
  // one from an If); only a known extent other than 1, or a higher rank, is refused.
  EXPECT_EQ(TestNode("Range").input(I64, {}).input(I64, {U}).input(I64, {}).infer0().rank, 1);
  EXPECT_ANY_THROW(TestNode("Range").input(I64, {}).input(I64, {2}).input(I64, {}).infer0());
  EXPECT_ANY_THROW(TestNode("Range").input(I64, {}).input(I64, {1, 1}).input(I64, {}).infer0());
}

TEST(ShapeOpInference, MalformedConstantIsRejected) {
  // A constant claiming 4 int64 values but holding 8 bytes must not be read past its end.
  int64_t one = 1;
  TestNode bad("Reshape");
  bad.input(F32, {4}).const_input(I64, &one, sizeof one, {4});
  expect_invalid(bad, "holds only 8 bytes");
}

// ---- reductions, types, indexing -------------------------------------------------------

TEST(ReductionInference, AxesAttributeAndInputForms) {
  EXPECT_INFERRED(
      TestNode("ReduceMean", 13).input(F32, {U, 128, 768}).attr_ints("axes", {-1}).infer0(), F32,
      {U, 128, 1});
  EXPECT_INFERRED(TestNode("ReduceMean", 18)
                      .input(F32, {U, 128, 768})
                      .ints_input({-1})
                      .attr("keepdims", int64_t{0})
                      .infer0(),
                  F32, {U, 128});
  EXPECT_INFERRED(TestNode("ReduceSum", 13).input(F32, {2, 3}).infer0(), F32, {1, 1});
  EXPECT_INFERRED(TestNode("ReduceSum", 13)
                      .input(F32, {2, 3})
                      .ints_input({})
                      .attr("noop_with_empty_axes", int64_t{1})
                      .infer0(),
                  F32, {2, 3});
  loom_inferred_t runtime_axes =
      TestNode("ReduceSum", 13).input(F32, {2, 3, 4}).input(I64, {1}).infer0();
  EXPECT_EQ(runtime_axes.rank, 3);
  TestNode bad("ReduceMax", 13);
  bad.input(F32, {2, 3}).attr_ints("axes", {3});
  expect_invalid(bad, "reduction axis 3 is out of range");
}

TEST(TypeOpInference, CastAndQuantization) {
  EXPECT_INFERRED(
      TestNode("Cast").input(BOOL, {1, 128}).attr("to", int64_t{LOOM_DTYPE_FLOAT32}).infer0(), F32,
      {1, 128});
  EXPECT_INFERRED(TestNode("Cast", 1).input(F32, {2}).attr("to", "INT64").infer0(), I64, {2});
  EXPECT_INFERRED(TestNode("CastLike").input(F32, {2}).input(LOOM_DTYPE_FLOAT16, {}).infer0(),
                  LOOM_DTYPE_FLOAT16, {2});
  EXPECT_INFERRED(
      TestNode("QuantizeLinear").input(F32, {4}).input(F32, {}).input(LOOM_DTYPE_INT8, {}).infer0(),
      LOOM_DTYPE_INT8, {4});
  EXPECT_INFERRED(TestNode("QuantizeLinear").input(F32, {4}).input(F32, {}).infer0(),
                  LOOM_DTYPE_UINT8, {4});
  EXPECT_INFERRED(TestNode("DequantizeLinear").input(LOOM_DTYPE_UINT8, {4}).input(F32, {}).infer0(),
                  F32, {4});
  TestNode bad("Cast");
  bad.input(F32, {2}).attr("to", int64_t{99});
  expect_invalid(bad, "not a supported element type");
}

TEST(IndexingInference, ArgMaxTopKNonZero) {
  EXPECT_INFERRED(TestNode("ArgMax").input(F32, {3, 5}).attr("axis", int64_t{1}).infer0(), I64,
                  {3, 1});
  EXPECT_INFERRED(TestNode("ArgMin").input(F32, {3, 5}).attr("keepdims", int64_t{0}).infer0(), I64,
                  {5});
  auto topk = TestNode("TopK").input(F32, {3, 10}).ints_input({4}).outputs(2).infer();
  EXPECT_INFERRED(topk[0], F32, {3, 4});
  EXPECT_INFERRED(topk[1], I64, {3, 4});
  EXPECT_INFERRED(TestNode("NonZero").input(F32, {3, 4, 5}).infer0(), I64, {3, U});
  EXPECT_INFERRED(TestNode("GatherND").input(F32, {2, 3, 4}).input(I64, {5, 2}).infer0(), F32,
                  {5, 4});
  EXPECT_INFERRED(
      TestNode("OneHot").input(I64, {3}).ints_input({10}, true).input(F32, {2}).infer0(), F32,
      {3, 10});
  TestNode bad("TopK");
  bad.input(F32, {3, 10}).ints_input({11}).outputs(2);
  expect_invalid(bad, "k = 11 is not within");
}

TEST(ResizeInference, ScalesSizesAndAspectPolicy) {
  EXPECT_INFERRED(TestNode("Resize")
                      .input(F32, {1, 3, 10, 10})
                      .omitted()
                      .floats_input({1, 1, 2, 1.5f})
                      .infer0(),
                  F32, {1, 3, 20, 15});
  EXPECT_INFERRED(TestNode("Resize")
                      .input(F32, {1, 3, 10, 10})
                      .omitted()
                      .omitted()
                      .ints_input({1, 3, 7, 9})
                      .infer0(),
                  F32, {1, 3, 7, 9});
  EXPECT_INFERRED(TestNode("Resize", 18)
                      .input(F32, {1, 3, 10, 20})
                      .omitted()
                      .omitted()
                      .ints_input({5, 5})
                      .attr_ints("axes", {2, 3})
                      .attr("keep_aspect_ratio_policy", "not_larger")
                      .infer0(),
                  F32, {1, 3, 3, 5});
  EXPECT_INFERRED(
      TestNode("Resize", 10).input(F32, {1, 1, 4, 4}).floats_input({1, 1, 0.5f, 0.5f}).infer0(),
      F32, {1, 1, 2, 2});
  EXPECT_INFERRED(
      TestNode("Upsample", 9).input(F32, {1, 1, 4, 4}).floats_input({1, 1, 2, 2}).infer0(), F32,
      {1, 1, 8, 8});
}

TEST(RecurrentInference, LstmShapes) {
  auto out = TestNode("LSTM")
                 .input(F32, {7, 2, 10})
                 .input(F32, {2, 80, 10})
                 .input(F32, {2, 80, 20})
                 .attr("hidden_size", int64_t{20})
                 .attr("direction", "bidirectional")
                 .outputs(3)
                 .infer();
  EXPECT_INFERRED(out[0], F32, {7, 2, 2, 20});
  EXPECT_INFERRED(out[1], F32, {2, 2, 20});
  EXPECT_INFERRED(out[2], F32, {2, 2, 20});
  auto gru = TestNode("GRU")
                 .input(F32, {4, 7, 10})
                 .input(F32, {1, 45, 10})
                 .input(F32, {1, 45, 15})
                 .attr("layout", int64_t{1})
                 .outputs(2)
                 .infer();
  EXPECT_INFERRED(gru[0], F32, {4, 7, 1, 15});
  TestNode bad("RNN");
  bad.input(F32, {7, 2, 10}).input(F32, {1, 20, 12}).input(F32, {1, 20, 20});
  expect_invalid(bad, "input sizes of X and W disagree: 10 vs 12");
}

TEST(ControlFlowInference, IfJoinsBranchShapes) {
  TestGraph then_graph(F32, {2, 3}), else_graph(F32, {2, 5});
  EXPECT_INFERRED(TestNode("If")
                      .input(BOOL, {})
                      .attr_graph("then_branch", &then_graph.graph)
                      .attr_graph("else_branch", &else_graph.graph)
                      .infer0(),
                  F32, {2, U});
  TestGraph int_graph(I64, {2, 3});
  TestNode bad("If");
  bad.input(BOOL, {})
      .attr_graph("then_branch", &then_graph.graph)
      .attr_graph("else_branch", &int_graph.graph);
  expect_invalid(bad, "float32 in then_branch but int64 in else_branch");
}

TEST(ControlFlowInference, LoopAndScanOutputs) {
  // Loop body: (cond, carried [2,3], scan output [4]) -> final carried [2,3], stacked [?,4].
  TestGraph loop_body({{BOOL, {}}, {F32, {2, 3}}, {F32, {4}}});
  auto loop = TestNode("Loop")
                  .input(I64, {})
                  .input(BOOL, {})
                  .input(F32, {2, 3})
                  .attr_graph("body", &loop_body.graph)
                  .outputs(2)
                  .infer();
  EXPECT_INFERRED(loop[0], F32, {2, 3});
  EXPECT_INFERRED(loop[1], F32, {U, 4});
  // Scan over a [5, 8] sequence with one state [8]: state [8], scan output stacked to [5, 2].
  TestGraph scan_body({{F32, {8}}, {F32, {2}}});
  auto scan = TestNode("Scan")
                  .input(F32, {8})
                  .input(F32, {5, 8})
                  .attr("num_scan_inputs", int64_t{1})
                  .attr_graph("body", &scan_body.graph)
                  .outputs(2)
                  .infer();
  EXPECT_INFERRED(scan[0], F32, {8});
  EXPECT_INFERRED(scan[1], F32, {5, 2});
  TestNode missing("Loop");
  missing.input(I64, {}).input(BOOL, {});
  expect_invalid(missing, "attribute body (a graph) is required");
}

TEST(MiscInference, SignalLossSamplingQuantizedConv) {
  EXPECT_INFERRED(
      TestNode("GridSample", 16).input(F32, {2, 3, 8, 8}).input(F32, {2, 5, 6, 2}).infer0(), F32,
      {2, 3, 5, 6});
  EXPECT_INFERRED(TestNode("NegativeLogLikelihoodLoss")
                      .input(F32, {4, 10, 3})
                      .input(I64, {4, 3})
                      .attr("reduction", "none")
                      .infer0(),
                  F32, {4, 3});
  EXPECT_INFERRED(TestNode("SoftmaxCrossEntropyLoss").input(F32, {4, 10}).input(I64, {4}).infer0(),
                  F32, {});
  EXPECT_INFERRED(TestNode("DFT").input(F32, {1, 16, 1}).attr("onesided", int64_t{1}).infer0(), F32,
                  {1, 9, 2});
  EXPECT_INFERRED(TestNode("HannWindow").ints_input({10}, true).infer0(), F32, {10});
  EXPECT_INFERRED(TestNode("QLinearConv")
                      .input(LOOM_DTYPE_UINT8, {1, 3, 8, 8})
                      .input(F32, {})
                      .input(LOOM_DTYPE_UINT8, {})
                      .input(LOOM_DTYPE_INT8, {4, 3, 3, 3})
                      .input(F32, {})
                      .input(LOOM_DTYPE_INT8, {})
                      .input(F32, {})
                      .input(LOOM_DTYPE_UINT8, {})
                      .infer0(),
                  LOOM_DTYPE_UINT8, {1, 4, 6, 6});
  EXPECT_INFERRED(TestNode("ConvInteger")
                      .input(LOOM_DTYPE_UINT8, {1, 1, 5, 5})
                      .input(LOOM_DTYPE_UINT8, {1, 1, 2, 2})
                      .infer0(),
                  LOOM_DTYPE_INT32, {1, 1, 4, 4});
  EXPECT_INFERRED(
      TestNode("DepthToSpace").input(F32, {1, 8, 2, 3}).attr("blocksize", int64_t{2}).infer0(), F32,
      {1, 2, 4, 6});
  TestNode bad("DepthToSpace");
  bad.input(F32, {1, 6, 2, 3}).attr("blocksize", int64_t{2});
  expect_invalid(bad, "not divisible by blocksize^2 = 4");
  EXPECT_INFERRED(TestNode("CenterCropPad", 18)
                      .input(F32, {20, 10, 3})
                      .ints_input({12, 12})
                      .attr_ints("axes", {0, 1})
                      .infer0(),
                  F32, {12, 12, 3});
  EXPECT_INFERRED(TestNode("SequenceLength").unknown_rank_input(F32).infer0(), I64, {});
}

TEST(MlInference, ClassifiersRegressorsEncoders) {
  EXPECT_INFERRED(TestNode("LinearRegressor", 1, "ai.onnx.ml")
                      .input(F32, {U, 4})
                      .attr("targets", int64_t{2})
                      .infer0(),
                  F32, {U, 2});
  auto classifier = TestNode("TreeEnsembleClassifier", 3, "ai.onnx.ml")
                        .input(F32, {7, 4})
                        .attr_ints("classlabels_int64s", {0, 1, 2})
                        .outputs(2)
                        .infer();
  EXPECT_INFERRED(classifier[0], I64, {7});
  EXPECT_INFERRED(classifier[1], F32, {7, 3});
  EXPECT_INFERRED(TestNode("Scaler", 1, "ai.onnx.ml").input(LOOM_DTYPE_INT32, {3, 2}).infer0(), F32,
                  {3, 2});
  EXPECT_INFERRED(TestNode("LabelEncoder", 2, "ai.onnx.ml")
                      .input(LOOM_DTYPE_STRING, {5})
                      .attr_strings("keys_strings", 2)
                      .attr_ints("values_int64s", {1, 2})
                      .infer0(),
                  I64, {5});
  EXPECT_INFERRED(TestNode("StringNormalizer").input(LOOM_DTYPE_STRING, {1, 4}).infer0(),
                  LOOM_DTYPE_STRING, {1, 4});
}

// StringConcat broadcasts; StringSplit adds an axis of data-dependent extent and counts in int64.
TEST(TextInference, StringConcatAndStringSplit) {
  EXPECT_INFERRED(TestNode("StringConcat", 20)
                      .input(LOOM_DTYPE_STRING, {3, 1})
                      .input(LOOM_DTYPE_STRING, {4})
                      .infer0(),
                  LOOM_DTYPE_STRING, {3, 4});
  std::vector<loom_inferred_t> split =
      TestNode("StringSplit", 20).input(LOOM_DTYPE_STRING, {2, 3}).outputs(2).infer();
  EXPECT_INFERRED(split[0], LOOM_DTYPE_STRING, {2, 3, -1});
  EXPECT_INFERRED(split[1], I64, {2, 3});
  EXPECT_INFERRED(TestNode("RegexFullMatch", 20).input(LOOM_DTYPE_STRING, {4, 2}).infer0(),
                  LOOM_DTYPE_BOOL, {4, 2});
}

// ImageDecoder: [H, W, C] uint8, the rank and C known before the file is read (a Reshape or
// Transpose after it can then be planned), H and W not.
TEST(TextInference, ImageDecoderKnowsRankAndChannels) {
  EXPECT_INFERRED(TestNode("ImageDecoder", 20).input(LOOM_DTYPE_UINT8, {1234}).infer0(),
                  LOOM_DTYPE_UINT8, {-1, -1, 3});
  EXPECT_INFERRED(TestNode("ImageDecoder", 20)
                      .input(LOOM_DTYPE_UINT8, {-1})
                      .attr("pixel_format", "BGR")
                      .infer0(),
                  LOOM_DTYPE_UINT8, {-1, -1, 3});
  EXPECT_INFERRED(TestNode("ImageDecoder", 20)
                      .input(LOOM_DTYPE_UINT8, {99})
                      .attr("pixel_format", "Grayscale")
                      .infer0(),
                  LOOM_DTYPE_UINT8, {-1, -1, 1});
  EXPECT_THROW(TestNode("ImageDecoder", 20)
                   .input(LOOM_DTYPE_UINT8, {9})
                   .attr("pixel_format", "CMYK")
                   .infer(),
               std::exception);
  EXPECT_THROW(TestNode("ImageDecoder", 20).input(LOOM_DTYPE_UINT8, {3, 3}).infer(),
               std::exception);
  EXPECT_THROW(TestNode("ImageDecoder", 20).input(LOOM_DTYPE_FLOAT32, {9}).infer(), std::exception);
}

TEST(SchemaLookup, ModelOpsOfResNetMobileNetBertHaveInference) {
  for (const char* op : {"Conv",
                         "Relu",
                         "Clip",
                         "Add",
                         "MaxPool",
                         "GlobalAveragePool",
                         "Flatten",
                         "Gemm",
                         "MatMul",
                         "Reshape",
                         "Transpose",
                         "Softmax",
                         "Div",
                         "Mul",
                         "Sub",
                         "Pow",
                         "Sqrt",
                         "ReduceMean",
                         "Erf",
                         "Where",
                         "Equal",
                         "Expand",
                         "Shape",
                         "Gather",
                         "Unsqueeze",
                         "Concat",
                         "Slice",
                         "Cast",
                         "ConstantOfShape",
                         "LayerNormalization"}) {
    for (int64_t opset : {13, 17, 18}) {
      const loom::core::BuiltinSchema* best = nullptr;
      for (const auto& s : loom::core::builtin_schemas())
        if (std::string(s.domain).empty() && std::string(s.op_type) == op &&
            s.since_version <= opset && (!best || s.since_version > best->since_version))
          best = &s;
      if (std::string(op) == "LayerNormalization" && opset < 17) continue;
      ASSERT_NE(best, nullptr) << op << " at opset " << opset;
      EXPECT_NE(best->infer, nullptr) << op << " at opset " << opset;
    }
  }
}

}  // namespace
