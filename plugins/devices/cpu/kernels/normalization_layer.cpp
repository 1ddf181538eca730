// Normalisations over groups of trailing elements:
//   LayerNormalization (opset 17): each row of X's dims [axis, rank) is normalised and scaled
//     by Scale (+ B), both broadcast to that trailing shape; optional Mean and InvStdDev
//     outputs (shape of X with the normalised dims set to 1, type from stash_type).
//   GroupNormalization (opsets 18, 21): [N, C, ...] split into num_groups groups of channels; the
//     scale/bias hold one value per group (opset 18) or per channel (opset 21).
// Statistics are accumulated in double, whatever the stash_type, which only makes them better.
#include <cmath>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

// Expands a tensor unidirectionally broadcast to `dims` into dims' full element count.
std::vector<double> expand_to(const KernelContext& ctx, const loom_tensor_t& t,
                              std::span<const int64_t> dims, const char* what) {
  const std::vector<double> v = nn::float_values(ctx, t);
  if (static_cast<size_t>(t.rank) > dims.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + what + " " + nn::shape_string(t) +
                                          " does not broadcast to " + nn::shape_string(dims));
  const size_t offset = dims.size() - static_cast<size_t>(t.rank);
  for (int32_t d = 0; d < t.rank; ++d)
    if (t.dims[d] != 1 && t.dims[d] != dims[offset + d])
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + what + " " + nn::shape_string(t) +
                                            " does not broadcast to " + nn::shape_string(dims));
  size_t total = 1;
  for (int64_t d : dims) total *= static_cast<size_t>(d);
  std::vector<double> out(total);
  for (size_t i = 0; i < total; ++i) {
    size_t rem = i, src = 0, stride = 1;
    for (size_t d = dims.size(); d-- > offset;) {
      const size_t coord = rem % static_cast<size_t>(dims[d]);
      rem /= static_cast<size_t>(dims[d]);
      const int64_t extent = t.dims[d - offset];
      if (extent != 1) src += coord * stride;
      stride *= static_cast<size_t>(extent);
    }
    out[i] = v[src];
  }
  return out;
}

// Stores doubles into a float tensor of any float dtype.
void store(const KernelContext& ctx, loom_tensor_t& t, const std::vector<double>& v) {
  dispatch<kFloats>(t.dtype, ctx, [&]<typename T>() {
    T* p = sdk::data_of<T>(t);
    for (size_t i = 0; i < v.size(); ++i) p[i] = convert<T>(v[i]);
  });
}

void layer_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& scale_t = ctx.required_input(1);
  const loom_tensor_t* bias_t = ctx.input(2);
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < 0) axis += x.rank;
  if (axis < 0 || axis >= x.rank)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": axis " +
                                       std::to_string(ctx.attrs().get_int("axis", -1)) +
                                       " is out of range for X " + nn::shape_string(x));
  const double eps = ctx.attrs().get_float("epsilon", 1e-5f);
  const int64_t stash = ctx.attrs().get_int("stash_type", 1);
  if (stash != LOOM_DTYPE_FLOAT32 && stash != LOOM_DTYPE_FLOAT64 && stash != LOOM_DTYPE_FLOAT16 &&
      stash != LOOM_DTYPE_BFLOAT16)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": stash_type " + std::to_string(stash) + " is not a floating-point type");
  std::span<const int64_t> norm_dims(x.dims + axis, static_cast<size_t>(x.rank - axis));
  size_t rows = 1, row = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= static_cast<size_t>(x.dims[d]);
  for (int64_t d : norm_dims) row *= static_cast<size_t>(d);
  const std::vector<double> scale = expand_to(ctx, scale_t, norm_dims, "Scale");
  const std::vector<double> bias =
      bias_t ? expand_to(ctx, *bias_t, norm_dims, "B") : std::vector<double>(row, 0.0);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  std::vector<double> means(rows), inv_stds(rows);
  if (row > 0) {
    dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
      using C = nn::compute_t<T>;
      nn::ComputeInput<T> xv(x);
      nn::ComputeOutput<T> out(y);
      nn::parallel_range(ctx, rows, 1, [&](size_t r0, size_t r1) {
        for (size_t r = r0; r < r1; ++r) {
          const C* src = xv.data() + r * row;
          double mean = 0, var = 0;
          for (size_t i = 0; i < row; ++i) mean += static_cast<double>(src[i]);
          mean /= static_cast<double>(row);
          for (size_t i = 0; i < row; ++i) {
            const double d = static_cast<double>(src[i]) - mean;
            var += d * d;
          }
          const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(row) + eps);
          means[r] = mean;
          inv_stds[r] = inv_std;
          C* dst = out.data() + r * row;
          for (size_t i = 0; i < row; ++i)
            dst[i] =
                static_cast<C>((static_cast<double>(src[i]) - mean) * inv_std * scale[i] + bias[i]);
        }
      });
      out.commit();
    });
  }
  std::vector<int64_t> stat_dims(x.dims, x.dims + x.rank);
  for (int64_t d = axis; d < x.rank; ++d) stat_dims[static_cast<size_t>(d)] = 1;
  const auto stat_type = static_cast<loom_dtype_t>(stash);
  if (ctx.output_requested(1)) store(ctx, ctx.allocate_output(1, stat_type, stat_dims), means);
  if (ctx.output_requested(2)) store(ctx, ctx.allocate_output(2, stat_type, stat_dims), inv_stds);
}

