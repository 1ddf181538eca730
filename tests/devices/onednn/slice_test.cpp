// Slice and Split on the onednn device against the cpu reference: every axis of 2D/3D/4D
// tensors, negative and clamped indices, several axes at once, the opset 1 attribute form,
// channel slices of a blocked (nChw16c) convolution output at block boundaries and off them,
// ShuffleNet's channel split, a ViT-like fused QKV split, Split with and without sizes, and
// the refusals (steps other than 1, empty results) that leave a node to the cpu device.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

using Inputs = std::vector<std::pair<std::string, Tensor>>;

// x of `shape` -> Slice(starts, ends[, axes[, steps]]) -> y, at opset 13.
ModelBuilder slice_model(const std::vector<int64_t>& shape, const std::vector<int64_t>& starts,
                         const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
                         const std::vector<int64_t>& steps = {}) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, shape);
  auto ints = [](const std::vector<int64_t>& v) {
    return int64_tensor({static_cast<int64_t>(v.size())}, v);
  };
  m.initializer("starts", ints(starts));
  m.initializer("ends", ints(ends));
  std::vector<std::string> in{"x", "starts", "ends"};
  if (!axes.empty() || !steps.empty()) {
    m.initializer("axes", ints(axes));
    in.push_back("axes");
  }
  if (!steps.empty()) {
    m.initializer("steps", ints(steps));
    in.push_back("steps");
  }
  m.node("Slice", in, {"y"}, "slice");
  m.output("y");
  return m;
}

// The steps of the onednn program (labels logged with verbose=1).
std::vector<std::string> program_steps(const ModelBuilder& m, const Inputs& inputs) {
  return run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn");
}

bool has_step(const std::vector<std::string>& steps, const std::string& prefix) {
  for (const std::string& s : steps)
    if (s.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(OnednnSlice, EveryAxisOfTwoThreeAndFourDimensionalTensors) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{6, 7}, {4, 5, 6}, {2, 5, 6, 7}}) {
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
      SCOPED_TRACE("rank " + std::to_string(shape.size()) + " axis " + std::to_string(axis));
      int64_t dim = shape[static_cast<size_t>(axis)];
      check_unary_model(slice_model(shape, {1}, {dim}, {axis}), shape);
      check_unary_model(slice_model(shape, {0}, {(dim + 1) / 2}, {axis}), shape);
      check_unary_model(slice_model(shape, {dim - 1}, {dim}, {axis}), shape);  // one index
    }
  }
}

TEST(OnednnSlice, NegativeIndicesAndAxes) {
  check_unary_model(slice_model({4, 5, 6}, {-4}, {-1}, {-1}), {4, 5, 6});
  check_unary_model(slice_model({4, 5, 6}, {-3, 1}, {-1, -2}, {-3, 1}), {4, 5, 6});
}

TEST(OnednnSlice, ClampedStartsAndEnds) {
  // Out-of-range starts clamp to 0, ends to the extent; INT64_MAX means "to the end".
  check_unary_model(slice_model({4, 5, 6}, {-100}, {kMax}, {1}), {4, 5, 6});
  check_unary_model(slice_model({4, 5, 6}, {2, 3}, {1000, kMax}, {0, 2}), {4, 5, 6});
  check_unary_model(slice_model({4, 5, 6}, {std::numeric_limits<int64_t>::min()}, {3}, {2}),
                    {4, 5, 6});
}

TEST(OnednnSlice, Int32IndicesAndConstantInput) {
  // Indices may be int32; the sliced tensor may be a constant added to the input.
  auto int32s = [](std::vector<int32_t> v) {
    Tensor t;
    t.dtype = LOOM_DTYPE_INT32;
    t.shape = {static_cast<int64_t>(v.size())};
    t.bytes.resize(v.size() * sizeof(int32_t));
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    return t;
  };
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 4});
  m.initializer("k", random_tensor(LOOM_DTYPE_FLOAT32, {5, 6}, 2));
  m.initializer("starts", int32s({1, -4}));
  m.initializer("ends", int32s({4, std::numeric_limits<int32_t>::max()}));
  m.initializer("axes", int32s({0, 1}));
  m.node("Slice", {"k", "starts", "ends", "axes"}, {"ks"});
  m.node("Mul", {"x", "ks"}, {"m"});
  m.node("Slice", {"m", "starts", "ends", "axes"}, {"y"});
  m.output("y");
  check_unary_model(m, {3, 4});
}

TEST(OnednnSlice, SeveralAxesAtOnceWithUnitSteps) {
  check_unary_model(slice_model({2, 5, 6, 7}, {1, 1, 2}, {5, -1, 6}, {3, 1, 2}, {1, 1, 1}),
                    {2, 5, 6, 7});
  // No axes: starts/ends apply to the leading axes in order.
  check_unary_model(slice_model({3, 5, 6}, {1, 2}, {3, 4}), {3, 5, 6});
}

