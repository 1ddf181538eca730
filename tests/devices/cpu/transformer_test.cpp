// Transformer building blocks (RMSNormalization-23, RotaryEmbedding-23, Gelu-20, Swish-24,
// SwiGLU-28) against naive formulas written here: the spec's reference algorithms in double,
// for float32, float64, float16 and bfloat16 tensors, and the errors of malformed nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> wave(size_t n, float f = 0.61f, float amplitude = 2.0f, float offset = 0.25f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * f + 0.3f) * amplitude + offset;
  return v;
}

// A tensor of any float dtype holding `values` (rounded to that dtype).
Tensor make_float_tensor(loom_dtype_t dtype, std::vector<int64_t> dims,
                         const std::vector<float>& values) {
  Tensor t = make_tensor(dtype, dims);
  if (values.size() != static_cast<size_t>(sdk::element_count(t.view)))
    throw std::runtime_error("make_float_tensor: value count does not match the shape");
  dispatch<kFloats>(dtype, "test", [&]<typename T>() {
    T* p = static_cast<T*>(t.view.data);
    for (size_t i = 0; i < values.size(); ++i) p[i] = convert<T>(values[i]);
  });
  return t;
}

// The values of a float tensor of any float dtype, as doubles.
std::vector<double> doubles_of(const Tensor& t) {
  return dispatch<kFloats>(t.view.dtype, "test", [&]<typename T>() {
    const T* p = static_cast<const T*>(t.view.data);
    std::vector<double> v(static_cast<size_t>(sdk::element_count(t.view)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = convert<double>(p[i]);
    return v;
  });
}

// `values` as stored in `dtype` (what the kernel reads).
std::vector<double> rounded(loom_dtype_t dtype, const std::vector<float>& values) {
  return doubles_of(make_float_tensor(dtype, {static_cast<int64_t>(values.size())}, values));
}

// Relative tolerance of one rounding to dtype, with an absolute floor.
double tolerance(loom_dtype_t dtype) {
  switch (dtype) {
    case LOOM_DTYPE_FLOAT16:
      return 2e-3;
    case LOOM_DTYPE_BFLOAT16:
      return 1.6e-2;
    case LOOM_DTYPE_FLOAT64:
      return 1e-12;
    default:
      return 2e-6;
  }
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel,
                  double abs = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << "index " << i;
}

std::vector<int64_t> dims(const Tensor& t) {
  return {t.view.dims, t.view.dims + t.view.rank};
}

constexpr loom_dtype_t kFloatTypes[] = {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64, LOOM_DTYPE_FLOAT16,
                                        LOOM_DTYPE_BFLOAT16};

// ---- RMSNormalization -----------------------------------------------------------------------

// The spec's formula: rows of `row` elements, scale repeating every `scale_period` elements of
// the row-major X (its broadcast), normalised values rounded to X's type `x_type` first.
std::vector<double> naive_rms(const std::vector<double>& x, size_t row,
                              const std::function<double(size_t)>& scale_at, double eps,
                              loom_dtype_t x_type) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / row; ++r) {
    double ms = 0;
    for (size_t i = 0; i < row; ++i) ms += x[r * row + i] * x[r * row + i];
    const double rms = std::sqrt(ms / double(row) + eps);
    std::vector<float> normalized(row);
    for (size_t i = 0; i < row; ++i) normalized[i] = float(x[r * row + i] / rms);
    const std::vector<double> stored = rounded(x_type, normalized);
    for (size_t i = 0; i < row; ++i) y[r * row + i] = stored[i] * scale_at(r * row + i);
  }
  return y;
}

TEST(RMSNormalizationOp, EveryAxisOfA4DTensor) {
  const std::vector<int64_t> shape = {2, 3, 4, 5};
  const auto x = wave(120);
  for (int64_t axis : {0, 1, 2, 3, -1, -2, -3, -4}) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    std::vector<int64_t> scale_shape(shape.begin() + a, shape.end());
    size_t row = 1;
    for (int64_t d : scale_shape) row *= size_t(d);
    const auto scale = wave(row, 0.37f, 1.5f, 0.1f);
    KernelHarness h("RMSNormalization", 23);
    h.input(make_filled<float>(shape, x));
    h.input(make_filled<float>(scale_shape, scale));
    h.attr_int("axis", axis);
    auto out = h.run(1);
    EXPECT_EQ(dims(out[0]), shape);
    EXPECT_EQ(out[0].view.dtype, LOOM_DTYPE_FLOAT32);
    std::vector<double> xd(x.begin(), x.end());
    expect_close(
        doubles_of(out[0]),
        naive_rms(
            xd, row, [&](size_t i) { return double(scale[i % row]); }, 1e-5, LOOM_DTYPE_FLOAT32),
        3e-6);
  }
}

