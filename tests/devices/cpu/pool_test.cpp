// Pooling kernels against naive window loops written here (MaxPool with indices and
// storage_order, AveragePool with count_include_pad, LpPool, ceil_mode, dilations, pads,
// auto_pad), global pools, MaxUnpool, MaxRoiPool and RoiAlign, plus ONNX spec examples.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

size_t count(const std::vector<int64_t>& d) {
  size_t n = 1;
  for (int64_t x : d) n *= size_t(x);
  return n;
}

std::vector<int64_t> coords(size_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = int64_t(flat % size_t(dims[d]));
    flat /= size_t(dims[d]);
  }
  return c;
}

struct PoolCase {
  std::vector<int64_t> x_dims, kernel, strides, dilations, pads;
  bool ceil_mode = false;
};

enum class Kind { kMax, kAvg, kAvgIncludePad, kLp2 };

struct NaivePool {
  std::vector<int64_t> dims;
  std::vector<float> values;
  std::vector<int64_t> argmax;  // flat input index of the (first) maximum
};

// Windows start at o*s - pad; ceil mode may add a last window that must start inside the
// input or the left padding.
NaivePool naive_pool(const PoolCase& cs, const std::vector<float>& x, Kind kind) {
  const size_t r = cs.kernel.size();
  std::vector<int64_t> in(cs.x_dims.begin() + 2, cs.x_dims.end()), out(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t span = (cs.kernel[d] - 1) * cs.dilations[d] + 1;
    const double exact = double(in[d] + cs.pads[d] + cs.pads[d + r] - span) / double(cs.strides[d]);
    out[d] = int64_t(cs.ceil_mode ? std::ceil(exact) : std::floor(exact)) + 1;
    if (cs.ceil_mode && (out[d] - 1) * cs.strides[d] >= in[d] + cs.pads[d]) --out[d];
  }
  NaivePool res;
  res.dims = {cs.x_dims[0], cs.x_dims[1]};
  res.dims.insert(res.dims.end(), out.begin(), out.end());
  const size_t planes = size_t(cs.x_dims[0] * cs.x_dims[1]), isz = count(in), osz = count(out);
  const size_t ksz = count(cs.kernel);
  for (size_t p = 0; p < planes; ++p)
    for (size_t o = 0; o < osz; ++o) {
      auto oc = coords(o, out);
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t arg = -1, n_in = 0, n_padded = 0;
      for (size_t t = 0; t < ksz; ++t) {
        auto kc = coords(t, cs.kernel);
        bool inside = true, inside_padded = true;
        size_t flat = 0;
        for (size_t d = 0; d < r; ++d) {
          int64_t i = oc[d] * cs.strides[d] + kc[d] * cs.dilations[d] - cs.pads[d];
          inside = inside && i >= 0 && i < in[d];
          inside_padded = inside_padded && i >= -cs.pads[d] && i < in[d] + cs.pads[d + r];
          flat = flat * in[d] + size_t(i);
        }
        n_padded += inside_padded;
        if (!inside) continue;
        ++n_in;
        const double v = x[p * isz + flat];
        if (v > best) {
          best = v;
          arg = int64_t(p * isz + flat);
        }
        sum += kind == Kind::kLp2 ? v * v : v;
      }
      double y = best;
      if (kind == Kind::kAvg) y = sum / double(n_in);
      if (kind == Kind::kAvgIncludePad) y = sum / double(n_padded);
      if (kind == Kind::kLp2) y = std::sqrt(sum);
      res.values.push_back(float(y));
      res.argmax.push_back(arg);
    }
  return res;
}

std::vector<float> wave(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * 0.73f) * 10.0f;
  return v;
}

const PoolCase kPoolCases[] = {
    {{1, 2, 9}, {3}, {2}, {1}, {1, 1}},
    {{2, 3, 7, 8}, {3, 2}, {2, 2}, {1, 1}, {1, 0, 1, 1}},
    {{1, 2, 8, 9}, {2, 3}, {3, 2}, {2, 1}, {0, 1, 0, 2}, true},
    {{1, 1, 5, 5}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},
    {{1, 2, 4, 5, 6}, {2, 2, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 1, 0, 1}},
};

void add_attrs(KernelHarness& h, const PoolCase& cs, bool dilations) {
  h.attr_ints("kernel_shape", cs.kernel);
  h.attr_ints("strides", cs.strides);
  h.attr_ints("pads", cs.pads);
  if (dilations) h.attr_ints("dilations", cs.dilations);
  h.attr_int("ceil_mode", cs.ceil_mode);
}

void expect_matches(const Tensor& got, const NaivePool& want) {
  ASSERT_EQ(std::vector<int64_t>(got.view.dims, got.view.dims + got.view.rank), want.dims);
  auto v = values_of<float>(got);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], want.values[i], 1e-4f) << i;
}

