// Slice, Split and Gather on the onednn device against the cpu reference: every axis of
// 2D/3D/4D tensors, negative and clamped indices, steps of 2 and 3 on one axis and several,
// the opset 1 attribute form, slices of a blocked (nChw16c) convolution output (channels at
// block boundaries and off them, strided H/W in place, strided channels), ShuffleNet's channel
// split, a ViT-like fused QKV split, Swin's patch merging, Split with and without sizes,
// Gather by scalar, range, list and 2-D indices (Swin's QKV pattern among them), and the
// refusals (negative steps, empty results, out-of-range or non-constant Gather indices) that
// leave a node to the cpu device.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
    // CPUs when a subgraph has a depthwise convolution and the channels are whole blocks;
    // elsewhere oneDNN picks channels-last, where its brgemm kernels, `brg*`, run).
    bool blocked_isa = false, reordered = false;
    for (const std::string& s : steps) {
      if (s.rfind("Conv", 0) == 0)
        blocked_isa =
            (s.find(":avx2") != std::string::npos || s.find(":avx512") != std::string::npos) &&
            s.find("[brg") == std::string::npos && s.find("[brdgmm") == std::string::npos;
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

TEST(OnednnSlice, NegativeStepStaysOnCpu) {
  // oneDNN 2.6's descriptors take no negative strides (its reorder happens to read them, but
  // dnnl_memory_desc_init_by_strides refuses them): reversed slices run on cpu.
  expect_refused(slice_model({4, 6, 5}, {-1}, {-kMax}, {2}, {-1}), {4, 6, 5}, "step -1");
  expect_refused(slice_model({4, 6, 5}, {4, 0}, {0, kMax}, {1, 2}, {-2, 2}), {4, 6, 5}, "step -2");
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

// ---- Steps other than 1 ----------------------------------------------------------------------

TEST(OnednnSlice, StepsOfTwoAndThreeOnEveryAxis) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{6, 7}, {4, 5, 6}, {2, 5, 6, 7}}) {
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
      int64_t dim = shape[static_cast<size_t>(axis)];
      for (int64_t step : {2, 3}) {
        SCOPED_TRACE("rank " + std::to_string(shape.size()) + " axis " + std::to_string(axis) +
                     " step " + std::to_string(step));
        check_unary_model(slice_model(shape, {0}, {kMax}, {axis}, {step}), shape);
        check_unary_model(slice_model(shape, {1}, {dim}, {axis}, {step}), shape);  // odd start
        if (dim > 2) check_unary_model(slice_model(shape, {1}, {dim - 1}, {axis}, {step}), shape);
      }
    }
  }
}

TEST(OnednnSlice, StepsOnSeveralAxesAtOnce) {
  // Odd starts, a negative start, a step larger than what remains (one index), and ends that
  // clamp to the extent.
  check_unary_model(slice_model({2, 7, 9, 8}, {1, 0, -7}, {kMax, 7, 1000}, {1, 2, 3}, {2, 3, 2}),
                    {2, 7, 9, 8});
  check_unary_model(slice_model({5, 6, 7}, {1, 3, 0}, {5, 6, 7}, {0, 1, 2}, {3, 5, 2}), {5, 6, 7});
  check_unary_model(slice_model({3, 8, 6}, {-100, 1}, {kMax, -1}, {-1, 1}, {4, 2}), {3, 8, 6});
}

// A depthwise convolution (channel-blocked output) -> Slice(starts, ends, axes, steps) -> Relu.
ModelBuilder blocked_strided_slice(int64_t channels, const std::vector<int64_t>& starts,
                                   const std::vector<int64_t>& axes,
                                   const std::vector<int64_t>& steps) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, channels, 10, 11});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {channels, 1, 3, 3}, 2));
  auto ints = [](const std::vector<int64_t>& v) {
    return int64_tensor({static_cast<int64_t>(v.size())}, v);
  };
  m.initializer("starts", ints(starts));
  m.initializer("ends", ints(std::vector<int64_t>(starts.size(), kMax)));
  m.initializer("axes", ints(axes));
  m.initializer("steps", ints(steps));
  m.node("Conv", {"x", "w"}, {"c"}).i("group", channels).ints("pads", {1, 1, 1, 1});
  m.node("Slice", {"c", "starts", "ends", "axes", "steps"}, {"s"}, "slice");
  m.node("Relu", {"s"}, {"y"});
  m.output("y");
  return m;
}

