// Conv (opsets 1, 11): 1-D/2-D/3-D (any spatial rank), groups, strides, dilations, pads and
// auto_pad, optional bias. Two paths:
//   - depthwise (one input channel per group): a direct sum of shifted, scaled input rows,
//     one output plane per task;
//   - everything else: per image and group, im2col then one blocked GEMM
//     Y_g[M/g, out] = W_g[M/g, C/g * taps] x col[C/g * taps, out], skipping im2col for
//     1x1 kernels with unit stride and no padding, whose input already is the column matrix;
//     with few output positions (gemm_dot_columns()) the columns are gathered transposed (one
//     contiguous patch per position) for the GEMM's dot products.
#include <memory>

#include "conv_util.hpp"

namespace loom::cpu {
namespace {

using nn::WindowGeometry;

struct ConvShape {
  int64_t batch, in_channels, out_channels, group;
  WindowGeometry g;
};

ConvShape check_conv(const KernelContext& ctx, const loom_tensor_t& x, const loom_tensor_t& w,
                     const loom_tensor_t* b) {
  nn::require_same_dtype(ctx, {1, 2});
  if (x.rank < 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input X must be [N, C, spatial...], got " + nn::shape_string(x));
  if (w.rank != x.rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": weight W " + nn::shape_string(w) +
                                          " must have the rank of X " + nn::shape_string(x));
  ConvShape s;
  s.batch = x.dims[0];
  s.in_channels = x.dims[1];
  s.out_channels = w.dims[0];
  s.group = ctx.attrs().get_int("group", 1);
  if (s.group <= 0 || s.in_channels != w.dims[1] * s.group || s.out_channels % s.group != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": channels do not match: X " + nn::shape_string(x) + ", W " +
             nn::shape_string(w) + ", group " + std::to_string(s.group) +
             " (need C = W.dims[1] * group and W.dims[0] divisible by group)");
  std::span<const int64_t> kernel(w.dims + 2, static_cast<size_t>(w.rank - 2));
  if (auto ks = ctx.attrs().get_ints("kernel_shape");
      ks && !std::equal(ks->begin(), ks->end(), kernel.begin(), kernel.end()))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": kernel_shape " + nn::shape_string(*ks) +
                                       " does not match the weight shape " + nn::shape_string(w));
  if (b && (b->rank != 1 || b->dims[0] != s.out_channels))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": bias B must be [" +
                                          std::to_string(s.out_channels) + "], got " +
                                          nn::shape_string(*b));
  s.g = nn::window_geometry(ctx, std::span<const int64_t>(x.dims + 2, kernel.size()), kernel);
  return s;
}

template <typename C>
void conv_depthwise(const KernelContext& ctx, const ConvShape& s, const C* x, const C* w, C* y) {
  const WindowGeometry& g = s.g;
  const size_t out_size = g.out_size(), in_size = g.in_size(), taps = g.kernel_size();
  const size_t per_group = static_cast<size_t>(s.out_channels / s.group);
  const size_t channels = static_cast<size_t>(s.out_channels);
  const int64_t stride = g.stride.back();
  nn::parallel_range(ctx, static_cast<size_t>(s.batch) * channels, 1, [&](size_t p0, size_t p1) {
    for (size_t p = p0; p < p1; ++p) {
      const size_t n = p / channels, m = p % channels, c = m / per_group;
      C* yp = y + p * out_size;
      const C* xp = x + (n * static_cast<size_t>(s.in_channels) + c) * in_size;
      const C* wp = w + m * taps;
      for (size_t tap = 0; tap < taps; ++tap) {
        const C wv = wp[tap];
        nn::for_each_tap_row(
            g, tap, [&](int64_t out_off, int64_t in_off, int64_t lo, int64_t hi, int64_t first) {
              C* dst = yp + out_off + lo;
              const C* src = xp + in_off + first;
              if (stride == 1) {
                for (int64_t i = 0; i < hi - lo; ++i) dst[i] += wv * src[i];
              } else {
                for (int64_t i = 0; i < hi - lo; ++i) dst[i] += wv * src[i * stride];
              }
            });
      }
    }
  });
}

template <typename C>
void conv_gemm(const KernelContext& ctx, const ConvShape& s, const C* x, const C* w, C* y,
               bool has_bias) {
  const WindowGeometry& g = s.g;
  const size_t out_size = g.out_size(), in_size = g.in_size(), taps = g.kernel_size();
  const size_t cin_g = static_cast<size_t>(s.in_channels / s.group);
  const size_t cout_g = static_cast<size_t>(s.out_channels / s.group);
  const size_t k = cin_g * taps;
  bool pointwise = true;
  for (size_t d = 0; d < g.rank(); ++d)
    pointwise = pointwise && g.kernel[d] == 1 && g.stride[d] == 1 && g.pad_begin[d] == 0 &&
                g.pad_end[d] == 0;
  // Few output positions (a strided 1-D convolution over a short signal): one dot product per
  // filter and position, so each position's patch is gathered contiguous and the GEMM reads
  // them as op(B) transposed (its dot-product path) instead of transposing the columns again.
  const bool patches = !pointwise && out_size < gemm_dot_columns();
  // Not value-initialised: im2col / im2patches write every element, and zeroing megabytes
  // costs time.
  std::unique_ptr<C[]> col(pointwise ? nullptr : new C[k * out_size]);
  const ParallelFor pf = parallel_for_of(ctx);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t grp = 0; grp < s.group; ++grp) {
      const C* xg = x + (static_cast<size_t>(n * s.in_channels) + grp * cin_g) * in_size;
      C* yg = y + (static_cast<size_t>(n * s.out_channels) + grp * cout_g) * out_size;
      const C* wg = w + grp * cout_g * k;
      const C beta = has_bias ? C(1) : C(0);
      if (patches) {
        nn::im2patches(g, xg, cin_g, col.get());
        gemm(false, true, cout_g, out_size, k, C(1), wg, k, col.get(), k, beta, yg, out_size, pf);
        continue;
      }
      const C* cols = xg;
      if (!pointwise) {
        nn::im2col(g, xg, cin_g, col.get(), pf);
        cols = col.get();
      }
      gemm(false, false, cout_g, out_size, k, C(1), wg, k, cols, out_size, beta, yg, out_size, pf);
    }
  }
}

void conv_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(1);
  const loom_tensor_t* b = ctx.input(2);
  const ConvShape s = check_conv(ctx, x, w, b);
  std::vector<int64_t> out_dims = {s.batch, s.out_channels};
  out_dims.insert(out_dims.end(), s.g.out.begin(), s.g.out.end());
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  if (sdk::element_count(y) == 0 || sdk::element_count(x) == 0) return;

  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x), wv(w);
    nn::ComputeOutput<T> out(y);
    C* yp = out.data();
    const size_t out_size = s.g.out_size();
    if (b) {  // outputs start at the bias; both paths accumulate onto them
      nn::ComputeInput<T> bv(*b);
      for (int64_t n = 0; n < s.batch; ++n)
        for (int64_t m = 0; m < s.out_channels; ++m)
          std::fill_n(yp + static_cast<size_t>(n * s.out_channels + m) * out_size, out_size, bv[m]);
    } else {
      std::fill_n(yp, out.size(), C(0));
    }
    const bool depthwise = s.group > 1 && s.group == s.in_channels;
    if (depthwise) {
      conv_depthwise<C>(ctx, s, xv.data(), wv.data(), yp);
    } else {
      conv_gemm<C>(ctx, s, xv.data(), wv.data(), yp, b != nullptr);
    }
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("Conv", 1, conv_kernel, nullptr);

}  // namespace loom::cpu