TEST(RMSNormalizationOp, DefaultsEpsilonAndAllFloatTypes) {
  const auto x = wave(2 * 3 * 5, 0.9f, 0.05f, 0.0f);  // small values: epsilon matters
  const auto scale = wave(5, 0.5f, 1.0f, 0.5f);
  for (loom_dtype_t dtype : kFloatTypes) {
    for (float eps : {1e-5f, 1e-2f}) {
      KernelHarness h("RMSNormalization", 23);
      h.input(make_float_tensor(dtype, {2, 3, 5}, x));
      h.input(make_float_tensor(dtype, {5}, scale));
      if (eps != 1e-5f) h.attr_float("epsilon", eps);
      auto out = h.run(1);
      ASSERT_EQ(out[0].view.dtype, dtype);
      const std::vector<double> xs = rounded(dtype, x), ss = rounded(dtype, scale);
      SCOPED_TRACE(::testing::Message() << sdk::dtype_name(dtype) << " epsilon " << eps);
      expect_close(doubles_of(out[0]),
                   naive_rms(
                       xs, 5, [&](size_t i) { return ss[i % 5]; }, double(eps), dtype),
                   2 * tolerance(dtype));
    }
  }
}

TEST(RMSNormalizationOp, ScaleBroadcastsUnidirectionallyToX) {
  const auto x = wave(2 * 3 * 4);
  std::vector<double> xd(x.begin(), x.end());
  // A one-element scale.
  {
    KernelHarness h("RMSNormalization", 23);
    h.input(make_filled<float>({2, 3, 4}, x));
    h.input(make_filled<float>({1}, {2.5f}));
    expect_close(doubles_of(h.run(1)[0]),
                 naive_rms(
                     xd, 4, [](size_t) { return 2.5; }, 1e-5, LOOM_DTYPE_FLOAT32),
                 3e-6);
  }
  // axis 1 (rows of 12) with a scale of [3, 1]: one value per middle index.
  {
    KernelHarness h("RMSNormalization", 23);
    h.input(make_filled<float>({2, 3, 4}, x));
    h.input(make_filled<float>({3, 1}, {1, -2, 0.5f}));
    h.attr_int("axis", 1);
    const double s[] = {1, -2, 0.5};
    expect_close(doubles_of(h.run(1)[0]),
                 naive_rms(
                     xd, 12, [&](size_t i) { return s[(i / 4) % 3]; }, 1e-5, LOOM_DTYPE_FLOAT32),
                 3e-6);
  }
  // A scale over the leading dimension too ([2, 1, 4], still broadcasting to X).
  {
    const auto scale = wave(8, 0.8f);
    KernelHarness h("RMSNormalization", 23);
    h.input(make_filled<float>({2, 3, 4}, x));
    h.input(make_filled<float>({2, 1, 4}, scale));
    expect_close(doubles_of(h.run(1)[0]),
                 naive_rms(
                     xd, 4, [&](size_t i) { return double(scale[(i / 12) * 4 + i % 4]); }, 1e-5,
                     LOOM_DTYPE_FLOAT32),
                 3e-6);
  }
}

TEST(RMSNormalizationOp, OutputHasTheScalesTypeAndStashTypesAreAccepted) {
  const auto x = wave(2 * 6);
  const auto scale = wave(6, 0.3f);
  // float16 X, float scale: normalised in float16, Y in float.
  KernelHarness h("RMSNormalization", 23);
  h.input(make_float_tensor(LOOM_DTYPE_FLOAT16, {2, 6}, x));
  h.input(make_filled<float>({6}, scale));
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.dtype, LOOM_DTYPE_FLOAT32);
  expect_close(doubles_of(out[0]),
               naive_rms(
                   rounded(LOOM_DTYPE_FLOAT16, x), 6,
                   [&](size_t i) { return double(scale[i % 6]); }, 1e-5, LOOM_DTYPE_FLOAT16),
               1e-6);
  for (int64_t stash : {LOOM_DTYPE_FLOAT64, LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16}) {
    KernelHarness s("RMSNormalization", 23);
    s.input(make_filled<float>({2, 6}, x));
    s.input(make_filled<float>({6}, scale));
    s.attr_int("stash_type", stash);
    std::vector<double> xd(x.begin(), x.end());
    expect_close(
        doubles_of(s.run(1)[0]),
        naive_rms(
            xd, 6, [&](size_t i) { return double(scale[i % 6]); }, 1e-5, LOOM_DTYPE_FLOAT32),
        3e-6);
  }
}