// Whether the convolution wrote a channel-blocked layout (jit avx2/avx512 kernels) and whether
// the program took its output plain ("reorder c") before the slice.
struct BlockedRead {
  bool blocked_isa = false, reordered = false;
};
BlockedRead blocked_read(const std::vector<std::string>& steps) {
  BlockedRead r;
  for (const std::string& s : steps) {
    if (s.rfind("Conv", 0) == 0)
      r.blocked_isa =
          s.find(":avx2") != std::string::npos || s.find(":avx512") != std::string::npos;
    r.reordered = r.reordered || s.rfind("reorder c", 0) == 0;
  }
  return r;
}

TEST(OnednnSlice, StridedHeightAndWidthOfBlockedConvolutionOutputInPlace) {
  const std::vector<int64_t> shape{1, 32, 10, 11};
  for (const auto& [starts, steps] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{0, 0}, {2, 2}},
        {{1, 0}, {2, 3}},
        {{1, 1}, {2, 2}}}) {
    ModelBuilder m = blocked_strided_slice(32, starts, {2, 3}, steps);
    check_unary_model(m, shape);
    std::vector<std::string> steps_run =
        program_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}});
    ASSERT_TRUE(has_step(steps_run, "Slice slice")) << "no Slice step in the onednn program";
    EXPECT_FALSE(blocked_read(steps_run).reordered)
        << "a strided H/W slice took the blocked convolution output plain";
    // The layout oneDNN picks itself (channels-last where its brgconv kernels run).
    check_unary_model(m, shape, 1, "threads=1;conv_layout=any");
  }
}

TEST(OnednnSlice, StridedChannelsOfBlockedConvolutionOutputGoPlain) {
  const std::vector<int64_t> shape{1, 32, 10, 11};
  ModelBuilder m = blocked_strided_slice(32, {1, 0}, {1, 3}, {2, 2});
  check_unary_model(m, shape);
  BlockedRead r =
      blocked_read(program_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1)}}));
  if (r.blocked_isa) {
    EXPECT_TRUE(r.reordered) << "a channel step read the blocked layout";
  }
  check_unary_model(m, shape, 1, "threads=1;conv_layout=any");
  // A whole-block channel range with a step on W keeps the layout.
  check_unary_model(blocked_strided_slice(32, {16, 1}, {1, 3}, {1, 2}), shape);
}

// Swin-T's patch merging: x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2],
// x[:, 1::2, 1::2] of [N, H, W, C], concatenated on C, LayerNormalization, then a linear map
// from 4C to 2C. torch exports each strided slice as two Slices (one per axis); `chained`
// picks that form, else one Slice with two axes.
ModelBuilder patch_merging(int64_t h, int64_t w, int64_t c, bool chained) {
  ModelBuilder m(17);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, h, w, c});
  m.initializer("gamma", random_tensor(LOOM_DTYPE_FLOAT32, {4 * c}, 2, 0.5, 1.5));
  m.initializer("beta", random_tensor(LOOM_DTYPE_FLOAT32, {4 * c}, 3));
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {4 * c, 2 * c}, 4, -0.3, 0.3));
  m.initializer("end", int64_tensor({1}, {kMax}));
  m.initializer("ends", int64_tensor({2}, {kMax, kMax}));
  m.initializer("two", int64_tensor({1}, {2}));
  m.initializer("twos", int64_tensor({2}, {2, 2}));
  m.initializer("axis1", int64_tensor({1}, {1}));
  m.initializer("axis2", int64_tensor({1}, {2}));
  m.initializer("axes", int64_tensor({2}, {1, 2}));
  for (int64_t i : {0, 1}) m.initializer("at" + std::to_string(i), int64_tensor({1}, {i}));
  std::vector<std::string> parts;
  for (auto [hs, ws] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
    std::string part = "x" + std::to_string(hs) + std::to_string(ws);
    if (chained) {
      m.node("Slice", {"x", "at" + std::to_string(hs), "end", "axis1", "two"}, {part + "_h"});
      m.node("Slice", {part + "_h", "at" + std::to_string(ws), "end", "axis2", "two"}, {part});
    } else {
      std::string starts = "starts" + std::to_string(hs) + std::to_string(ws);
      m.initializer(starts, int64_tensor({2}, {hs, ws}));
      m.node("Slice", {"x", starts, "ends", "axes", "twos"}, {part});
    }
    parts.push_back(part);
  }
  m.node("Concat", parts, {"cat"}).i("axis", -1);
  m.node("LayerNormalization", {"cat", "gamma", "beta"}, {"norm"}).i("axis", -1);
  m.node("MatMul", {"norm", "w"}, {"y"});
  m.output("y");
  return m;
}

