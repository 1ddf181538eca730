// Shape, Reshape, Flatten, Squeeze/Unsqueeze, Concat/Split, Tile/Expand and small generator
// ops of the cpu device, through the kernel harness.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

using testing::shape;

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(ShapeOps, ShapeWithStartEnd) {
  KernelHarness h("Shape", 15);
  h.input(make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{2, 3, 4, 5}));
  h.attr_int("start", 1);
  h.attr_int("end", -1);
  auto out = h.run(1);
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{3, 4}));
}

TEST(ShapeOps, SizeCountsElements) {
  KernelHarness h("Size", 13);
  h.input(make_tensor(LOOM_DTYPE_INT8, std::vector<int64_t>{2, 3, 4}));
  auto out = h.run(1);
  EXPECT_EQ(out[0].view.rank, 0);
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{24}));
}

TEST(ShapeOps, ReshapeCopiesZeroAndInfersMinusOne) {
  KernelHarness h("Reshape", 13);
  Tensor in = make_filled<float>({2, 3, 4}, iota(24));
  h.input(in);
  h.input(make_filled<int64_t>({3}, {0, -1, 2}));
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(out[0].view.data, in.view.data) << "Reshape must not copy";
  EXPECT_EQ(values_of<float>(out[0]), iota(24));
}

TEST(ShapeOps, ReshapeAllowZeroKeepsZeroDims) {
  KernelHarness h("Reshape", 14);
  h.input(make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{0, 3}));
  h.input(make_filled<int64_t>({3}, {3, 0, 5}));
  h.attr_int("allowzero", 1);
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{3, 0, 5}));
}

TEST(ShapeOps, ReshapeMismatchNamesNodeAndShapes) {
  KernelHarness h("Reshape", 13);
  h.input(make_filled<float>({2, 3}, iota(6)));
  h.input(make_filled<int64_t>({2}, {4, 2}));
  try {
    h.run(1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_ARGUMENT);
    std::string m = e.what();
    EXPECT_NE(m.find("Reshape node 'test'"), std::string::npos) << m;
    EXPECT_NE(m.find("[4, 2]"), std::string::npos) << m;
  }
}

// [2^62 + 1, 4] has 2^64 + 4 elements, which int64 arithmetic wraps to 4, the input's count:
// it must be refused, not produce a tensor its readers overrun.
TEST(ShapeOps, ReshapeToAWrappingElementCountIsRefused) {
  for (const std::vector<int64_t>& target : {std::vector<int64_t>{(int64_t{1} << 62) + 1, 4},
                                             std::vector<int64_t>{-1, int64_t{1} << 62, 8},
                                             std::vector<int64_t>{INT64_MAX, INT64_MAX}}) {
    KernelHarness h("Reshape", 13);
    h.input(make_filled<float>({4}, iota(4)));
    h.input(make_filled<int64_t>({static_cast<int64_t>(target.size())}, target));
    try {
      auto out = h.run(1);
      FAIL() << "reshaped to " << target[0] << " x " << target[1];
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_ARGUMENT);
      std::string m = e.what();
      EXPECT_TRUE(m.find("more elements than int64 can count") != std::string::npos ||
                  m.find("cannot reshape") != std::string::npos)
          << m;
    }
  }
}

TEST(ShapeOps, FlattenAtAxis) {
  KernelHarness h("Flatten", 13);
  h.input(make_filled<float>({2, 3, 4}, iota(24)));
  h.attr_int("axis", -1);
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{6, 4}));
}

TEST(ShapeOps, SqueezeAxesInputAndAllOnes) {
  KernelHarness h("Squeeze", 13);
  h.input(make_filled<float>({1, 3, 1, 2}, iota(6)));
  h.input(make_filled<int64_t>({1}, {-2}));
  EXPECT_EQ(shape(h.run(1)[0]), (std::vector<int64_t>{1, 3, 2}));

  KernelHarness all("Squeeze", 11);
  all.input(make_filled<float>({1, 3, 1, 2}, iota(6)));
  EXPECT_EQ(shape(all.run(1)[0]), (std::vector<int64_t>{3, 2}));

  KernelHarness bad("Squeeze", 11);
  bad.input(make_filled<float>({1, 3}, iota(3)));
  bad.attr_ints("axes", {1});
  EXPECT_THROW(bad.run(1), Error);
}

