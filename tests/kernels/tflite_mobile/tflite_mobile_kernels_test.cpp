// The MediaPipe custom-operator kernels of plugins/kernels/tflite-mobile against plain references
// written here (scatter-form transposed convolution, window-by-window pooling), over several
// shapes, strides and paddings; malformed options and indices must fail with a clear message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "tflite_mobile.hpp"

namespace tmk = loom::tflite_mobile;

namespace {

std::vector<uint8_t> struct_bytes(std::initializer_list<int32_t> fields) {
  std::vector<uint8_t> out;
  for (int32_t f : fields)
    for (int b = 0; b < 4; ++b)
      out.push_back(static_cast<uint8_t>(static_cast<uint32_t>(f) >> (8 * b)));
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& f : v) f = d(gen);
  return v;
}

// Runs chunks on two threads, to exercise the kernels' split of work.
void two_threads(size_t n, const std::function<void(size_t, size_t)>& body) {
  std::thread t([&] { body(0, n / 2); });
  body(n / 2, n);
  t.join();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const loom::sdk::Error& e) {
    return e.what();
  }
  return "";
}

size_t at(const tmk::Shape4& s, int64_t b, int64_t y, int64_t x, int64_t c) {
  return static_cast<size_t>(((b * s.h + y) * s.w + x) * s.c + c);
}

// ---- Convolution2DTransposeBias --------------------------------------------------------------

// The textbook scatter: every input pixel adds its kernel-weighted value to the output pixels it
// reaches; output size and SAME padding as documented by MediaPipe's operator.
std::vector<float> reference_transpose_conv(int padding, int sw, int sh, const tmk::Shape4& in,
                                            const std::vector<float>& x, const tmk::Shape4& ws,
                                            const std::vector<float>& w,
                                            const std::vector<float>& bias,
                                            tmk::Shape4* out_shape) {
  int64_t ph = 0, pw = 0;
  if (padding == 1) {
    ph = std::max<int64_t>(0, ws.h - (in.h - 1) % sh - 1);
    pw = std::max<int64_t>(0, ws.w - (in.w - 1) % sw - 1);
  }
  tmk::Shape4 out{in.n, sh * (in.h - 1) + ws.h - ph, sw * (in.w - 1) + ws.w - pw, ws.n};
  std::vector<float> y(static_cast<size_t>(out.count()));
  for (int64_t b = 0; b < out.n; ++b)
    for (int64_t oy = 0; oy < out.h; ++oy)
      for (int64_t ox = 0; ox < out.w; ++ox)
        for (int64_t oc = 0; oc < out.c; ++oc) y[at(out, b, oy, ox, oc)] = bias[oc];
  for (int64_t b = 0; b < in.n; ++b)
    for (int64_t iy = 0; iy < in.h; ++iy)
      for (int64_t ix = 0; ix < in.w; ++ix)
        for (int64_t ic = 0; ic < in.c; ++ic)
          for (int64_t ky = 0; ky < ws.h; ++ky)
            for (int64_t kx = 0; kx < ws.w; ++kx)
              for (int64_t oc = 0; oc < ws.n; ++oc) {
                const int64_t oy = iy * sh - ph / 2 + ky, ox = ix * sw - pw / 2 + kx;
                if (oy < 0 || oy >= out.h || ox < 0 || ox >= out.w) continue;
                y[at(out, b, oy, ox, oc)] += x[at(in, b, iy, ix, ic)] * w[at(ws, oc, ky, kx, ic)];
              }
  *out_shape = out;
  return y;
}

struct ConvCase {
  int padding, sw, sh;
  tmk::Shape4 in, ws;
};