TEST(OnednnSlice, SwinPatchMerging) {
  check_unary_model(patch_merging(8, 8, 16, true), {1, 8, 8, 16});
  check_unary_model(patch_merging(8, 8, 16, false), {1, 8, 8, 16});
  check_unary_model(patch_merging(14, 14, 24, true), {1, 14, 14, 24});
}

// ---- Gather -----------------------------------------------------------------------------------

// x of `shape` -> Gather(indices of `index_shape`, axis) -> y.
ModelBuilder gather_model(const std::vector<int64_t>& shape, int64_t axis,
                          const std::vector<int64_t>& index_shape,
                          const std::vector<int64_t>& indices) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, shape);
  m.initializer("i", int64_tensor(index_shape, indices));
  m.node("Gather", {"x", "i"}, {"y"}, "gather").i("axis", axis);
  m.output("y");
  return m;
}

TEST(OnednnGather, ScalarIndexOnFirstSecondAndLastAxes) {
  const std::vector<int64_t> shape{4, 5, 6};
  for (int64_t axis : {0, 1, 2, -1}) {
    int64_t dim = shape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
    for (int64_t index : {int64_t{0}, int64_t{1}, dim - 1, int64_t{-1}, -dim}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + " index " + std::to_string(index));
      check_unary_model(gather_model(shape, axis, {}, {index}), shape);
    }
  }
  // A 4-D input, and a 1-D one (the output is a scalar).
  check_unary_model(gather_model({2, 3, 4, 5}, 2, {}, {-2}), {2, 3, 4, 5});
  check_unary_model(gather_model({7}, 0, {}, {3}), {7});
}

TEST(OnednnGather, OneDimensionalRanges) {
  // One piece each: a contiguous range, a single index kept as an axis of 1, an evenly spaced
  // run.
  check_unary_model(gather_model({4, 7, 3}, 1, {3}, {2, 3, 4}), {4, 7, 3});
  check_unary_model(gather_model({4, 7, 3}, 1, {1}, {-1}), {4, 7, 3});
  check_unary_model(gather_model({4, 7, 3}, -2, {3}, {0, 3, 6}), {4, 7, 3});
  check_unary_model(gather_model({9, 2}, 0, {4}, {-8, -6, -4, -2}), {9, 2});
}

TEST(OnednnGather, IndexListsThatAreNotOneRange) {
  // Repeats, decreasing order, mixed runs, negative indices, and 2-D indices.
  check_unary_model(gather_model({5, 6}, 0, {4}, {3, 0, 2, 2}), {5, 6});
  check_unary_model(gather_model({5, 6}, 1, {6}, {5, 4, 3, 2, 1, 0}), {5, 6});
  check_unary_model(gather_model({3, 8, 4}, 1, {7}, {0, 1, 2, 6, 4, -1, -8}), {3, 8, 4});
  check_unary_model(gather_model({3, 8, 4}, 2, {2, 3}, {0, 2, 1, 3, 3, 0}), {3, 8, 4});
  check_unary_model(gather_model({3, 8, 4}, 0, {2, 2}, {0, 1, 2, 0}), {3, 8, 4});
}

TEST(OnednnGather, Int32IndicesAndConstantNodeIndex) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 6});
  Tensor idx;
  idx.dtype = LOOM_DTYPE_INT32;
  idx.shape = {3};
  std::vector<int32_t> values{1, -1, 1};
  idx.bytes.resize(values.size() * sizeof(int32_t));
  std::memcpy(idx.bytes.data(), values.data(), idx.bytes.size());
  m.initializer("i", idx);
  m.node("Constant", {}, {"k"}).i("value_int", 2);
  m.node("Gather", {"x", "i"}, {"a"}).i("axis", 1);
  m.node("Gather", {"a", "k"}, {"y"}).i("axis", 0);
  m.output("y");
  check_unary_model(m, {4, 6});
}

