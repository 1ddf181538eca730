// Per-channel normalisations of [N, C, spatial...]:
//   BatchNormalization (opsets 6, 7, 9, 14, 15): Y = (X - mean) / sqrt(var + eps) * scale + B,
//     folded into one multiply-add per element. Inference uses the running statistics;
//     training_mode = 1 (opset 14+) uses the batch's own mean and population variance and
//     returns the updated running statistics. The training outputs of opsets < 14 are refused.
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
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
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

// Per-channel mean and population variance of X over the batch and spatial axes (the
// statistics training_mode = 1 normalises with), in double, two passes for accuracy.
void batch_statistics(KernelContext& ctx, const loom_tensor_t& x, std::vector<double>& mean,
                      std::vector<double>& var) {
  const size_t batch = static_cast<size_t>(x.dims[0]), channels = static_cast<size_t>(x.dims[1]);
  const size_t plane = plane_size(x), count = batch * plane;
  mean.assign(channels, 0.0);
  var.assign(channels, 0.0);
  if (count == 0) return;
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    nn::ComputeInput<T> xv(x);
    nn::parallel_range(ctx, channels, 1, [&](size_t c0, size_t c1) {
      for (size_t c = c0; c < c1; ++c) {
        double sum = 0, squares = 0;
        for (size_t n = 0; n < batch; ++n) {
          const auto* src = xv.data() + (n * channels + c) * plane;
          for (size_t i = 0; i < plane; ++i) sum += static_cast<double>(src[i]);
        }
        const double m = sum / static_cast<double>(count);
        for (size_t n = 0; n < batch; ++n) {
          const auto* src = xv.data() + (n * channels + c) * plane;
          for (size_t i = 0; i < plane; ++i) {
            const double d = static_cast<double>(src[i]) - m;
            squares += d * d;
          }
        }
        mean[c] = m;
        var[c] = squares / static_cast<double>(count);
      }
    });
  });
}

// Output `index` = running * momentum + batch * (1 - momentum), in the type and shape of
// the running statistic it updates.
void write_running_statistic(KernelContext& ctx, size_t index, const loom_tensor_t& running,
                             const std::vector<double>& old_values,
                             const std::vector<double>& batch_values, double momentum) {
  if (!ctx.output_requested(index)) return;
  loom_tensor_t& out = ctx.allocate_output(index, running.dtype, sdk::shape_of(running));
  dispatch<kFloats>(out.dtype, ctx, [&]<typename T>() {
    T* p = sdk::data_of<T>(out);
    for (size_t c = 0; c < old_values.size(); ++c)
      p[c] = convert<T>(old_values[c] * momentum + batch_values[c] * (1.0 - momentum));
  });
}

void batch_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be [N, C, ...], got " + nn::shape_string(x));
  const bool training = ctx.opset() >= 14 && ctx.attrs().get_int("training_mode", 0) != 0;
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.output_requested(i) || (training && i <= 2)) continue;
    if (ctx.opset() >= 14)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": running_mean and running_var are outputs only with training_mode = 1");
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() +
                                     ": the training outputs of opsets before 14 (mean, var, "
                                     "saved_mean, saved_var) are not supported by the cpu "
                                     "device; re-export with opset 14 or later");
  }
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
  std::vector<double> mean = params[2], var = params[3];
  if (training) {
    batch_statistics(ctx, x, mean, var);
    const double momentum = ctx.attrs().get_float("momentum", 0.9f);
    write_running_statistic(ctx, 1, ctx.required_input(3), params[2], mean, momentum);
    write_running_statistic(ctx, 2, ctx.required_input(4), params[3], var, momentum);
  }
  std::vector<double> a(expected), b(expected);
  for (size_t i = 0; i < expected; ++i) {
    a[i] = params[0][i] / std::sqrt(var[i] + eps);
    b[i] = params[1][i] - mean[i] * a[i];
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
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
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