TEST(TransposeConvBias, MatchesScatterReference) {
  const ConvCase cases[] = {
      {1, 2, 2, {1, 3, 4, 2}, {3, 3, 3, 2}}, {2, 2, 2, {1, 3, 4, 2}, {3, 3, 3, 2}},
      {1, 1, 1, {2, 5, 3, 3}, {2, 3, 3, 3}}, {2, 3, 2, {1, 4, 4, 1}, {4, 2, 5, 1}},
      {1, 3, 1, {1, 2, 5, 4}, {1, 4, 2, 4}}, {1, 2, 3, {2, 1, 1, 3}, {2, 4, 4, 3}},
      {2, 1, 2, {1, 6, 2, 2}, {5, 1, 1, 2}},
  };
  uint32_t seed = 1;
  for (const ConvCase& k : cases) {
    SCOPED_TRACE("padding " + std::to_string(k.padding) + " strides " + std::to_string(k.sw) + "x" +
                 std::to_string(k.sh) + " input " + k.in.text() + " weights " + k.ws.text());
    const auto x = random_floats(static_cast<size_t>(k.in.count()), seed++);
    const auto w = random_floats(static_cast<size_t>(k.ws.count()), seed++);
    const auto bias = random_floats(static_cast<size_t>(k.ws.n), seed++);
    tmk::Shape4 ref_shape;
    const auto ref =
        reference_transpose_conv(k.padding, k.sw, k.sh, k.in, x, k.ws, w, bias, &ref_shape);
    const tmk::ConvOptions o = tmk::parse_conv_options(struct_bytes({k.padding, k.sw, k.sh}));
    const tmk::ConvGeometry g = tmk::transpose_conv_geometry(o, k.in, k.ws);
    ASSERT_EQ(g.output, ref_shape) << g.output.text() << " vs " << ref_shape.text();
    std::vector<float> y(static_cast<size_t>(g.output.count()), std::nanf(""));
    tmk::transpose_conv_bias(o, k.in, x.data(), k.ws, w.data(), bias.data(), y.data(), two_threads);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-5f) << "element " << i;
  }
}

TEST(TransposeConvBias, RefusesMalformedOptionsAndShapes) {
  EXPECT_NE(error_of([] {
              tmk::parse_conv_options(struct_bytes({1, 2}));
            }).find("8 bytes, too few for TfLiteTransposeConvParams (12 bytes needed)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tmk::parse_conv_options(struct_bytes({0, 2, 2}));
            }).find("padding 0 is not SAME (1) or VALID (2)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tmk::parse_conv_options(struct_bytes({1, 0, 2}));
            }).find("stride_width 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tmk::parse_conv_options(struct_bytes({2, 1, -3}));
            }).find("stride_height -3 must be >= 1"),
            std::string::npos);
  const tmk::ConvOptions o = tmk::parse_conv_options(struct_bytes({1, 2, 2}));
  EXPECT_NE(error_of([&] {
              tmk::transpose_conv_geometry(o, {1, 3, 3, 2}, {4, 3, 3, 5});
            }).find("input has 2 channels but the weights [4, 3, 3, 5] expect 5"),
            std::string::npos);
  // Later TFLite versions append fields to the struct: accepted, ignored.
  EXPECT_EQ(tmk::parse_conv_options(struct_bytes({2, 3, 4, 0, 0})).stride_h, 4);
}

// ---- MaxPoolingWithArgmax2D ------------------------------------------------------------------

struct PoolCase {
  int padding, sw, sh, fw, fh, activation;
  tmk::Shape4 in;
};

// Straightforward window maxima; the position encoding is y * filter_w + x + 0.1.
void reference_pool(const PoolCase& k, const std::vector<float>& x, tmk::Shape4* out,
                    std::vector<float>* values, std::vector<float>* indices) {
  auto size = [&](int64_t in, int64_t f, int64_t s) {
    return k.padding == 1 ? (in + s - 1) / s : (in - f + s) / s;
  };
  *out = {k.in.n, size(k.in.h, k.fh, k.sh), size(k.in.w, k.fw, k.sw), k.in.c};
  const int64_t pt = std::max<int64_t>(0, ((out->h - 1) * k.sh + k.fh - k.in.h) / 2);
  const int64_t pl = std::max<int64_t>(0, ((out->w - 1) * k.sw + k.fw - k.in.w) / 2);
  values->assign(static_cast<size_t>(out->count()), 0.f);
  indices->assign(values->size(), 0.f);
  for (int64_t b = 0; b < out->n; ++b)
    for (int64_t oy = 0; oy < out->h; ++oy)
      for (int64_t ox = 0; ox < out->w; ++ox)
        for (int64_t c = 0; c < out->c; ++c) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t pos = 0;
          for (int64_t fy = 0; fy < k.fh; ++fy)
            for (int64_t fx = 0; fx < k.fw; ++fx) {
              const int64_t y = oy * k.sh - pt + fy, xx = ox * k.sw - pl + fx;
              if (y < 0 || y >= k.in.h || xx < 0 || xx >= k.in.w) continue;
              const float v = x[at(k.in, b, y, xx, c)];
              if (v > best) best = v, pos = fy * k.fw + fx;
            }
          if (k.activation == 1) best = std::max(best, 0.f);
          if (k.activation == 3) best = std::min(std::max(best, 0.f), 6.f);
          (*values)[at(*out, b, oy, ox, c)] = best;
          (*indices)[at(*out, b, oy, ox, c)] = static_cast<float>(pos) + 0.1f;
        }
}

