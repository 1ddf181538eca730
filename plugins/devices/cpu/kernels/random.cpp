// Random generators: RandomUniform, RandomNormal (1), RandomUniformLike, RandomNormalLike (1),
// Bernoulli (15) and Multinomial (7). With a `seed` attribute the output is deterministic:
// every run of the node draws the same values (std::mt19937_64, whose sequence the C++
// standard fixes, plus explicit transforms, so results do not depend on the standard
// library). Without a seed the generator is seeded from std::random_device on every run.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

class Generator {
 public:
  explicit Generator(const KernelContext& ctx) {
    if (ctx.attrs().has("seed")) {
      // Mix all the float's bits, so seeds 1.5 and 1.0 differ.
      const float seed = ctx.attrs().get_float("seed", 0.f);
      uint32_t bits;
      std::memcpy(&bits, &seed, sizeof bits);
      engine_.seed(0x9E3779B97F4A7C15ull ^ bits);
    } else {
      std::random_device device;
      engine_.seed((static_cast<uint64_t>(device()) << 32) | device());
    }
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Standard normal by the Box-Muller transform.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

std::vector<int64_t> shape_attr(const KernelContext& ctx) {
  auto shape = ctx.attrs().get_ints("shape");
  if (!shape) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'shape' is required");
  std::vector<int64_t> dims(shape->begin(), shape->end());
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": shape has a negative dimension");
    total *= d;
    misc::check_output_size(total, ctx.where());
  }
  return dims;
}

// Output dtype: the `dtype` attribute, else `fallback`.
loom_dtype_t dtype_attr(const KernelContext& ctx, loom_dtype_t fallback, unsigned groups) {
  if (!ctx.attrs().has("dtype")) return fallback;
  return misc::dtype_from_onnx(ctx.attrs().get_int("dtype", 1), groups, ctx.where());
}

void fill(KernelContext& ctx, loom_dtype_t dtype, const std::vector<int64_t>& dims, bool normal) {
  const Attributes& a = ctx.attrs();
  Generator gen(ctx);
  loom_tensor_t& y = ctx.allocate_output(0, dtype, dims);
  std::vector<double> v(misc::count_of(y));
  if (normal) {
    const double mean = a.get_float("mean", 0.f), scale = a.get_float("scale", 1.f);
    for (double& x : v) x = mean + scale * gen.normal();
  } else {
    const double low = a.get_float("low", 0.f), high = a.get_float("high", 1.f);
    if (!(high >= low)) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": high must be >= low");
    for (double& x : v) x = low + (high - low) * gen.uniform();
  }
  misc::write_as<double>(y, v, ctx.where());
}

void random_uniform(KernelContext& ctx) {
  fill(ctx, dtype_attr(ctx, LOOM_DTYPE_FLOAT32, kFloats), shape_attr(ctx), false);
}
void random_normal(KernelContext& ctx) {
  fill(ctx, dtype_attr(ctx, LOOM_DTYPE_FLOAT32, kFloats), shape_attr(ctx), true);
}
void random_uniform_like(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  fill(ctx, dtype_attr(ctx, x.dtype, kFloats), misc::dims_of(x), false);
}
void random_normal_like(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  fill(ctx, dtype_attr(ctx, x.dtype, kFloats), misc::dims_of(x), true);
}

// Each output element is 1 with the probability given by the input element, else 0.
void bernoulli(KernelContext& ctx) {
  const loom_tensor_t& p = ctx.required_input(0);
  dispatch<kFloats>(p.dtype, ctx, []<typename T>() {});
  const loom_dtype_t dtype = dtype_attr(ctx, p.dtype, kNumeric | kBool);
  const std::vector<double> probs = misc::read_as<double>(p, ctx.where());
  Generator gen(ctx);
  std::vector<double> v(probs.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(probs[i] >= 0.0 && probs[i] <= 1.0))
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": probabilities must lie in [0, 1]");
    v[i] = gen.uniform() < probs[i] ? 1.0 : 0.0;
  }
  loom_tensor_t& y = ctx.allocate_output(0, dtype, misc::dims_of(p));
  misc::write_as<double>(y, v, ctx.where());
}

// Samples class indices from rows of unnormalised log-probabilities [batch, classes].
void multinomial(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank != 2)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": input must be [batch_size, class_size]");
  dispatch<kFloats>(x.dtype, where, []<typename T>() {});
  const int64_t sample_size = ctx.attrs().get_int("sample_size", 1);
  if (sample_size < 0) fail(LOOM_ERROR_INVALID_MODEL, where + ": sample_size must be >= 0");
  const loom_dtype_t dtype =
      ctx.attrs().has("dtype")
          ? misc::dtype_from_onnx(ctx.attrs().get_int("dtype", 6), kSignedInts, where)
          : LOOM_DTYPE_INT32;
  if (dtype != LOOM_DTYPE_INT32 && dtype != LOOM_DTYPE_INT64)
    fail(LOOM_ERROR_UNSUPPORTED, where + ": dtype must be int32 or int64");
  const int64_t batch = x.dims[0], classes = x.dims[1];
  if (classes == 0 && sample_size > 0) fail(LOOM_ERROR_INVALID_MODEL, where + ": class_size is 0");
  misc::check_output_size(batch * sample_size, where);
  const std::vector<double> logits = misc::read_as<double>(x, where);
  Generator gen(ctx);
  std::vector<double> out(static_cast<size_t>(batch * sample_size));
  std::vector<double> cumulative(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = &logits[b * classes];
    double max = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) max = std::max(max, row[c]);
    double total = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      total += std::isfinite(max) ? std::exp(row[c] - max) : 1.0;
      cumulative[c] = total;
    }
    for (int64_t s = 0; s < sample_size; ++s) {
      const double u = gen.uniform() * total;
      int64_t c = std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
      out[b * sample_size + s] = static_cast<double>(std::min(c, classes - 1));
    }
  }
  const int64_t dims[2] = {batch, sample_size};
  loom_tensor_t& y = ctx.allocate_output(0, dtype, dims);
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL("RandomUniform", 1, random_uniform, nullptr);
LOOM_CPU_KERNEL("RandomNormal", 1, random_normal, nullptr);
LOOM_CPU_KERNEL("RandomUniformLike", 1, random_uniform_like, nullptr);
LOOM_CPU_KERNEL("RandomNormalLike", 1, random_normal_like, nullptr);
LOOM_CPU_KERNEL("Bernoulli", 15, bernoulli, nullptr);
LOOM_CPU_KERNEL("Multinomial", 7, multinomial, nullptr);

}  // namespace loom::cpu