TEST(RMSNormalizationOp, RejectsBadAxisStashTypeAndScale) {
  const auto x = wave(6);
  auto node = [&](std::vector<int64_t> scale_shape, std::vector<float> scale) {
    auto h = std::make_unique<KernelHarness>("RMSNormalization", 23);
    h->input(make_filled<float>({2, 3}, x));
    h->input(make_filled<float>(scale_shape, scale));
    return h;
  };
  auto bad_axis = node({3}, {1, 1, 1});
  bad_axis->attr_int("axis", 2);
  EXPECT_THROW(bad_axis->run(1), sdk::Error);
  auto bad_negative_axis = node({3}, {1, 1, 1});
  bad_negative_axis->attr_int("axis", -3);
  EXPECT_THROW(bad_negative_axis->run(1), sdk::Error);
  auto bad_stash = node({3}, {1, 1, 1});
  bad_stash->attr_int("stash_type", LOOM_DTYPE_INT32);
  EXPECT_THROW(bad_stash->run(1), sdk::Error);
  EXPECT_THROW(node({2}, {1, 1})->run(1), sdk::Error);                              // 2 vs 3
  EXPECT_THROW(node({2, 2, 3}, std::vector<float>(12, 1.0f))->run(1), sdk::Error);  // grows X
  KernelHarness ints("RMSNormalization", 23);
  ints.input(make_filled<int32_t>({2}, {1, 2}));
  ints.input(make_filled<int32_t>({2}, {1, 1}));
  EXPECT_THROW(ints.run(1), sdk::Error);
}

// ---- RotaryEmbedding ------------------------------------------------------------------------

struct RopeCase {
  std::vector<int64_t> x_shape;  // 4-D [b, heads, s, d] or 3-D [b, s, heads * d]
  int64_t num_heads = 0;         // for 3-D X
  int64_t rotary_dim = 0;        // 0 = head size
  bool interleaved = false;
  bool with_ids = true;
  std::vector<int64_t> cache_shape = {};  // [positions, w] with ids, [b or 1, s or 1, w] without
  std::vector<int64_t> ids_shape = {};    // [b or 1, s or 1]
};

// The spec's reference algorithm, on doubles: X viewed as [b, s, heads, d].
std::vector<double> naive_rope(const RopeCase& c, const std::vector<double>& x,
                               const std::vector<double>& cos, const std::vector<double>& sin,
                               const std::vector<int64_t>& ids) {
  const bool four = c.x_shape.size() == 4;
  const int64_t b_n = c.x_shape[0], s_n = four ? c.x_shape[2] : c.x_shape[1];
  const int64_t heads = four ? c.x_shape[1] : c.num_heads;
  const int64_t d_n = four ? c.x_shape[3] : c.x_shape[2] / c.num_heads;
  const int64_t rot = c.rotary_dim ? c.rotary_dim : d_n, half = rot / 2;
  const int64_t w = c.cache_shape.back();
  auto at = [&](int64_t b, int64_t s, int64_t h, int64_t d) {
    return four ? ((b * heads + h) * s_n + s) * d_n + d : ((b * s_n + s) * heads + h) * d_n + d;
  };
  std::vector<double> y = x;
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t s = 0; s < s_n; ++s) {
      int64_t row;
      if (c.with_ids) {
        row = ids[(c.ids_shape[0] == 1 ? 0 : b) * c.ids_shape[1] + (c.ids_shape[1] == 1 ? 0 : s)];
      } else {
        row = (c.cache_shape[0] == 1 ? 0 : b) * c.cache_shape[1] + (c.cache_shape[1] == 1 ? 0 : s);
      }
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = c.interleaved ? 2 * i : i, i2 = c.interleaved ? 2 * i + 1 : i + half;
          const double x1 = x[at(b, s, h, i1)], x2 = x[at(b, s, h, i2)];
          const double co = cos[row * w + i], si = sin[row * w + i];
          y[at(b, s, h, i1)] = co * x1 - si * x2;
          y[at(b, s, h, i2)] = si * x1 + co * x2;
        }
    }
  return y;
}