TEST(ShapeOps, UnsqueezeAttributeAndInputForms) {
  KernelHarness h("Unsqueeze", 11);
  h.input(make_filled<float>({3, 2}, iota(6)));
  h.attr_ints("axes", {0, -1});
  EXPECT_EQ(shape(h.run(1)[0]), (std::vector<int64_t>{1, 3, 2, 1}));

  KernelHarness h13("Unsqueeze", 13);
  h13.input(make_filled<float>({3, 2}, iota(6)));
  h13.input(make_filled<int64_t>({2}, {1, 3}));
  EXPECT_EQ(shape(h13.run(1)[0]), (std::vector<int64_t>{3, 1, 2, 1}));
}

TEST(ShapeOps, ConcatMiddleAxis) {
  KernelHarness h("Concat", 13);
  h.input(make_filled<float>({2, 1}, {1, 2}));
  h.input(make_filled<float>({2, 2}, {3, 4, 5, 6}));
  h.attr_int("axis", -1);
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

TEST(ShapeOps, SplitInputSizesAndNumOutputs) {
  KernelHarness h("Split", 13);
  h.input(make_filled<float>({2, 3}, iota(6)));
  h.input(make_filled<int64_t>({2}, {1, 2}));
  h.attr_int("axis", 1);
  auto out = h.run(2);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{0, 3}));
  EXPECT_EQ(values_of<float>(out[1]), (std::vector<float>{1, 2, 4, 5}));

  // Opset 18: 5 elements into 3 outputs = 2, 2, 1.
  KernelHarness h18("Split", 18);
  h18.input(make_filled<float>({5}, iota(5)));
  h18.attr_int("num_outputs", 3);
  auto parts = h18.run(3);
  EXPECT_EQ(values_of<float>(parts[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{2, 3}));
  EXPECT_EQ(values_of<float>(parts[2]), (std::vector<float>{4}));
}

TEST(ShapeOps, TileRepeatsEachAxis) {
  KernelHarness h("Tile", 13);
  h.input(make_filled<int32_t>({2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({2}, {2, 3}));
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                                                              1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
}

TEST(ShapeOps, ExpandBroadcastsBothWays) {
  KernelHarness h("Expand", 13);
  h.input(make_filled<float>({3, 1}, {1, 2, 3}));
  h.input(make_filled<int64_t>({3}, {2, 1, 2}));
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));

  KernelHarness bad("Expand", 13);
  bad.input(make_filled<float>({3}, {1, 2, 3}));
  bad.input(make_filled<int64_t>({1}, {2}));
  EXPECT_THROW(bad.run(1), Error);
}

TEST(ShapeOps, DepthToSpaceModes) {
  // 1x4x1x1 -> 1x1x2x2. DCR: channel = (bh * 2 + bw) * C' + c; CRD: c * 4 + bh * 2 + bw.
  KernelHarness dcr("DepthToSpace", 13);
  dcr.input(make_filled<float>({1, 8, 1, 1}, iota(8)));
  dcr.attr_int("blocksize", 2);
  EXPECT_EQ(values_of<float>(dcr.run(1)[0]), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  KernelHarness crd("DepthToSpace", 13);
  crd.input(make_filled<float>({1, 8, 1, 1}, iota(8)));
  crd.attr_int("blocksize", 2);
  crd.attr_string("mode", "CRD");
  EXPECT_EQ(values_of<float>(crd.run(1)[0]), iota(8));

  KernelHarness s2d("SpaceToDepth", 13);
  s2d.input(make_filled<float>({1, 1, 2, 2}, {0, 1, 2, 3}));
  s2d.attr_int("blocksize", 2);
  auto out = s2d.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{1, 4, 1, 1}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{0, 1, 2, 3}));
}

