// Conv and ConvTranspose kernels against naive N-D loops written here: 1-D/2-D/3-D, groups
// (incl. depthwise), strides, dilations, asymmetric pads, auto_pad, output_padding and
// output_shape, plus exact small cases from the ONNX spec.
#include <gtest/gtest.h>

#include <cmath>

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

std::vector<float> wave(size_t n, float f, float phase = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * f + phase);
  return v;
}

// Splits a flat index into coordinates of `dims` (row-major).
std::vector<int64_t> coords(size_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = int64_t(flat % size_t(dims[d]));
    flat /= size_t(dims[d]);
  }
  return c;
}

struct ConvCase {
  std::vector<int64_t> x_dims, w_dims;  // X [N, C, s...], W [M, C/g, k...]
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // pads: begins then ends (explicit)
  bool bias = true;
};

// Direct definition: y[n,m,o] = b[m] + sum_{c,k} x[n, g*C/g + c, o*s + k*d - pb] * w[m,c,k].
std::vector<float> naive_conv(const ConvCase& cs, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& b,
                              std::vector<int64_t>& y_dims) {
  const size_t r = cs.x_dims.size() - 2;
  std::vector<int64_t> in(cs.x_dims.begin() + 2, cs.x_dims.end());
  std::vector<int64_t> k(cs.w_dims.begin() + 2, cs.w_dims.end()), out(r);
  for (size_t d = 0; d < r; ++d)
    out[d] =
        (in[d] + cs.pads[d] + cs.pads[d + r] - ((k[d] - 1) * cs.dilations[d] + 1)) / cs.strides[d] +
        1;
  const int64_t n_ = cs.x_dims[0], c_ = cs.x_dims[1], m_ = cs.w_dims[0], cg = cs.w_dims[1];
  const int64_t mg = m_ / cs.group;
  y_dims = {n_, m_};
  y_dims.insert(y_dims.end(), out.begin(), out.end());
  std::vector<float> y(count(y_dims));
  const size_t osz = count(out), ksz = count(k), isz = count(in);
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t m = 0; m < m_; ++m)
      for (size_t o = 0; o < osz; ++o) {
        auto oc = coords(o, out);
        double s = cs.bias ? b[m] : 0.0;
        for (int64_t c = 0; c < cg; ++c)
          for (size_t t = 0; t < ksz; ++t) {
            auto kc = coords(t, k);
            size_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              int64_t i = oc[d] * cs.strides[d] + kc[d] * cs.dilations[d] - cs.pads[d];
              inside = inside && i >= 0 && i < in[d];
              flat = flat * in[d] + size_t(i);
            }
            if (!inside) continue;
            const int64_t ic = (m / mg) * cg + c;
            s += double(x[size_t(n * c_ + ic) * isz + flat]) * w[size_t(m * cg + c) * ksz + t];
          }
        y[size_t(n * m_ + m) * osz + o] = float(s);
      }
  return y;
}

void run_conv_case(const ConvCase& cs) {
  auto x = wave(count(cs.x_dims), 0.37f), w = wave(count(cs.w_dims), 0.91f, 0.3f);
  auto b = wave(size_t(cs.w_dims[0]), 1.3f);
  KernelHarness h("Conv", 11);
  h.input(make_filled<float>(cs.x_dims, x));
  h.input(make_filled<float>(cs.w_dims, w));
  if (cs.bias) h.input(make_filled<float>({cs.w_dims[0]}, b));
  h.attr_int("group", cs.group);
  h.attr_ints("strides", cs.strides);
  h.attr_ints("dilations", cs.dilations);
  h.attr_ints("pads", cs.pads);
  auto out = h.run(1);
  std::vector<int64_t> want_dims;
  auto want = naive_conv(cs, x, w, b, want_dims);
  ASSERT_EQ(std::vector<int64_t>(out[0].view.dims, out[0].view.dims + out[0].view.rank), want_dims);
  auto got = values_of<float>(out[0]);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f) << "index " << i;
}