TEST(MaxPoolOp, MatchesNaiveWithIndices) {
  for (const PoolCase& cs : kPoolCases) {
    SCOPED_TRACE(::testing::PrintToString(cs.x_dims));
    auto x = wave(count(cs.x_dims));
    KernelHarness h("MaxPool", 12);
    h.input(make_filled<float>(cs.x_dims, x));
    add_attrs(h, cs, true);
    auto out = h.run(2);
    auto want = naive_pool(cs, x, Kind::kMax);
    expect_matches(out[0], want);
    EXPECT_EQ(values_of<int64_t>(out[1]), want.argmax);
  }
}

TEST(AveragePoolOp, MatchesNaiveExcludingAndIncludingPad) {
  for (const PoolCase& base : kPoolCases) {
    PoolCase cs = base;
    cs.dilations.assign(cs.kernel.size(), 1);
    SCOPED_TRACE(::testing::PrintToString(cs.x_dims));
    auto x = wave(count(cs.x_dims));
    for (int include = 0; include < 2; ++include) {
      KernelHarness h("AveragePool", 11);
      h.input(make_filled<float>(cs.x_dims, x));
      add_attrs(h, cs, false);
      h.attr_int("count_include_pad", include);
      expect_matches(h.run(1)[0], naive_pool(cs, x, include ? Kind::kAvgIncludePad : Kind::kAvg));
    }
  }
}

TEST(LpPoolOp, MatchesNaiveL2) {
  PoolCase cs = kPoolCases[1];
  auto x = wave(count(cs.x_dims));
  KernelHarness h("LpPool", 11);
  h.input(make_filled<float>(cs.x_dims, x));
  add_attrs(h, cs, false);
  h.attr_int("p", 2);
  expect_matches(h.run(1)[0], naive_pool(cs, x, Kind::kLp2));
}

TEST(PoolSpecExamples, CeilModeAndSameUpperAndStorageOrder) {
  std::vector<float> x16(16);
  for (size_t i = 0; i < 16; ++i) x16[i] = float(i + 1);
  KernelHarness mp("MaxPool", 12);  // ONNX maxpool_2d_ceil
  mp.input(make_filled<float>({1, 1, 4, 4}, x16));
  mp.attr_ints("kernel_shape", {3, 3});
  mp.attr_ints("strides", {2, 2});
  mp.attr_int("ceil_mode", 1);
  EXPECT_EQ(values_of<float>(mp.run(1)[0]), (std::vector<float>{11, 12, 15, 16}));

  KernelHarness ap("AveragePool", 11);  // ONNX averagepool_2d_ceil
  ap.input(make_filled<float>({1, 1, 4, 4}, x16));
  ap.attr_ints("kernel_shape", {3, 3});
  ap.attr_ints("strides", {2, 2});
  ap.attr_int("ceil_mode", 1);
  EXPECT_EQ(values_of<float>(ap.run(1)[0]), (std::vector<float>{6, 7.5f, 12, 13.5f}));

  std::vector<float> x25(25);
  for (size_t i = 0; i < 25; ++i) x25[i] = float(i + 1);
  KernelHarness su("MaxPool", 12);  // ONNX maxpool_2d_precomputed_same_upper
  su.input(make_filled<float>({1, 1, 5, 5}, x25));
  su.attr_ints("kernel_shape", {3, 3});
  su.attr_ints("strides", {2, 2});
  su.attr_string("auto_pad", "SAME_UPPER");
  EXPECT_EQ(values_of<float>(su.run(1)[0]), (std::vector<float>{7, 9, 10, 17, 19, 20, 22, 24, 25}));

  // storage_order 1 numbers spatial positions column-major: (h, w) -> h + w * H.
  KernelHarness so("MaxPool", 12);
  so.input(make_filled<float>({1, 1, 2, 3}, {1, 9, 2, 3, 4, 8}));
  so.attr_ints("kernel_shape", {2, 2});
  so.attr_int("storage_order", 1);
  auto out = so.run(2);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{9, 9}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{2, 2}));
}

TEST(MaxPoolOp, Uint8AndInt8) {
  KernelHarness h("MaxPool", 12);
  h.input(make_filled<uint8_t>({1, 1, 1, 4}, {3, 250, 7, 1}));
  h.attr_ints("kernel_shape", {1, 2});
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{250, 250, 7}));
  KernelHarness s("MaxPool", 12);
  s.input(make_filled<int8_t>({1, 1, 3}, {-5, -7, -128}));
  s.attr_ints("kernel_shape", {2});
  EXPECT_EQ(values_of<int8_t>(s.run(1)[0]), (std::vector<int8_t>{-5, -7}));
}

TEST(PoolOps, RejectMissingKernelAndBadAutoPad) {
  KernelHarness missing("MaxPool", 12);
  missing.input(make_filled<float>({1, 1, 4, 4}, std::vector<float>(16)));
  EXPECT_THROW(missing.run(1), sdk::Error);
  KernelHarness rank("AveragePool", 11);
  rank.input(make_filled<float>({1, 1, 4, 4}, std::vector<float>(16)));
  rank.attr_ints("kernel_shape", {2});
  EXPECT_THROW(rank.run(1), sdk::Error);
  KernelHarness mode("MaxPool", 12);
  mode.input(make_filled<float>({1, 1, 4, 4}, std::vector<float>(16)));
  mode.attr_ints("kernel_shape", {2, 2});
  mode.attr_string("auto_pad", "FULL");
  EXPECT_THROW(mode.run(1), sdk::Error);
}