TEST(ShapeOps, RangeOneHotNonZeroCompressTriluEyeLike) {
  KernelHarness range("Range", 11);
  range.input(make_filled<int64_t>({}, {10}));
  range.input(make_filled<int64_t>({}, {1}));
  range.input(make_filled<int64_t>({}, {-3}));
  EXPECT_EQ(values_of<int64_t>(range.run(1)[0]), (std::vector<int64_t>{10, 7, 4}));

  KernelHarness onehot("OneHot", 11);
  onehot.input(make_filled<int64_t>({3}, {0, -1, 5}));
  onehot.input(make_filled<int64_t>({}, {3}));
  onehot.input(make_filled<float>({2}, {0, 9}));
  auto oh = onehot.run(1);
  EXPECT_EQ(shape(oh[0]), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values_of<float>(oh[0]), (std::vector<float>{9, 0, 0, 0, 0, 9, 0, 0, 0}));

  KernelHarness nz("NonZero", 13);
  nz.input(make_filled<int32_t>({2, 2}, {0, 5, 7, 0}));
  auto nzo = nz.run(1);
  EXPECT_EQ(shape(nzo[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<int64_t>(nzo[0]), (std::vector<int64_t>{0, 1, 1, 0}));

  KernelHarness compress("Compress", 11);
  compress.input(make_filled<float>({3, 2}, iota(6)));
  compress.input(make_filled<bool>({2}, {false, true}));
  compress.attr_int("axis", 0);
  EXPECT_EQ(values_of<float>(compress.run(1)[0]), (std::vector<float>{2, 3}));

  KernelHarness trilu("Trilu", 14);
  trilu.input(make_filled<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  trilu.input(make_filled<int64_t>({}, {-1}));
  trilu.attr_int("upper", 0);
  EXPECT_EQ(values_of<float>(trilu.run(1)[0]), (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));

  KernelHarness eye("EyeLike", 9);
  eye.input(make_tensor(LOOM_DTYPE_INT32, std::vector<int64_t>{2, 3}));
  eye.attr_int("k", 1);
  eye.attr_int("dtype", LOOM_DTYPE_FLOAT64);
  auto e = eye.run(1);
  EXPECT_EQ(e[0].view.dtype, LOOM_DTYPE_FLOAT64);
  EXPECT_EQ(values_of<double>(e[0]), (std::vector<double>{0, 1, 0, 0, 0, 1}));
}

TEST(ShapeOps, ReverseSequenceBatchMajor) {
  KernelHarness h("ReverseSequence", 10);
  // batch_axis 0, time_axis 1: [[0,1,2],[3,4,5]] with lens [2, 3].
  h.input(make_filled<float>({2, 3}, iota(6)));
  h.input(make_filled<int64_t>({2}, {2, 3}));
  h.attr_int("batch_axis", 0);
  h.attr_int("time_axis", 1);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 0, 2, 5, 4, 3}));
}

TEST(ShapeOps, ConcatOfStringsOwnsTheBytes) {
  auto strings = [](std::vector<std::string> values) {
    Tensor t =
        make_tensor(LOOM_DTYPE_STRING, std::vector<int64_t>{static_cast<int64_t>(values.size())});
    auto* v = static_cast<loom_string_t*>(t.view.data);
    for (size_t i = 0; i < values.size(); ++i) {
      (*t.strings)[i] = values[i];
      v[i] = {(*t.strings)[i].data(), (*t.strings)[i].size()};
    }
    return t;
  };
  std::vector<Tensor> out;
  {
    KernelHarness h("Concat", 13);
    h.input(strings({"ab", "c"}));
    h.input(strings({"def"}));
    h.attr_int("axis", 0);
    out = h.run(1);
  }  // inputs are gone: the output must still be readable
  auto* v = static_cast<const loom_string_t*>(out[0].view.data);
  ASSERT_EQ(out[0].view.dims[0], 3);
  EXPECT_EQ(std::string(v[0].data, v[0].size), "ab");
  EXPECT_EQ(std::string(v[2].data, v[2].size), "def");
}

}  // namespace
}  // namespace loom::cpu