const PoolCase kPoolCases[] = {
    {1, 2, 2, 2, 2, 0, {1, 4, 4, 3}}, {2, 2, 2, 2, 2, 0, {2, 5, 7, 2}},
    {1, 2, 2, 3, 3, 1, {1, 5, 5, 2}}, {2, 1, 1, 3, 2, 3, {1, 4, 6, 1}},
    {1, 3, 2, 2, 3, 0, {1, 7, 8, 2}}, {2, 3, 3, 3, 3, 0, {1, 9, 9, 4}},
};

TEST(MaxPoolingWithArgmax2D, MatchesWindowReference) {
  uint32_t seed = 100;
  for (const PoolCase& k : kPoolCases) {
    SCOPED_TRACE("case input " + k.in.text() + " filter " + std::to_string(k.fh) + "x" +
                 std::to_string(k.fw) + " padding " + std::to_string(k.padding));
    const auto x = random_floats(static_cast<size_t>(k.in.count()), seed++);
    tmk::Shape4 shape;
    std::vector<float> ref_v, ref_i;
    reference_pool(k, x, &shape, &ref_v, &ref_i);
    const tmk::PoolOptions o =
        tmk::parse_pool_options(struct_bytes({k.padding, k.sw, k.sh, k.fw, k.fh, k.activation}));
    const tmk::PoolGeometry g = tmk::max_pool_geometry(o, k.in);
    ASSERT_EQ(g.output, shape);
    std::vector<float> v(ref_v.size()), idx(ref_v.size());
    tmk::max_pool_argmax(o, k.in, x.data(), v.data(), idx.data(), two_threads);
    EXPECT_EQ(v, ref_v);
    EXPECT_EQ(idx, ref_i);
  }
}

TEST(MaxPoolingWithArgmax2D, FirstMaximumWinsAndRelu6Clamps) {
  // A 2x2 window of equal values: position 0; values above 6 clamp under RELU6.
  const std::vector<float> x = {7.f, 7.f, 7.f, 7.f};
  const tmk::PoolOptions o = tmk::parse_pool_options(struct_bytes({2, 2, 2, 2, 2, 3}));
  std::vector<float> v(1), idx(1);
  tmk::max_pool_argmax(o, {1, 2, 2, 1}, x.data(), v.data(), idx.data(), tmk::serial_for);
  EXPECT_EQ(v[0], 6.f);
  EXPECT_EQ(idx[0], 0.1f);
}

TEST(MaxPoolingWithArgmax2D, RefusesMalformedOptions) {
  EXPECT_NE(error_of([] {
              tmk::parse_pool_options(struct_bytes({1, 2, 2, 2, 2}));
            }).find("20 bytes, too few for TfLitePoolParams (24 bytes needed)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tmk::parse_pool_options(struct_bytes({3, 2, 2, 2, 2, 0}));
            }).find("padding 3 is not SAME (1) or VALID (2)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tmk::parse_pool_options(struct_bytes({1, 2, 2, 0, 2, 0}));
            }).find("filter_width 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tmk::parse_pool_options(struct_bytes({1, 2, 2, 2, 2, 6}));
            }).find("fused activation 6 is not NONE, RELU, RELU_N1_TO_1 or RELU6"),
            std::string::npos);
  const tmk::PoolOptions valid = tmk::parse_pool_options(struct_bytes({2, 1, 1, 5, 5, 0}));
  EXPECT_NE(error_of([&] {
              tmk::max_pool_geometry(valid, {1, 3, 8, 1});
            }).find("VALID pooling window of 5 is larger than the height extent 3"),
            std::string::npos);
}