TEST(OnednnSlice, OpsetOneAttributeForm) {
  ModelBuilder m(9);
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 5, 6});
  m.node("Slice", {"x"}, {"y"})
      .ints("starts", {1, -4})
      .ints("ends", {3, kMax})
      .ints("axes", {0, 2});
  m.output("y");
  check_unary_model(m, {4, 5, 6});
}

// A 3x3 depthwise convolution (so the subgraph shares the channel-blocked layout) whose output
// channels [begin, end) go through a Relu; both the slice and the full output are outputs.
ModelBuilder blocked_channel_slice(int64_t channels, int64_t begin, int64_t end) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, channels, 9, 9});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {channels, 1, 3, 3}, 2));
  m.initializer("starts", int64_tensor({1}, {begin}));
  m.initializer("ends", int64_tensor({1}, {end}));
  m.initializer("axes", int64_tensor({1}, {1}));
  m.node("Conv", {"x", "w"}, {"c"}).i("group", channels).ints("pads", {1, 1, 1, 1});
  m.node("Slice", {"c", "starts", "ends", "axes"}, {"s"}, "slice");
  m.node("Relu", {"s"}, {"y"});
  m.output("y");
  return m;
}

TEST(OnednnSlice, ChannelSliceOfBlockedConvolutionOutput) {
  // Whether the slice reads the convolution's blocked output in place: kWhole for boxes of
  // whole blocks (or the last, partial block) in both nChw16c and nChw8c, kOff for boxes that
  // are neither in both, kEither where it depends on the block width this CPU gets.
  enum Expect { kWhole, kOff, kEither };
  struct Case {
    int64_t channels, begin, end;
    Expect expect;
  };
  for (const Case& c : {Case{48, 16, 32, kWhole}, Case{48, 0, 16, kWhole}, Case{40, 32, 40, kWhole},
                        Case{48, 4, 20, kOff}, Case{48, 16, 20, kOff}, Case{24, 3, 24, kOff},
                        Case{40, 16, 40, kEither}, Case{48, 8, 24, kEither}}) {
    SCOPED_TRACE("channels " + std::to_string(c.channels) + " [" + std::to_string(c.begin) + ", " +
                 std::to_string(c.end) + ")");
    ModelBuilder m = blocked_channel_slice(c.channels, c.begin, c.end);
    std::vector<int64_t> shape{1, c.channels, 9, 9};
    check_unary_model(m, shape);
    std::vector<std::string> steps =
        program_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}});
    ASSERT_TRUE(has_step(steps, "Slice slice")) << "no Slice step in the onednn program";
    // The convolution's output is read by the slice only, so a "reorder c" step is the slice
    // taking it plain: never for a box of whole blocks, always for an off-block box where the
    // convolution wrote a channel-blocked layout (the device asks for one on AVX2 and AVX-512
    // CPUs when a subgraph has a depthwise convolution; elsewhere oneDNN picks channels-last).
    bool blocked_isa = false, reordered = false;
    for (const std::string& s : steps) {
      if (s.rfind("Conv", 0) == 0)
        blocked_isa =
            s.find(":avx2") != std::string::npos || s.find(":avx512") != std::string::npos;
      reordered = reordered || s.rfind("reorder c", 0) == 0;
    }
    if (c.expect == kWhole) {
      EXPECT_FALSE(reordered) << "the slice took a whole-block box of the blocked output plain";
    } else if (c.expect == kOff && blocked_isa) {
      EXPECT_TRUE(reordered) << "the slice read an off-block box of the blocked output in place";
    }
  }
}

TEST(OnednnSlice, ShuffleNetChannelSplitBlock) {
  // ShuffleNetV2's stride-1 unit: halves of the channels by two Slices, one half through
  // 1x1 -> depthwise 3x3 -> 1x1, Concat, then the channel shuffle (Reshape/Transpose/Reshape).
  const int64_t c = 32, h = c / 2;
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, c, 8, 8});
  m.initializer("w0", random_tensor(LOOM_DTYPE_FLOAT32, {c, c, 1, 1}, 2, -0.3, 0.3));
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {h, h, 1, 1}, 3, -0.3, 0.3));
  m.initializer("wd", random_tensor(LOOM_DTYPE_FLOAT32, {h, 1, 3, 3}, 4, -0.3, 0.3));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {h, h, 1, 1}, 5, -0.3, 0.3));
  m.initializer("zero", int64_tensor({1}, {0}));
  m.initializer("half", int64_tensor({1}, {h}));
  m.initializer("end", int64_tensor({1}, {kMax}));
  m.initializer("axis", int64_tensor({1}, {1}));
  m.initializer("split_shape", int64_tensor({5}, {1, 2, h, 8, 8}));
  m.initializer("shape", int64_tensor({4}, {1, c, 8, 8}));
  m.node("Conv", {"x", "w0"}, {"stem"});
  m.node("Relu", {"stem"}, {"t"});
  m.node("Slice", {"t", "zero", "half", "axis"}, {"left"});
  m.node("Slice", {"t", "half", "end", "axis"}, {"right"});
  m.node("Conv", {"right", "w1"}, {"r1"});
  m.node("Relu", {"r1"}, {"r1r"});
  m.node("Conv", {"r1r", "wd"}, {"rd"}).i("group", h).ints("pads", {1, 1, 1, 1});
  m.node("Conv", {"rd", "w2"}, {"r2"});
  m.node("Relu", {"r2"}, {"r2r"});
  m.node("Concat", {"left", "r2r"}, {"cat"}).i("axis", 1);
  m.node("Reshape", {"cat", "split_shape"}, {"g"});
  m.node("Transpose", {"g"}, {"gt"}).ints("perm", {0, 2, 1, 3, 4});
  m.node("Reshape", {"gt", "shape"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, c, 8, 8});
  check_unary_model(m, {1, c, 8, 8}, 2, "threads=1;conv_layout=any");
}