TEST(OnednnGather, BlockedConvolutionOutput) {
  const std::vector<int64_t> shape{1, 32, 9, 9};
  for (const auto& [axis, index_shape, indices] :
       {std::tuple<int64_t, std::vector<int64_t>, std::vector<int64_t>>{1, {}, {5}},
        {1, {16}, {16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
        {2, {3}, {0, 2, 4}},
        {3, {}, {-1}}}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 1, 3, 3}, 2));
    m.initializer("i", int64_tensor(index_shape, indices));
    m.node("Conv", {"x", "w"}, {"c"}).i("group", 32).ints("pads", {1, 1, 1, 1});
    m.node("Gather", {"c", "i"}, {"g"}).i("axis", axis);
    m.node("Relu", {"g"}, {"y"});
    m.output("y");
    check_unary_model(m, shape);
  }
}

// Swin-T's window attention: windows of 7 tokens, 3 heads of 4, one projection to
// [3, windows, heads, tokens, 4] and three scalar Gathers on axis 0, then q @ k^T, Softmax
// and @ v. Input x: [4, 7, 12].
ModelBuilder swin_qkv_attention() {
  const int64_t windows = 4, tokens = 7, heads = 3, head = 4, width = heads * head;
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {windows, tokens, width});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {width, 3 * width}, 2, -0.3, 0.3));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3 * width}, 3));
  m.initializer("shape", int64_tensor({5}, {windows, tokens, 3, heads, head}));
  for (int64_t i = 0; i < 3; ++i) m.initializer("at" + std::to_string(i), int64_tensor({}, {i}));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "b"}, {"qkv"});
  m.node("Reshape", {"qkv", "shape"}, {"r"});
  m.node("Transpose", {"r"}, {"t"}).ints("perm", {2, 0, 3, 1, 4});
  m.node("Gather", {"t", "at0"}, {"q"}).i("axis", 0);
  m.node("Gather", {"t", "at1"}, {"k"}).i("axis", 0);
  m.node("Gather", {"t", "at2"}, {"v"}).i("axis", 0);
  m.node("Transpose", {"k"}, {"kt"}).ints("perm", {0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"scores"});
  m.node("Softmax", {"scores"}, {"p"}).i("axis", -1);
  m.node("MatMul", {"p", "v"}, {"y"});
  m.output("y");
  return m;
}

TEST(OnednnGather, SwinQkvAttention) {
  check_unary_model(swin_qkv_attention(), {4, 7, 12});
}

// The Swin patterns with bf16 activations (slices and gathers of bf16 slots), compared with
// the f32 cpu device at bfloat16's tolerance. Skipped on CPUs without AVX-512 BF16.
TEST(OnednnGather, SwinPatternsInBfloat16) {
  Tolerance bf16{5e-2, 2e-2};
  try {
    check_unary_model(swin_qkv_attention(), {4, 7, 12}, 1, "precision=bf16", &bf16);
    check_unary_model(patch_merging(8, 8, 16, true), {1, 8, 8, 16}, 1, "precision=bf16", &bf16);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("AVX-512 BF16") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
}

TEST(OnednnGather, OutOfRangeConstantIndexIsRefusedAtCreation) {
  // Shape inference refuses a constant index outside its axis, naming the node, before any
  // device is asked: on onednn alone and with the cpu device beside it.
  ModelBuilder past_end = gather_model({4, 5}, 1, {}, {5});
  expect_refused(past_end, {4, 5}, "constant index 5 is out of range for axis 1 of size 5", false);
  expect_refused(gather_model({4, 5}, 0, {2}, {0, -5}), {4, 5},
                 "constant index -5 is out of range for axis 0 of size 4", false);
  RunOptions fallback;
  fallback.devices = "onednn,cpu";
  std::filesystem::path path = past_end.save();
  EXPECT_THROW(run_model(path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {4, 5}, 1)}}, fallback),
               std::runtime_error);
  std::filesystem::remove(path);
}

TEST(OnednnGather, NonConstantIndicesStayOnCpu) {
  // Indices computed from the input (ArgMax), known only at run time.
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 5});
  m.node("ArgMax", {"x"}, {"i"}).i("axis", 0).i("keepdims", 0);
  m.node("Gather", {"x", "i"}, {"y"}).i("axis", 0);
  m.output("y");
  expect_refused(m, {4, 5}, "Gather indices are not an integer constant");
}

TEST(OnednnGather, ManyScatteredIndicesStayOnCpu) {
  std::vector<int64_t> indices;  // decreasing: 17 runs of one index, one copy each
  for (int64_t i = 16; i >= 0; --i) indices.push_back(i);
  expect_refused(gather_model({17, 3}, 0, {17}, indices), {17, 3}, "evenly spaced runs");
}

}  // namespace
}  // namespace loom::onednn_testing