// ---- MaxUnpooling2D --------------------------------------------------------------------------

TEST(MaxUnpooling2D, InvertsMaxPoolingWithArgmax) {
  uint32_t seed = 200;
  for (const PoolCase& k : kPoolCases) {
    SCOPED_TRACE("case input " + k.in.text());
    const auto x = random_floats(static_cast<size_t>(k.in.count()), seed++);
    const tmk::PoolOptions o =
        tmk::parse_pool_options(struct_bytes({k.padding, k.sw, k.sh, k.fw, k.fh, 0}));
    const tmk::PoolGeometry pg = tmk::max_pool_geometry(o, k.in);
    std::vector<float> v(static_cast<size_t>(pg.output.count())), idx(v.size());
    tmk::max_pool_argmax(o, k.in, x.data(), v.data(), idx.data(), tmk::serial_for);
    // Reference: MediaPipe's placement, written directly; skipped cases put values outside.
    const tmk::Shape4 out{pg.output.n, pg.output.h * k.fh, pg.output.w * k.fw, pg.output.c};
    const int64_t pt = std::max<int64_t>(0, ((pg.output.h - 1) * k.sh + k.fh - out.h) / 2);
    const int64_t pl = std::max<int64_t>(0, ((pg.output.w - 1) * k.sw + k.fw - out.w) / 2);
    std::vector<float> ref(static_cast<size_t>(out.count()), 0.f);
    bool inside = true;
    for (int64_t b = 0; b < pg.output.n; ++b)
      for (int64_t y = 0; y < pg.output.h; ++y)
        for (int64_t xx = 0; xx < pg.output.w; ++xx)
          for (int64_t c = 0; c < pg.output.c; ++c) {
            const auto i = static_cast<int64_t>(idx[at(pg.output, b, y, xx, c)]);
            const int64_t oy = y * k.sh - pt + i / k.fw, ox = xx * k.sw - pl + i % k.fw;
            if (oy < 0 || oy >= out.h || ox < 0 || ox >= out.w) {
              inside = false;
              continue;
            }
            ref[at(out, b, oy, ox, c)] = v[at(pg.output, b, y, xx, c)];
          }
    const tmk::PoolGeometry ug = tmk::max_unpool_geometry(o, pg.output);
    ASSERT_EQ(ug.output, out);
    std::vector<float> y(ref.size(), std::nanf(""));
    const std::string error = error_of(
        [&] { tmk::max_unpooling(o, pg.output, v.data(), idx.data(), y.data(), two_threads); });
    if (!inside) {
      EXPECT_NE(error.find("outside"), std::string::npos);
      continue;
    }
    ASSERT_EQ(error, "");
    EXPECT_EQ(y, ref);
  }
}

TEST(MaxUnpooling2D, RefusesIndicesOutsideTheWindowOrOutput) {
  const tmk::PoolOptions o = tmk::parse_pool_options(struct_bytes({1, 2, 2, 2, 2, 0}));
  const tmk::Shape4 in{1, 2, 2, 1};
  const std::vector<float> x = {1.f, 2.f, 3.f, 4.f};
  std::vector<float> y(16);
  for (float bad : {4.f, -1.f, std::nanf(""), 1e30f}) {
    std::vector<float> idx = {0.1f, 1.1f, bad, 3.1f};
    const std::string e =
        error_of([&] { tmk::max_unpooling(o, in, x.data(), idx.data(), y.data(), two_threads); });
    EXPECT_NE(e.find("at [0, 1, 0, 0] is outside its 2x2 window"), std::string::npos) << e;
  }
  // Stride 3 over a 2x2 filter: the second row's window starts at output row 3, the output has
  // 4 rows, so its index 2 (window row 1) lands on row 4.
  const tmk::PoolOptions wide = tmk::parse_pool_options(struct_bytes({1, 3, 3, 2, 2, 0}));
  std::vector<float> idx = {0.1f, 0.1f, 2.1f, 0.1f};
  const std::string e = error_of(
      [&] { tmk::max_unpooling(wide, in, x.data(), idx.data(), y.data(), tmk::serial_for); });
  EXPECT_NE(e.find("puts the value outside the output [1, 4, 4, 1]"), std::string::npos) << e;
}

}  // namespace
