// Transformer building blocks of opsets 23-28:
//   RMSNormalization (23): Y = X / sqrt(mean(X^2 over dims [axis, rank)) + epsilon) * scale,
//     scale broadcast unidirectionally to X. As in the spec's function body, the normalised
//     value is rounded to X's type before it is multiplied by scale; Y has scale's type (the
//     schema's V). The mean square is accumulated in double whatever the stash_type, which
//     only makes it better.
//   RotaryEmbedding (23): rotates pairs of each head's first rotary_embedding_dim elements
//     (halves, or even/odd elements when interleaved) by the angle whose cos/sin the caches hold
//     for the token's position (position_ids indexing [max_position, dim/2] caches, or
//     [batch, seq, dim/2] caches without them); X is [batch, heads, seq, head_size] or
//     [batch, seq, heads * head_size] with the num_heads attribute.
//   Swish (24): Y = X * sigmoid(alpha * X).
//   SwiGLU (28): Y = Swish_alpha(A) * B for same-shape A and B.
// Gelu (20), the other activation of this family, lives with the activations (activation.cpp).
// float16/bfloat16 compute in float, float32 in float, float64 in double.
#include <cmath>
#include <string>
#include <vector>

#include "broadcast.hpp"
#include "nn_common.hpp"

namespace loom::cpu {
namespace {

// 1 / (1 + exp(-x)) without overflowing exp() for large |x|.
template <typename C>
C sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

// The type two element types are multiplied in: double if either is double, else float.
template <typename A, typename B>
using product_t =
    std::conditional_t<std::is_same_v<A, double> || std::is_same_v<B, double>, double, float>;

// ---- RMSNormalization ---------------------------------------------------------------------

void rms_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& scale = ctx.required_input(1);
  if (x.rank == 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": X must have rank >= 1");
  const int64_t axis_attr = ctx.attrs().get_int("axis", -1);
  const int64_t axis = axis_attr < 0 ? axis_attr + x.rank : axis_attr;
  if (axis < 0 || axis >= x.rank)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": axis " + std::to_string(axis_attr) +
                                       " is out of range for X " + nn::shape_string(x));
  const double eps = ctx.attrs().get_float("epsilon", 1e-5f);
  const int64_t stash = ctx.attrs().get_int("stash_type", LOOM_DTYPE_FLOAT32);
  if (stash != LOOM_DTYPE_FLOAT32 && stash != LOOM_DTYPE_FLOAT64 && stash != LOOM_DTYPE_FLOAT16 &&
      stash != LOOM_DTYPE_BFLOAT16)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": stash_type " + std::to_string(stash) + " is not a floating-point type");
  const std::vector<int64_t> x_dims = nn::dims_of(x);
  if (broadcast_shapes(ctx, {&x, &scale}) != x_dims)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scale " + nn::shape_string(scale) +
                                          " does not broadcast to X " + nn::shape_string(x));
  size_t rows = 1, row = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= static_cast<size_t>(x.dims[d]);
  for (int64_t d = axis; d < x.rank; ++d) row *= static_cast<size_t>(x.dims[d]);

  // Stage one: Normalized = X / RMS, in X's type.
  Tensor normalized = make_tensor(x.dtype, x_dims);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    const T* src = sdk::data_of<const T>(x);
    T* dst = sdk::data_of<T>(normalized.view);
    if (row == 0) return;
    nn::parallel_range(ctx, rows, 1, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        const T* in = src + r * row;
        double sum = 0;
        for (size_t i = 0; i < row; ++i) {
          const double v = convert<double>(in[i]);
          sum += v * v;
        }
        const double rms = std::sqrt(sum / static_cast<double>(row) + eps);
        T* out = dst + r * row;
        for (size_t i = 0; i < row; ++i) out[i] = convert<T>(convert<double>(in[i]) / rms);
      }
    });
  });

  // Stage two: Y = Normalized * scale (broadcast), in scale's type.
  loom_tensor_t& y = ctx.allocate_output(0, scale.dtype, x_dims);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    dispatch<kFloats>(scale.dtype, ctx, [&]<typename V>() {
      using C = product_t<T, V>;
      broadcast_binary<T, V, V>(ctx, normalized.view, scale, y, [](T a, V s) {
        return convert<V>(static_cast<C>(convert<C>(a) * convert<C>(s)));
      });
    });
  });
}

// ---- RotaryEmbedding ----------------------------------------------------------------------