TEST(ConvOp, MatchesNaiveAcrossRanksGroupsStridesDilationsPads) {
  const ConvCase cases[] = {
      {{1, 3, 7}, {4, 3, 3}, 1, {1}, {1}, {0, 0}},                     // 1-D
      {{2, 4, 9}, {6, 2, 2}, 2, {2}, {3}, {1, 2}, false},              // 1-D grouped
      {{1, 3, 8, 7}, {5, 3, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},   // 2-D same-ish
      {{2, 6, 11, 9}, {4, 3, 3, 2}, 2, {2, 3}, {2, 1}, {0, 1, 2, 0}},  // strides+dil
      {{1, 5, 6, 6}, {7, 5, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},   // pointwise
      {{1, 5, 6, 6}, {7, 5, 1, 1}, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},   // strided 1x1
      {{2, 4, 10, 9}, {4, 1, 3, 3}, 4, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // depthwise
      {{1, 3, 10, 9}, {6, 1, 3, 3}, 3, {2, 2}, {2, 1}, {2, 1, 0, 2}},  // depthwise x2
      {{1, 2, 5, 6, 4}, {3, 2, 3, 2, 2}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 0}},  // 3-D
      {{1, 40, 17, 15}, {70, 40, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // gemm tiles
      // Few output positions take the patches path: 2-D with padding (2x2 outputs), a strided
      // 1-D frame filter (4 outputs), one batch of two with groups, and 1-D windows that hang
      // over the padding at both ends.
      {{1, 4, 3, 3}, {5, 4, 3, 3}, 1, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {{1, 1, 40}, {9, 1, 16}, 1, {8}, {1}, {0, 0}},
      {{2, 6, 4}, {4, 3, 3}, 2, {1}, {1}, {1, 0}},
      {{1, 2, 5}, {3, 2, 4}, 1, {3}, {1}, {2, 3}},  // 1-D patches over both pads
  };
  for (const ConvCase& cs : cases) {
    SCOPED_TRACE(::testing::PrintToString(cs.x_dims) + " " + ::testing::PrintToString(cs.w_dims));
    run_conv_case(cs);
  }
}

TEST(ConvOp, SpecExampleWithAndWithoutPadding) {
  std::vector<float> x(25);
  for (size_t i = 0; i < 25; ++i) x[i] = float(i);
  for (int padded = 0; padded < 2; ++padded) {
    KernelHarness h("Conv", 11);
    h.input(make_filled<float>({1, 1, 5, 5}, x));
    h.input(make_filled<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f)));
    h.attr_ints("kernel_shape", {3, 3});
    h.attr_ints("pads",
                padded ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{0, 0, 0, 0});
    auto y = values_of<float>(h.run(1)[0]);
    if (padded) {
      EXPECT_EQ(y, (std::vector<float>{12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                                       117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84}));
    } else {
      EXPECT_EQ(y, (std::vector<float>{54, 63, 72, 99, 108, 117, 144, 153, 162}));
    }
  }
}

TEST(ConvOp, AutoPadSameUpperAndLowerAndValid) {
  std::vector<float> x(25);
  for (size_t i = 0; i < 25; ++i) x[i] = float(i);
  auto run = [&](const char* mode) {
    KernelHarness h("Conv", 11);
    h.input(make_filled<float>({1, 1, 5, 5}, x));
    h.input(make_filled<float>({1, 1, 2, 2}, {1, 1, 1, 1}));
    h.attr_string("auto_pad", mode);
    h.attr_ints("strides", {2, 2});
    return h.run(1);
  };
  // SAME: out = ceil(5/2) = 3, total pad = (3-1)*2 + 2 - 5 = 1.
  auto upper = run("SAME_UPPER");  // pad at the end: windows start at 0, 2, 4
  EXPECT_EQ(upper[0].view.dims[2], 3);
  EXPECT_EQ(values_of<float>(upper[0]), (std::vector<float>{12, 20, 13, 52, 60, 33, 41, 45, 24}));
  auto lower = run("SAME_LOWER");  // pad at the start: windows start at -1, 1, 3
  EXPECT_EQ(values_of<float>(lower[0]), (std::vector<float>{0, 3, 7, 15, 36, 44, 35, 76, 84}));
  auto valid = run("VALID");
  EXPECT_EQ(valid[0].view.dims[2], 2);
  EXPECT_EQ(values_of<float>(valid[0]), (std::vector<float>{12, 20, 52, 60}));
}

TEST(ConvOp, DoubleAndHalfTypes) {
  KernelHarness d("Conv", 11);
  d.input(make_filled<double>({1, 1, 3}, {1, 2, 3}));
  d.input(make_filled<double>({1, 1, 2}, {1, -1}));
  EXPECT_EQ(values_of<double>(d.run(1)[0]), (std::vector<double>{-1, -1}));

  Tensor xh = make_tensor(LOOM_DTYPE_FLOAT16, std::vector<int64_t>{1, 1, 3});
  Tensor wh = make_tensor(LOOM_DTYPE_FLOAT16, std::vector<int64_t>{1, 1, 2});
  for (int i = 0; i < 3; ++i) static_cast<Half*>(xh.view.data)[i] = Half(float(i + 1));
  static_cast<Half*>(wh.view.data)[0] = Half(0.5f);
  static_cast<Half*>(wh.view.data)[1] = Half(2.0f);
  KernelHarness h("Conv", 11);
  h.input(xh);
  h.input(wh);
  auto y = h.run(1);
  ASSERT_EQ(y[0].view.dtype, LOOM_DTYPE_FLOAT16);
  EXPECT_EQ(float(static_cast<Half*>(y[0].view.data)[0]), 4.5f);
  EXPECT_EQ(float(static_cast<Half*>(y[0].view.data)[1]), 7.0f);
}

TEST(ConvOp, RejectsBadShapesAndAttributes) {
  auto make = [](std::vector<int64_t> xd, std::vector<int64_t> wd) {
    auto h = std::make_unique<KernelHarness>("Conv", 11);
    h->input(make_filled<float>(xd, std::vector<float>(count(xd))));
    h->input(make_filled<float>(wd, std::vector<float>(count(wd))));
    return h;
  };
  EXPECT_THROW(make({1, 3, 5, 5}, {2, 2, 3, 3})->run(1), sdk::Error);  // channel mismatch
  EXPECT_THROW(make({1, 3, 5}, {2, 3, 3, 3})->run(1), sdk::Error);     // rank mismatch
  EXPECT_THROW(make({1, 1, 2, 2}, {1, 1, 3, 3})->run(1), sdk::Error);  // kernel larger than input
  auto bad_pads = make({1, 1, 5, 5}, {1, 1, 3, 3});
  bad_pads->attr_ints("pads", {1, 1});
  EXPECT_THROW(bad_pads->run(1), sdk::Error);
  auto bad_mode = make({1, 1, 5, 5}, {1, 1, 3, 3});
  bad_mode->attr_string("auto_pad", "SAME");
  EXPECT_THROW(bad_mode->run(1), sdk::Error);
}

// ---- ConvTranspose ------------------------------------------------------------------------

struct ConvTCase {
  std::vector<int64_t> x_dims, w_dims;  // X [N, C, s...], W [C, M/g, k...]
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, output_padding;
};

// Scatter definition: y[n, m, i*s + k*d - pb] += x[n, c, i] * w[c, m % (M/g), k].
std::vector<float> naive_conv_transpose(const ConvTCase& cs, const std::vector<float>& x,
                                        const std::vector<float>& w, std::vector<int64_t>& y_dims) {
  const size_t r = cs.x_dims.size() - 2;
  std::vector<int64_t> in(cs.x_dims.begin() + 2, cs.x_dims.end());
  std::vector<int64_t> k(cs.w_dims.begin() + 2, cs.w_dims.end()), out(r);
  for (size_t d = 0; d < r; ++d)
    out[d] = cs.strides[d] * (in[d] - 1) + cs.output_padding[d] + (k[d] - 1) * cs.dilations[d] + 1 -
             cs.pads[d] - cs.pads[d + r];
  const int64_t n_ = cs.x_dims[0], c_ = cs.x_dims[1], mg = cs.w_dims[1], m_ = mg * cs.group;
  const int64_t cg = c_ / cs.group;
  y_dims = {n_, m_};
  y_dims.insert(y_dims.end(), out.begin(), out.end());
  std::vector<double> y(count(y_dims));
  const size_t isz = count(in), ksz = count(k), osz = count(out);
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t c = 0; c < c_; ++c)
      for (size_t i = 0; i < isz; ++i)
        for (int64_t mm = 0; mm < mg; ++mm)
          for (size_t t = 0; t < ksz; ++t) {
            auto ic = coords(i, in), kc = coords(t, k);
            size_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              int64_t o = ic[d] * cs.strides[d] + kc[d] * cs.dilations[d] - cs.pads[d];
              inside = inside && o >= 0 && o < out[d];
              flat = flat * out[d] + size_t(o);
            }
            if (!inside) continue;
            const int64_t m = (c / cg) * mg + mm;
            y[size_t(n * m_ + m) * osz + flat] +=
                double(x[size_t(n * c_ + c) * isz + i]) * w[size_t(c * mg + mm) * ksz + t];
          }
  return std::vector<float>(y.begin(), y.end());
}

TEST(ConvTransposeOp, MatchesNaiveScatter) {
  const ConvTCase cases[] = {
      {{1, 2, 5}, {2, 3, 3}, 1, {2}, {1}, {0, 0}, {1}},
      {{2, 4, 4, 5}, {4, 2, 3, 3}, 2, {2, 1}, {1, 2}, {1, 0, 0, 1}, {1, 0}},
      {{1, 3, 3, 3}, {3, 2, 2, 2}, 1, {3, 3}, {1, 1}, {0, 0, 0, 0}, {2, 0}},
      {{1, 2, 3, 2, 3}, {2, 1, 2, 3, 2}, 1, {1, 2, 2}, {2, 1, 1}, {0, 1, 0, 1, 0, 0}, {0, 0, 1}},
  };
  for (const ConvTCase& cs : cases) {
    SCOPED_TRACE(::testing::PrintToString(cs.x_dims));
    auto x = wave(count(cs.x_dims), 0.41f), w = wave(count(cs.w_dims), 0.77f, 0.2f);
    KernelHarness h("ConvTranspose", 11);
    h.input(make_filled<float>(cs.x_dims, x));
    h.input(make_filled<float>(cs.w_dims, w));
    h.attr_int("group", cs.group);
    h.attr_ints("strides", cs.strides);
    h.attr_ints("dilations", cs.dilations);
    h.attr_ints("pads", cs.pads);
    h.attr_ints("output_padding", cs.output_padding);
    auto out = h.run(1);
    std::vector<int64_t> want_dims;
    auto want = naive_conv_transpose(cs, x, w, want_dims);
    ASSERT_EQ(std::vector<int64_t>(out[0].view.dims, out[0].view.dims + out[0].view.rank),
              want_dims);
    auto got = values_of<float>(out[0]);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f) << i;
  }
}