size_t count(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

void check_rope(const RopeCase& c, loom_dtype_t dtype = LOOM_DTYPE_FLOAT32) {
  const auto x = wave(count(c.x_shape), 0.71f);
  const auto cos = wave(count(c.cache_shape), 0.43f, 1.0f, 0.0f);
  const auto sin = wave(count(c.cache_shape), 0.29f, 1.0f, 0.0f);
  std::vector<int64_t> ids;
  if (c.with_ids)
    for (size_t i = 0; i < count(c.ids_shape); ++i)
      ids.push_back(int64_t((i * 7 + 3) % size_t(c.cache_shape[0])));
  KernelHarness h("RotaryEmbedding", 23);
  h.input(make_float_tensor(dtype, c.x_shape, x));
  h.input(make_float_tensor(dtype, c.cache_shape, cos));
  h.input(make_float_tensor(dtype, c.cache_shape, sin));
  if (c.with_ids) h.input(make_filled<int64_t>(c.ids_shape, ids));
  if (c.num_heads) h.attr_int("num_heads", c.num_heads);
  if (c.rotary_dim) h.attr_int("rotary_embedding_dim", c.rotary_dim);
  if (c.interleaved) h.attr_int("interleaved", 1);
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.dtype, dtype);
  ASSERT_EQ(dims(out[0]), c.x_shape);
  expect_close(doubles_of(out[0]),
               naive_rope(c, rounded(dtype, x), rounded(dtype, cos), rounded(dtype, sin), ids),
               tolerance(dtype), dtype == LOOM_DTYPE_FLOAT32 ? 1e-6 : 4 * tolerance(dtype));
}

TEST(RotaryEmbeddingOp, FourDimensionalInputWithPositionIds) {
  check_rope({.x_shape = {2, 4, 3, 8}, .cache_shape = {50, 4}, .ids_shape = {2, 3}});
  check_rope(
      {.x_shape = {2, 4, 3, 8}, .interleaved = true, .cache_shape = {50, 4}, .ids_shape = {2, 3}});
}

TEST(RotaryEmbeddingOp, ThreeDimensionalInputUsesNumHeads) {
  check_rope({.x_shape = {2, 3, 32}, .num_heads = 4, .cache_shape = {50, 4}, .ids_shape = {2, 3}});
  check_rope({.x_shape = {2, 3, 24},
              .num_heads = 2,
              .rotary_dim = 8,
              .interleaved = true,
              .cache_shape = {9, 4},
              .ids_shape = {2, 3}});
  // num_heads is ignored for 4-D X.
  check_rope({.x_shape = {1, 2, 3, 4}, .num_heads = 7, .cache_shape = {3, 2}, .ids_shape = {1, 3}});
}

TEST(RotaryEmbeddingOp, PartialRotationLeavesTheTailAlone) {
  for (bool interleaved : {false, true})
    check_rope({.x_shape = {2, 4, 3, 8},
                .rotary_dim = 4,
                .interleaved = interleaved,
                .cache_shape = {50, 2},
                .ids_shape = {2, 3}});
  // Caches wider than rotary_dim / 2 are read from their start (as the function body slices).
  check_rope(
      {.x_shape = {1, 2, 3, 8}, .rotary_dim = 4, .cache_shape = {6, 4}, .ids_shape = {1, 3}});
}

TEST(RotaryEmbeddingOp, WithoutPositionIdsTheCachesArePerToken) {
  for (bool interleaved : {false, true})
    check_rope({.x_shape = {2, 4, 3, 8},
                .interleaved = interleaved,
                .with_ids = false,
                .cache_shape = {2, 3, 4}});
  check_rope(
      {.x_shape = {2, 4, 3, 8}, .rotary_dim = 4, .with_ids = false, .cache_shape = {2, 3, 2}});
  // A batch extent of 1 broadcasts, for the caches and for position_ids.
  check_rope({.x_shape = {2, 3, 12}, .num_heads = 3, .with_ids = false, .cache_shape = {1, 3, 2}});
  check_rope({.x_shape = {3, 2, 4, 6}, .cache_shape = {10, 3}, .ids_shape = {1, 4}});
}

