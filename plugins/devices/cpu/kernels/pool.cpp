// Windowed pooling over [N, C, spatial...]: MaxPool (opsets 1, 8, 10, 11, 12: optional int64
// Indices output with storage_order, ceil_mode, dilations, int8/uint8), AveragePool
// (count_include_pad, ceil_mode) and LpPool. Planes ((n, c)) are split into tasks; within a
// plane the window is walked one kernel tap at a time through the tap rows (for_each_tap_row's,
// made once per call), so every inner loop runs over a contiguous (or constant-stride) output
// row.
#include <cmath>
#include <limits>

#include "conv_util.hpp"

namespace loom::cpu {
namespace {

using nn::WindowGeometry;

struct PoolSetup {
  WindowGeometry g;
  size_t planes = 0;  // N * C
  std::vector<int64_t> out_dims;
};

PoolSetup setup_pool(KernelContext& ctx, const loom_tensor_t& x, bool has_dilations) {
  if (x.rank < 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input must be [N, C, spatial...], got " + nn::shape_string(x));
  const size_t r = static_cast<size_t>(x.rank - 2);
  auto kernel = ctx.attrs().get_ints("kernel_shape");
  if (!kernel)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": required attribute 'kernel_shape' is missing");
  if (kernel->size() != r)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": kernel_shape " + nn::shape_string(*kernel) +
                                       " must have one extent per spatial dimension of " +
                                       nn::shape_string(x));
  nn::WindowOptions options;
  options.ceil_mode = ctx.attrs().get_int("ceil_mode", 0) != 0;
  options.has_dilations = has_dilations;
  PoolSetup s;
  s.g = nn::window_geometry(ctx, std::span<const int64_t>(x.dims + 2, r), *kernel, options);
  s.planes = static_cast<size_t>(x.dims[0] * x.dims[1]);
  s.out_dims = {x.dims[0], x.dims[1]};
  s.out_dims.insert(s.out_dims.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

// Flat row-major spatial index -> the index MaxPool reports for storage_order 1 (column-major
// over the spatial dimensions, as the ONNX reference numbers them).
int64_t column_major_index(int64_t flat, const std::vector<int64_t>& dims) {
  int64_t result = 0, stride = 1;
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = flat % dims[d];
    flat /= dims[d];
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    result += c[d] * stride;
    stride *= dims[d];
  }
  return result;
}

void max_pool_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const PoolSetup s = setup_pool(ctx, x, /*has_dilations=*/true);
  const int64_t storage_order = ctx.attrs().get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": storage_order must be 0 or 1");
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, s.out_dims);
  int64_t* indices = nullptr;
  if (ctx.output_requested(1))
    indices = sdk::data_of<int64_t>(ctx.allocate_output(1, LOOM_DTYPE_INT64, s.out_dims));
  const WindowGeometry& g = s.g;
  const size_t in_size = g.in_size(), out_size = g.out_size(), taps = g.kernel_size();
  const int64_t stride = g.stride.back();

  dispatch<kFloats | kSignedInts | kUnsignedInts>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    const std::vector<nn::TapRow> rows = nn::tap_rows(g);
    const size_t grain =
        std::max<size_t>(1, (size_t{1} << 14) / std::max<size_t>(1, out_size * taps));
    nn::parallel_range(ctx, s.planes, grain, [&](size_t p0, size_t p1) {
      std::vector<C> best(out_size);
      std::vector<int64_t> arg(out_size);
      for (size_t p = p0; p < p1; ++p) {
        const C* xp = xv.data() + p * in_size;
        std::fill(best.begin(), best.end(), std::numeric_limits<C>::lowest());
        std::fill(arg.begin(), arg.end(), int64_t{0});
        // Taps in row-major window order with a strict '>' keep the first maximum.
        for (const nn::TapRow& row : rows) {
          for (int64_t i = 0; i < row.hi - row.lo; ++i) {
            const int64_t src = row.in_off + row.first + i * stride;
            const C v = xp[src];
            C& b = best[row.out_off + row.lo + i];
            if (v > b ||
                (std::isnan(static_cast<double>(v)) && !std::isnan(static_cast<double>(b)))) {
              b = v;
              arg[row.out_off + row.lo + i] = src;
            }
          }
        }
        std::copy(best.begin(), best.end(), out.data() + p * out_size);
        if (indices) {
          for (size_t o = 0; o < out_size; ++o) {
            const int64_t spatial = storage_order == 0 ? arg[o] : column_major_index(arg[o], g.in);
            indices[p * out_size + o] = static_cast<int64_t>(p * in_size) + spatial;
          }
        }
      }
    });
    out.commit();
  });
}