TEST(ConvTransposeOp, SpecExampleWithBiasAndOutputShape) {
  // ONNX ConvTranspose example: 3x3 input of 0..8, two 3x3 all-ones filters -> 5x5 outputs.
  std::vector<float> x(9);
  for (size_t i = 0; i < 9; ++i) x[i] = float(i);
  KernelHarness h("ConvTranspose", 11);
  h.input(make_filled<float>({1, 1, 3, 3}, x));
  h.input(make_filled<float>({1, 2, 3, 3}, std::vector<float>(18, 1.0f)));
  h.input(make_filled<float>({2}, {0, 100}));
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.dims[2], 5);
  const std::vector<float> plane = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                    27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  auto y = values_of<float>(out[0]);
  for (size_t i = 0; i < 25; ++i) {
    EXPECT_EQ(y[i], plane[i]);
    EXPECT_EQ(y[25 + i], plane[i] + 100);
  }
  // output_shape 10x8 with strides 3x2 (spec example): pads are derived, extra rows are zero.
  KernelHarness s("ConvTranspose", 11);
  s.input(make_filled<float>({1, 1, 3, 3}, x));
  s.input(make_filled<float>({1, 2, 3, 3}, std::vector<float>(18, 1.0f)));
  s.attr_ints("strides", {3, 2});
  s.attr_ints("output_shape", {10, 8});
  auto so = s.run(1);
  EXPECT_EQ(so[0].view.dims[2], 10);
  EXPECT_EQ(so[0].view.dims[3], 8);
  auto sy = values_of<float>(so[0]);
  EXPECT_EQ(std::vector<float>(sy.begin(), sy.begin() + 8),
            (std::vector<float>{0, 0, 1, 1, 3, 2, 2, 0}));
  EXPECT_EQ(std::vector<float>(sy.begin() + 72, sy.begin() + 80), std::vector<float>(8, 0.0f));
}

}  // namespace
}  // namespace loom::cpu