TEST(GlobalPoolOps, AverageMaxLp) {
  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, 6};  // [1, 2, 2, 2]
  KernelHarness avg("GlobalAveragePool", 1);
  avg.input(make_filled<float>({1, 2, 2, 2}, x));
  auto a = avg.run(1);
  EXPECT_EQ(a[0].view.rank, 4);
  EXPECT_EQ(a[0].view.dims[2], 1);
  EXPECT_EQ(values_of<float>(a[0]), (std::vector<float>{2.5f, 0}));
  KernelHarness mx("GlobalMaxPool", 1);
  mx.input(make_filled<float>({1, 2, 2, 2}, x));
  EXPECT_EQ(values_of<float>(mx.run(1)[0]), (std::vector<float>{4, 6}));
  KernelHarness lp("GlobalLpPool", 2);
  lp.input(make_filled<float>({1, 2, 2, 2}, x));
  lp.attr_int("p", 1);
  EXPECT_EQ(values_of<float>(lp.run(1)[0]), (std::vector<float>{10, 12}));
}

TEST(MaxUnpoolOp, SpecExampleAndOutputShape) {
  KernelHarness h("MaxUnpool", 11);
  h.input(make_filled<float>({1, 1, 2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15}));
  h.attr_ints("kernel_shape", {2, 2});
  h.attr_ints("strides", {2, 2});
  auto y = h.run(1);
  EXPECT_EQ(values_of<float>(y[0]),
            (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}));
  KernelHarness s("MaxUnpool", 11);
  s.input(make_filled<float>({1, 1, 2, 2}, {1, 2, 3, 4}));
  s.input(make_filled<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15}));
  s.input(make_filled<int64_t>({4}, {1, 1, 5, 5}));
  s.attr_ints("kernel_shape", {2, 2});
  s.attr_ints("strides", {2, 2});
  auto ys = s.run(1);
  EXPECT_EQ(ys[0].view.dims[2], 5);
  // Values keep their (h, w) from the inferred 4x4 shape; the extra row and column are zero.
  EXPECT_EQ(values_of<float>(ys[0]), (std::vector<float>{0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0,
                                                         0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0}));
  KernelHarness bad("MaxUnpool", 11);
  bad.input(make_filled<float>({1, 1, 1, 1}, {1}));
  bad.input(make_filled<int64_t>({1, 1, 1, 1}, {99}));
  bad.attr_ints("kernel_shape", {2, 2});
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(MaxRoiPoolOp, PoolsRoundedBoxes) {
  std::vector<float> x(16);
  for (size_t i = 0; i < 16; ++i) x[i] = float(i);
  KernelHarness h("MaxRoiPool", 1);
  h.input(make_filled<float>({1, 1, 4, 4}, x));
  h.input(make_filled<float>({2, 5}, {0, 0, 0, 3, 3, 0, 1, 1, 2, 2}));
  h.attr_ints("pooled_shape", {2, 2});
  // Box 1 covers the map: bins of 2x2 -> maxima 5, 7, 13, 15. Box 2 (1..2 x 1..2): 5, 6, 9, 10.
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{5, 7, 13, 15, 5, 6, 9, 10}));
}

TEST(RoiAlignOp, BilinearAverageOfAConstantGradient) {
  // x[h][w] = w: any bilinear sample returns its x coordinate, so each bin's average is the
  // bin centre's x (for boxes inside the map).
  std::vector<float> x(36);
  for (size_t i = 0; i < 36; ++i) x[i] = float(i % 6);
  for (int mode16 = 0; mode16 < 2; ++mode16) {
    KernelHarness h("RoiAlign", mode16 ? 16 : 10);
    h.input(make_filled<float>({1, 1, 6, 6}, x));
    h.input(make_filled<float>({1, 4}, {1, 1, 5, 3}));
    h.input(make_filled<int64_t>({1}, {0}));
    h.attr_int("output_height", 1);
    h.attr_int("output_width", 2);
    h.attr_int("sampling_ratio", 2);
    auto y = values_of<float>(h.run(1)[0]);
    // half_pixel (16) shifts the box by -0.5: x in [0.5, 4.5] -> bin centres 1.5, 3.5.
    // output_half_pixel (10): x in [1, 5] -> bin centres 2, 4.
    const float shift = mode16 ? -0.5f : 0.0f;
    ASSERT_EQ(y.size(), 2u);
    EXPECT_NEAR(y[0], 2.0f + shift, 1e-5f);
    EXPECT_NEAR(y[1], 4.0f + shift, 1e-5f);
  }
}

}  // namespace
}  // namespace loom::cpu
