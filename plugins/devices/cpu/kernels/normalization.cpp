// Per-channel normalisations of [N, C, spatial...]:
//   BatchNormalization (opsets 6, 7, 9, 14, 15), inference only: Y = (X - mean) / sqrt(var + eps)
//     * scale + B with the running statistics, folded into one multiply-add per element.
//     training_mode = 1 (or the training outputs of older opsets) is refused as UNSUPPORTED.
//   InstanceNormalization (opset 6): statistics of each (n, c) plane.
#include <cmath>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

size_t plane_size(const loom_tensor_t& x) {
  size_t n = 1;
  for (int32_t d = 2; d < x.rank; ++d) n *= static_cast<size_t>(x.dims[d]);
  return n;
}

// y[n, c, i] = x[n, c, i] * a[c or c*plane+i] + b[...]; `per_element` when the coefficients
// vary over the spatial positions too (opset 7's spatial = 0).
void apply_affine(KernelContext& ctx, const loom_tensor_t& x, loom_tensor_t& y,
                  const std::vector<double>& a, const std::vector<double>& b, bool per_element) {
  const size_t channels = static_cast<size_t>(x.dims[1]), plane = plane_size(x);
  const size_t planes = static_cast<size_t>(x.dims[0]) * channels;
  dispatch<kFloats>(x.dtype, ctx.where(), [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    nn::parallel_range(ctx, planes, 1, [&](size_t p0, size_t p1) {
      for (size_t p = p0; p < p1; ++p) {
        const size_t c = p % channels;
        const C* src = xv.data() + p * plane;
        C* dst = out.data() + p * plane;
        if (per_element) {
          for (size_t i = 0; i < plane; ++i)
            dst[i] = static_cast<C>(src[i] * a[c * plane + i] + b[c * plane + i]);
        } else {
          const C ac = static_cast<C>(a[c]), bc = static_cast<C>(b[c]);
          for (size_t i = 0; i < plane; ++i) dst[i] = src[i] * ac + bc;
        }
      }
    });
    out.commit();
  });
}

void batch_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be [N, C, ...], got " + nn::shape_string(x));
  if (ctx.attrs().get_int("training_mode", 0) != 0)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() +
                                     ": training_mode = 1 is not supported by the cpu "
                                     "device (inference only); export the model in "
                                     "eval mode");
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.output_requested(i))
      fail(LOOM_ERROR_UNSUPPORTED, ctx.where() +
                                       ": the training outputs (running/saved mean "
                                       "and variance) are not supported by the cpu "
                                       "device (inference only)");
  const double eps = ctx.attrs().get_float("epsilon", 1e-5f);
  const size_t channels = static_cast<size_t>(x.dims[1]), plane = plane_size(x);
  // Opset 7 with spatial = 0 normalises each (channel, position) separately.
  const bool per_element = ctx.opset() < 9 && ctx.attrs().get_int("spatial", 1) == 0;
  const size_t expected = per_element ? channels * plane : channels;
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  std::vector<double> params[4];
  for (size_t i = 0; i < 4; ++i) {
    const loom_tensor_t& t = ctx.required_input(i + 1);
    params[i] = nn::float_values(ctx, t);
    if (params[i].size() != expected)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": " + names[i] + " has shape " + nn::shape_string(t) + ", expected " +
               std::to_string(expected) + " elements for X " + nn::shape_string(x));
  }
  std::vector<double> a(expected), b(expected);
  for (size_t i = 0; i < expected; ++i) {
    a[i] = params[0][i] / std::sqrt(params[3][i] + eps);
    b[i] = params[1][i] - params[2][i] * a[i];
  }
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  apply_affine(ctx, x, y, a, b, per_element);
}

void instance_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input must be [N, C, spatial...], got " + nn::shape_string(x));
  const size_t channels = static_cast<size_t>(x.dims[1]), plane = plane_size(x);
  const std::vector<double> scale = nn::float_values(ctx, ctx.required_input(1));
  const std::vector<double> bias = nn::float_values(ctx, ctx.required_input(2));
  if (scale.size() != channels || bias.size() != channels)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": scale and B must have C = " + std::to_string(channels) + " elements");
  const double eps = ctx.attrs().get_float("epsilon", 1e-5f);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  const size_t planes = static_cast<size_t>(x.dims[0]) * channels;
  if (plane == 0) return;
  dispatch<kFloats>(x.dtype, ctx.where(), [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    nn::parallel_range(ctx, planes, 1, [&](size_t p0, size_t p1) {
      for (size_t p = p0; p < p1; ++p) {
        const C* src = xv.data() + p * plane;
        double mean = 0, var = 0;
        for (size_t i = 0; i < plane; ++i) mean += static_cast<double>(src[i]);
        mean /= static_cast<double>(plane);
        for (size_t i = 0; i < plane; ++i) {
          const double d = static_cast<double>(src[i]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(plane);
        const size_t c = p % channels;
        const double a = scale[c] / std::sqrt(var + eps), b = bias[c] - mean * a;
        C* dst = out.data() + p * plane;
        for (size_t i = 0; i < plane; ++i)
          dst[i] = static_cast<C>(static_cast<double>(src[i]) * a + b);
      }
    });
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("BatchNormalization", 6, batch_norm_kernel, nullptr);
LOOM_CPU_KERNEL("InstanceNormalization", 1, instance_norm_kernel, nullptr);

}  // namespace loom::cpu