TEST(RotaryEmbeddingOp, HalfPrecisionTypes) {
  for (loom_dtype_t dtype : {LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16, LOOM_DTYPE_FLOAT64}) {
    check_rope({.x_shape = {2, 4, 3, 8}, .cache_shape = {50, 4}, .ids_shape = {2, 3}}, dtype);
    check_rope({.x_shape = {2, 3, 16},
                .num_heads = 2,
                .rotary_dim = 4,
                .interleaved = true,
                .with_ids = false,
                .cache_shape = {2, 3, 2}},
               dtype);
  }
}

TEST(RotaryEmbeddingOp, RejectsMalformedNodes) {
  auto node = [](std::vector<int64_t> x_shape, std::vector<int64_t> cache_shape,
                 std::vector<int64_t> ids_shape, std::vector<int64_t> ids) {
    auto h = std::make_unique<KernelHarness>("RotaryEmbedding", 23);
    h->input(make_filled<float>(x_shape, std::vector<float>(count(x_shape), 1.0f)));
    h->input(make_filled<float>(cache_shape, std::vector<float>(count(cache_shape), 0.5f)));
    h->input(make_filled<float>(cache_shape, std::vector<float>(count(cache_shape), 0.5f)));
    if (!ids_shape.empty()) h->input(make_filled<int64_t>(ids_shape, ids));
    return h;
  };
  // A position id past the caches, or negative.
  EXPECT_THROW(node({1, 1, 2, 4}, {4, 2}, {1, 2}, {0, 4})->run(1), sdk::Error);
  EXPECT_THROW(node({1, 1, 2, 4}, {4, 2}, {1, 2}, {-1, 0})->run(1), sdk::Error);
  // 3-D X without num_heads; hidden not a multiple of num_heads.
  EXPECT_THROW(node({1, 2, 8}, {4, 2}, {1, 2}, {0, 1})->run(1), sdk::Error);
  auto uneven = node({1, 2, 8}, {4, 2}, {1, 2}, {0, 1});
  uneven->attr_int("num_heads", 3);
  EXPECT_THROW(uneven->run(1), sdk::Error);
  // Caches narrower than rotary_dim / 2; an odd rotary dim; one larger than the head.
  EXPECT_THROW(node({1, 1, 2, 8}, {4, 3}, {1, 2}, {0, 1})->run(1), sdk::Error);
  auto odd = node({1, 1, 2, 8}, {4, 4}, {1, 2}, {0, 1});
  odd->attr_int("rotary_embedding_dim", 3);
  EXPECT_THROW(odd->run(1), sdk::Error);
  auto wide = node({1, 1, 2, 8}, {4, 8}, {1, 2}, {0, 1});
  wide->attr_int("rotary_embedding_dim", 10);
  EXPECT_THROW(wide->run(1), sdk::Error);
  // 2-D caches without position_ids; 3-D caches of another batch; position_ids of another seq.
  EXPECT_THROW(node({1, 1, 2, 4}, {4, 2}, {}, {})->run(1), sdk::Error);
  EXPECT_THROW(node({2, 1, 2, 4}, {3, 2, 2}, {}, {})->run(1), sdk::Error);
  EXPECT_THROW(node({1, 1, 2, 4}, {4, 2}, {1, 3}, {0, 1, 2})->run(1), sdk::Error);
  // X of rank 2.
  EXPECT_THROW(node({2, 4}, {4, 2}, {1, 2}, {0, 1})->run(1), sdk::Error);
}

// ---- Gelu, Swish, SwiGLU --------------------------------------------------------------------

double gelu_exact(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

std::vector<double> map(const std::vector<double>& v, const std::function<double(double)>& f) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f(v[i]);
  return out;
}