void group_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be [N, C, ...], got " + nn::shape_string(x));
  const int64_t groups = ctx.attrs().get_int("num_groups", 0);
  const int64_t channels = x.dims[1];
  if (groups <= 0 || channels % groups != 0)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": num_groups " + std::to_string(groups) +
                                       " must be positive and divide the " +
                                       std::to_string(channels) + " channels");
  // Opset 21 gives scale and bias per channel and adds stash_type (the statistics here are
  // always accumulated in double, at least as precise as any stash type).
  const bool per_channel_params = ctx.opset() >= 21;
  if (per_channel_params) {
    const int64_t stash = ctx.attrs().get_int("stash_type", 1);
    if (stash != LOOM_DTYPE_FLOAT32 && stash != LOOM_DTYPE_FLOAT64 && stash != LOOM_DTYPE_FLOAT16 &&
        stash != LOOM_DTYPE_BFLOAT16)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": stash_type " + std::to_string(stash) + " is not a floating-point type");
  }
  const std::vector<double> scale = nn::float_values(ctx, ctx.required_input(1));
  const std::vector<double> bias = nn::float_values(ctx, ctx.required_input(2));
  const auto per_channel = [&](const std::vector<double>& v, const char* what) {
    const int64_t want = per_channel_params ? channels : groups;
    if (v.size() != static_cast<size_t>(want))
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + what + " must have " +
                                            (per_channel_params ? "C (" : "num_groups (") +
                                            std::to_string(want) + ") elements in opset " +
                                            std::to_string(ctx.opset()) + ", got " +
                                            std::to_string(v.size()));
    if (per_channel_params) return v;
    std::vector<double> out(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) out[c] = v[c / (channels / groups)];
    return out;
  };
  const std::vector<double> ch_scale = per_channel(scale, "scale");
  const std::vector<double> ch_bias = per_channel(bias, "bias");
  const double eps = ctx.attrs().get_float("epsilon", 1e-5f);
  size_t plane = 1;
  for (int32_t d = 2; d < x.rank; ++d) plane *= static_cast<size_t>(x.dims[d]);
  const size_t per_group = static_cast<size_t>(channels / groups);
  const size_t group_size = per_group * plane;
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  if (group_size == 0) return;
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    nn::parallel_range(ctx, static_cast<size_t>(x.dims[0] * groups), 1, [&](size_t g0, size_t g1) {
      for (size_t g = g0; g < g1; ++g) {
        const C* src = xv.data() + g * group_size;
        double mean = 0, var = 0;
        for (size_t i = 0; i < group_size; ++i) mean += static_cast<double>(src[i]);
        mean /= static_cast<double>(group_size);
        for (size_t i = 0; i < group_size; ++i) {
          const double d = static_cast<double>(src[i]) - mean;
          var += d * d;
        }
        const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(group_size) + eps);
        C* dst = out.data() + g * group_size;
        const size_t first_channel = (g % static_cast<size_t>(groups)) * per_group;
        for (size_t c = 0; c < per_group; ++c) {
          const double a = inv_std * ch_scale[first_channel + c];
          const double b = ch_bias[first_channel + c] - mean * a;
          for (size_t i = 0; i < plane; ++i)
            dst[c * plane + i] = static_cast<C>(static_cast<double>(src[c * plane + i]) * a + b);
        }
      }
    });
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("LayerNormalization", 17, layer_norm_kernel, nullptr);
LOOM_CPU_KERNEL("GroupNormalization", 18, group_norm_kernel, nullptr);

}  // namespace loom::cpu