// Number of window positions along one dimension that count towards the average of each
// output index: inside the input, or (count_include_pad) inside the padded input.
std::vector<int64_t> window_counts(const WindowGeometry& g, size_t d, bool include_pad) {
  std::vector<int64_t> counts(static_cast<size_t>(g.out[d]));
  const int64_t lo_bound = include_pad ? -g.pad_begin[d] : 0;
  const int64_t hi_bound = include_pad ? g.in[d] + g.pad_end[d] : g.in[d];
  for (int64_t o = 0; o < g.out[d]; ++o) {
    int64_t n = 0;
    for (int64_t k = 0; k < g.kernel[d]; ++k) {
      const int64_t pos = o * g.stride[d] + k * g.dilation[d] - g.pad_begin[d];
      n += pos >= lo_bound && pos < hi_bound;
    }
    counts[static_cast<size_t>(o)] = n;
  }
  return counts;
}

// Sums f(x) over each window of every plane into `sums` (planes x out_size), in double.
template <typename C, typename F>
void window_sums(const KernelContext& ctx, const PoolSetup& s, const C* x, F f,
                 std::vector<double>& sums) {
  const WindowGeometry& g = s.g;
  const size_t in_size = g.in_size(), out_size = g.out_size(), taps = g.kernel_size();
  const int64_t stride = g.stride.back();
  sums.assign(s.planes * out_size, 0.0);
  // Planes per task: enough sums that a worker's hand-off pays (a streaming model's pool of
  // 129 planes of three outputs ran as two tasks of a few hundred additions each).
  const size_t grain =
      std::max<size_t>(1, (size_t{1} << 14) / std::max<size_t>(1, out_size * taps));
  const std::vector<nn::TapRow> rows = nn::tap_rows(g);
  nn::parallel_range(ctx, s.planes, grain, [&](size_t p0, size_t p1) {
    for (size_t p = p0; p < p1; ++p) {
      const C* xp = x + p * in_size;
      double* sp = sums.data() + p * out_size;
      for (const nn::TapRow& row : rows) {
        const C* src = xp + row.in_off + row.first;
        double* dst = sp + row.out_off + row.lo;
        for (int64_t i = 0; i < row.hi - row.lo; ++i)
          dst[i] += f(static_cast<double>(src[i * stride]));
      }
    }
  });
}

void average_pool_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  // Dilations arrived for AveragePool in opset 19; older models never carry them.
  const PoolSetup s = setup_pool(ctx, x, /*has_dilations=*/true);
  const bool include_pad = ctx.attrs().get_int("count_include_pad", 0) != 0;
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, s.out_dims);
  const WindowGeometry& g = s.g;
  const size_t out_size = g.out_size(), r = g.rank();
  // Divisor of each output position: the product of the per-dimension counts.
  std::vector<std::vector<int64_t>> per_dim(r);
  for (size_t d = 0; d < r; ++d) per_dim[d] = window_counts(g, d, include_pad);
  std::vector<double> divisor(out_size);
  for (size_t o = 0; o < out_size; ++o) {
    size_t rem = o;
    double n = 1;
    for (size_t d = r; d-- > 0;) {
      n *= static_cast<double>(per_dim[d][rem % static_cast<size_t>(g.out[d])]);
      rem /= static_cast<size_t>(g.out[d]);
    }
    divisor[o] = n;
  }
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    std::vector<double> sums;
    window_sums<C>(
        ctx, s, xv.data(), [](double v) { return v; }, sums);
    C* yp = out.data();
    for (size_t i = 0; i < sums.size(); ++i) {
      const double d = divisor[i % out_size];
      yp[i] = static_cast<C>(d > 0 ? sums[i] / d : 0.0);
    }
    out.commit();
  });
}

void lp_pool_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const PoolSetup s = setup_pool(ctx, x, /*has_dilations=*/true);
  // p is a float attribute in opset 1 and an int from opset 2 on.
  const double p = ctx.opset() < 2 ? ctx.attrs().get_float("p", 2.0f)
                                   : static_cast<double>(ctx.attrs().get_int("p", 2));
  if (!(p > 0)) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": p must be positive");
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, s.out_dims);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    std::vector<double> sums;
    window_sums<C>(
        ctx, s, xv.data(), [p](double v) { return std::pow(std::abs(v), p); }, sums);
    C* yp = out.data();
    for (size_t i = 0; i < sums.size(); ++i) yp[i] = static_cast<C>(std::pow(sums[i], 1.0 / p));
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("MaxPool", 1, max_pool_kernel, nullptr);
LOOM_CPU_KERNEL("AveragePool", 1, average_pool_kernel, nullptr);
LOOM_CPU_KERNEL("LpPool", 1, lp_pool_kernel, nullptr);

}  // namespace loom::cpu