TEST(GeluOp, ExactAndTanhApproximationInEveryFloatType) {
  auto x = wave(60, 0.47f, 4.0f, 0.0f);
  x.insert(x.end(), {-1.0f, 0.0f, 1.0f, -30.0f, 30.0f});
  for (loom_dtype_t dtype : kFloatTypes) {
    const std::vector<double> xs = rounded(dtype, x);
    for (const char* approximate : {"", "none", "tanh"}) {
      KernelHarness h("Gelu", 20);
      h.input(make_float_tensor(dtype, {static_cast<int64_t>(x.size())}, x));
      if (*approximate) h.attr_string("approximate", approximate);
      auto out = h.run(1);
      ASSERT_EQ(out[0].view.dtype, dtype);
      const bool tanh = std::string(approximate) == "tanh";
      SCOPED_TRACE(::testing::Message()
                   << sdk::dtype_name(dtype) << " approximate '" << approximate << "'");
      expect_close(doubles_of(out[0]), map(xs, tanh ? gelu_tanh : gelu_exact), tolerance(dtype),
                   1e-6);
    }
  }
  KernelHarness bad("Gelu", 20);
  bad.input(make_filled<float>({1}, {1.0f}));
  bad.attr_string("approximate", "erf");
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(SwishOp, AlphaScalesTheSigmoidsArgument) {
  auto x = wave(40, 0.53f, 5.0f, 0.0f);
  x.insert(x.end(), {-100.0f, 100.0f, 0.0f});
  for (loom_dtype_t dtype : kFloatTypes) {
    const std::vector<double> xs = rounded(dtype, x);
    for (float alpha : {1.0f, 1.702f, -0.5f}) {
      KernelHarness h("Swish", 24);
      h.input(make_float_tensor(dtype, {1, static_cast<int64_t>(x.size())}, x));
      if (alpha != 1.0f) h.attr_float("alpha", alpha);
      auto out = h.run(1);
      ASSERT_EQ(out[0].view.dtype, dtype);
      ASSERT_EQ(dims(out[0]), (std::vector<int64_t>{1, static_cast<int64_t>(x.size())}));
      SCOPED_TRACE(::testing::Message() << sdk::dtype_name(dtype) << " alpha " << alpha);
      expect_close(doubles_of(out[0]),
                   map(xs, [&](double v) { return v * sigmoid(double(alpha) * v); }),
                   tolerance(dtype), 1e-6);
    }
  }
  KernelHarness ints("Swish", 24);
  ints.input(make_filled<int32_t>({1}, {1}));
  EXPECT_THROW(ints.run(1), sdk::Error);
}

TEST(SwiGLUOp, GatesTheValueWithSwishOfTheGate) {
  const auto a = wave(24, 0.41f, 4.0f, 0.0f), b = wave(24, 0.77f, 2.0f, 0.5f);
  for (loom_dtype_t dtype : kFloatTypes) {
    const std::vector<double> as = rounded(dtype, a), bs = rounded(dtype, b);
    for (float alpha : {1.0f, 1.5f}) {
      KernelHarness h("SwiGLU", 28);
      h.input(make_float_tensor(dtype, {2, 3, 4}, a));
      h.input(make_float_tensor(dtype, {2, 3, 4}, b));
      if (alpha != 1.0f) h.attr_float("alpha", alpha);
      auto out = h.run(1);
      ASSERT_EQ(out[0].view.dtype, dtype);
      ASSERT_EQ(dims(out[0]), (std::vector<int64_t>{2, 3, 4}));
      std::vector<double> want(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        want[i] = as[i] * sigmoid(double(alpha) * as[i]) * bs[i];
      SCOPED_TRACE(::testing::Message() << sdk::dtype_name(dtype) << " alpha " << alpha);
      expect_close(doubles_of(out[0]), want, tolerance(dtype), 1e-6);
    }
  }
  // The spec's float16 example.
  KernelHarness h("SwiGLU", 28);
  h.input(make_float_tensor(LOOM_DTYPE_FLOAT16, {2, 4}, {1, -2, 3, 4, -1, 2, -3, 0.5f}));
  h.input(make_float_tensor(LOOM_DTYPE_FLOAT16, {2, 4}, {0.5f, 1, -1, 2, 2, -1, 0.5f, 1}));
  const std::vector<double> want = {0.3655,  -0.2384, -2.857,  7.855,
                                    -0.5379, -1.762,  -0.0711, 0.3112};
  expect_close(doubles_of(h.run(1)[0]), want, 2e-3, 1e-3);
}

TEST(SwiGLUOp, RejectsBroadcastingAndMixedTypes) {
  KernelHarness shape("SwiGLU", 28);
  shape.input(make_filled<float>({2, 3}, std::vector<float>(6, 1.0f)));
  shape.input(make_filled<float>({1, 3}, {1, 1, 1}));
  EXPECT_THROW(shape.run(1), sdk::Error);
  KernelHarness types("SwiGLU", 28);
  types.input(make_filled<float>({2}, {1, 1}));
  types.input(make_filled<double>({2}, {1, 1}));
  EXPECT_THROW(types.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