TEST(OnednnSlice, VitFusedQkvProjectionSplit) {
  // One projection to [q | k | v] along the last axis, sliced into three, then attention.
  const int64_t tokens = 5, width = 24;
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, tokens, width});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {width, 3 * width}, 2, -0.3, 0.3));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3 * width}, 3));
  m.initializer("last", int64_tensor({1}, {-1}));
  for (int64_t i = 0; i <= 3; ++i)
    m.initializer("at" + std::to_string(i), int64_tensor({1}, {i * width}));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "b"}, {"qkv"});
  m.node("Slice", {"qkv", "at0", "at1", "last"}, {"q"});
  m.node("Slice", {"qkv", "at1", "at2", "last"}, {"k"});
  m.node("Slice", {"qkv", "at2", "at3", "last"}, {"v"});
  m.node("Transpose", {"k"}, {"kt"}).ints("perm", {0, 2, 1});
  m.node("MatMul", {"q", "kt"}, {"scores"});
  m.node("Softmax", {"scores"}, {"p"}).i("axis", -1);
  m.node("MatMul", {"p", "v"}, {"y"});
  m.output("y");
  check_unary_model(m, {2, tokens, width});
}

TEST(OnednnSplit, EqualPartsWithoutSizes) {
  for (int64_t axis : {0, 1, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, {6, 6, 9});
    m.node("Split", {"x"}, {"a", "b", "c"}).i("axis", axis);
    m.output("a");
    m.output("b");
    m.output("c");
    check_unary_model(m, {6, 6, 9});
  }
}

TEST(OnednnSplit, ExplicitSizesAsInputAndAttribute) {
  ModelBuilder m13(13);
  m13.input("x", LOOM_DTYPE_FLOAT32, {2, 7, 5});
  m13.initializer("split", int64_tensor({3}, {2, 4, 1}));
  m13.node("Split", {"x", "split"}, {"a", "b", "c"}).i("axis", 1);
  m13.output("a");
  m13.output("b");
  m13.output("c");
  check_unary_model(m13, {2, 7, 5});

  ModelBuilder m11(11);
  m11.input("x", LOOM_DTYPE_FLOAT32, {2, 7, 5});
  m11.node("Split", {"x"}, {"a", "b"}).i("axis", -1).ints("split", {3, 2});
  m11.output("a");
  m11.output("b");
  check_unary_model(m11, {2, 7, 5});
}

TEST(OnednnSplit, BlockedConvolutionOutputIntoChannelHalves) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 32, 7, 7});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 1, 3, 3}, 2));
  m.node("Conv", {"x", "w"}, {"c"}).i("group", 32).ints("pads", {1, 1, 1, 1});
  m.node("Split", {"c"}, {"a", "b"}).i("axis", 1);
  m.node("Relu", {"a"}, {"ra"});
  m.node("Sigmoid", {"b"}, {"sb"});
  m.node("Mul", {"ra", "sb"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 32, 7, 7});
}

TEST(OnednnSlice, StepOtherThanOneStaysOnCpu) {
  expect_refused(slice_model({4, 6, 5}, {0}, {kMax}, {1}, {2}), {4, 6, 5}, "step 2");
  expect_refused(slice_model({4, 6, 5}, {-1}, {-kMax}, {2}, {-1}), {4, 6, 5}, "step -1");
}

TEST(OnednnSlice, EmptyResultStaysOnCpu) {
  // The core's shape inference already gives the output a zero extent.
  expect_refused(slice_model({4, 6, 5}, {3}, {2}, {1}), {4, 6, 5}, "empty", false);
}

TEST(OnednnSplit, Opset18NumOutputsWithShorterLastPart) {
  // num_outputs parts of ceil(7 / 3) = 3: extents 3, 3 and 1.
  ModelBuilder m(18);
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 7});
  m.node("Split", {"x"}, {"a", "b", "c"}).i("axis", 1).i("num_outputs", 3);
  m.output("a");
  m.output("b");
  m.output("c");
  std::vector<Tensor> out =
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {4, 7}, 1)}}, onednn_only());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{4, 1}));
}

}  // namespace
}  // namespace loom::onednn_testing