// Where a dimension of the caches or position_ids may broadcast: its extent equals X's or is 1.
void check_extent(const KernelContext& ctx, const loom_tensor_t& t, int32_t dim, int64_t want,
                  const char* what, const char* dim_name) {
  if (t.dims[dim] != want && t.dims[dim] != 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + what + " " + nn::shape_string(t) +
                                          " does not match the " + dim_name + " extent " +
                                          std::to_string(want) + " of X");
}

void rotary_embedding_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& cos_cache = ctx.required_input(1);
  const loom_tensor_t& sin_cache = ctx.required_input(2);
  const loom_tensor_t* position_ids = ctx.input(3);
  require_same_dtype(ctx, {&x, &cos_cache, &sin_cache});
  const bool interleaved = ctx.attrs().get_int("interleaved", 0) != 0;
  const int64_t rotary_attr = ctx.attrs().get_int("rotary_embedding_dim", 0);

  // X as [batch, seq, heads, head_size] with the strides of its real layout.
  int64_t batch, seq, heads, head_size;
  size_t stride_b, stride_s, stride_h;
  if (x.rank == 4) {  // [batch, heads, seq, head_size]
    batch = x.dims[0];
    heads = x.dims[1];
    seq = x.dims[2];
    head_size = x.dims[3];
    stride_s = static_cast<size_t>(head_size);
    stride_h = static_cast<size_t>(seq * head_size);
    stride_b = static_cast<size_t>(heads) * stride_h;
  } else if (x.rank == 3) {  // [batch, seq, heads * head_size]
    heads = ctx.attrs().get_int("num_heads", 0);
    if (heads <= 0)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": X " + nn::shape_string(x) + " is 3-D: num_heads must be given (> 0)");
    if (x.dims[2] % heads != 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": hidden size " + std::to_string(x.dims[2]) +
                                            " is not a multiple of num_heads " +
                                            std::to_string(heads));
    batch = x.dims[0];
    seq = x.dims[1];
    head_size = x.dims[2] / heads;
    stride_h = static_cast<size_t>(head_size);
    stride_s = static_cast<size_t>(x.dims[2]);
    stride_b = static_cast<size_t>(seq) * stride_s;
  } else {
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be 3-D or 4-D, got " + nn::shape_string(x));
  }
  const int64_t rotary_dim = rotary_attr > 0 ? rotary_attr : head_size;
  if (rotary_attr < 0 || rotary_dim > head_size || rotary_dim % 2 != 0)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": the rotary dimension " + std::to_string(rotary_dim) +
             " must be even and at most the head size " + std::to_string(head_size));
  const size_t half = static_cast<size_t>(rotary_dim / 2);

  // The caches' rows: [max_position, width] indexed by position_ids, or [batch, seq, width].
  if (nn::dims_of(cos_cache) != nn::dims_of(sin_cache))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cos_cache " + nn::shape_string(cos_cache) +
                                          " and sin_cache " + nn::shape_string(sin_cache) +
                                          " differ in shape");
  const int32_t cache_rank = position_ids ? 2 : 3;
  if (cos_cache.rank != cache_rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": the caches " + nn::shape_string(cos_cache) + " must be " +
             (position_ids ? "2-D [max_position, rotary_dim/2] with position_ids"
                           : "3-D [batch, seq, rotary_dim/2] without position_ids"));
  const int64_t width = cos_cache.dims[cache_rank - 1];
  if (width < static_cast<int64_t>(half))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": the caches " + nn::shape_string(cos_cache) +
                                          " hold fewer than the " + std::to_string(half) +
                                          " values per position a rotation of " +
                                          std::to_string(rotary_dim) + " needs");
  // cache_row[b * seq + s] = the caches' row (in units of `width`) of token (b, s).
  std::vector<size_t> cache_row(static_cast<size_t>(batch * seq));
  if (position_ids) {
    if (position_ids->dtype != LOOM_DTYPE_INT64)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": position_ids must be int64, got " +
                                            sdk::dtype_name(position_ids->dtype));
    if (position_ids->rank != 2)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": position_ids " +
                                            nn::shape_string(*position_ids) +
                                            " must be 2-D [batch, seq]");
    check_extent(ctx, *position_ids, 0, batch, "position_ids", "batch");
    check_extent(ctx, *position_ids, 1, seq, "position_ids", "sequence");
    const int64_t* ids = sdk::data_of<const int64_t>(*position_ids);
    const int64_t max_position = cos_cache.dims[0];
    const bool each_b = position_ids->dims[0] != 1, each_s = position_ids->dims[1] != 1;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t p = ids[(each_b ? b : 0) * position_ids->dims[1] + (each_s ? s : 0)];
        if (p < 0 || p >= max_position)
          fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": position id " + std::to_string(p) +
                                                " is outside the caches' " +
                                                std::to_string(max_position) + " positions");
        cache_row[static_cast<size_t>(b * seq + s)] = static_cast<size_t>(p);
      }
  } else {
    check_extent(ctx, cos_cache, 0, batch, "the caches", "batch");
    check_extent(ctx, cos_cache, 1, seq, "the caches", "sequence");
    const bool each_b = cos_cache.dims[0] != 1, each_s = cos_cache.dims[1] != 1;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s)
        cache_row[static_cast<size_t>(b * seq + s)] =
            static_cast<size_t>((each_b ? b : 0) * cos_cache.dims[1] + (each_s ? s : 0));
  }

  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const T* src = sdk::data_of<const T>(x);
    const T* cos_data = sdk::data_of<const T>(cos_cache);
    const T* sin_data = sdk::data_of<const T>(sin_cache);
    T* dst = sdk::data_of<T>(y);
    const size_t d_all = static_cast<size_t>(head_size), d_rot = static_cast<size_t>(rotary_dim);
    nn::parallel_range(ctx, cache_row.size(), 1, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) {
        const size_t b = t / static_cast<size_t>(seq), s = t % static_cast<size_t>(seq);
        const T* cos_row = cos_data + cache_row[t] * static_cast<size_t>(width);
        const T* sin_row = sin_data + cache_row[t] * static_cast<size_t>(width);
        for (size_t h = 0; h < static_cast<size_t>(heads); ++h) {
          const size_t base = b * stride_b + s * stride_s + h * stride_h;
          const T* in = src + base;
          T* out = dst + base;
          for (size_t i = 0; i < half; ++i) {
            // The pair (x1, x2): halves i and i + half, or elements 2i and 2i + 1.
            const size_t i1 = interleaved ? 2 * i : i;
            const size_t i2 = interleaved ? 2 * i + 1 : i + half;
            const C x1 = convert<C>(in[i1]), x2 = convert<C>(in[i2]);
            const C c = convert<C>(cos_row[i]), sn = convert<C>(sin_row[i]);
            out[i1] = convert<T>(static_cast<C>(c * x1 - sn * x2));
            out[i2] = convert<T>(static_cast<C>(sn * x1 + c * x2));
          }
          for (size_t i = d_rot; i < d_all; ++i) out[i] = in[i];
        }
      }
    });
  });
}

// ---- Swish, SwiGLU ------------------------------------------------------------------------

void swish_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const C a = static_cast<C>(alpha);
    map_unary<T, T>(ctx, x, y, [a](T v) {
      const C c = convert<C>(v);
      return convert<T>(static_cast<C>(c * sigmoid(a * c)));
    });
  });
}

void swiglu_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  require_same_dtype(ctx, {&a, &b});
  if (nn::dims_of(a) != nn::dims_of(b))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": A " + nn::shape_string(a) + " and B " +
                                          nn::shape_string(b) +
                                          " must have the same shape (SwiGLU does not broadcast)");
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  loom_tensor_t& y = ctx.allocate_output(0, a.dtype, sdk::shape_of(a));
  dispatch<kFloats>(a.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const C al = static_cast<C>(alpha);
    const T* pa = sdk::data_of<const T>(a);
    const T* pb = sdk::data_of<const T>(b);
    T* py = sdk::data_of<T>(y);
    ctx.parallel_for(static_cast<size_t>(sdk::element_count(a)), kElementwiseGrain,
                     [&](size_t begin, size_t end) {
                       for (size_t i = begin; i < end; ++i) {
                         const C g = convert<C>(pa[i]);
                         py[i] =
                             convert<T>(static_cast<C>(g * sigmoid(al * g) * convert<C>(pb[i])));
                       }
                     });
  });
}

}  // namespace

LOOM_CPU_KERNEL("RMSNormalization", 23, rms_norm_kernel, nullptr);
LOOM_CPU_KERNEL("RotaryEmbedding", 23, rotary_embedding_kernel, nullptr);
LOOM_CPU_KERNEL("Swish", 24, swish_kernel, nullptr);
LOOM_CPU_KERNEL("SwiGLU", 28, swiglu_kernel, nullptr);

}  // namespace loom::cpu
