// Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops: reading the
// strides/dilations/pads/auto_pad attributes, output extents, and a visitor that walks the
// input positions one kernel tap sees, a whole output row at a time (so inner loops are
// contiguous and branch-free). im2col/col2im are built on the visitor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "gemm.hpp"
#include "nn_common.hpp"

namespace loom::cpu::nn {

struct WindowGeometry {
  // Per spatial dimension. `in` is the windowed tensor (Conv input); `out` the result grid.
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;

  size_t rank() const { return in.size(); }
  static size_t product(const std::vector<int64_t>& v) {
    size_t p = 1;
    for (int64_t x : v) p *= static_cast<size_t>(x);
    return p;
  }
  size_t in_size() const { return product(in); }
  size_t out_size() const { return product(out); }
  size_t kernel_size() const { return product(kernel); }
};

struct WindowOptions {
  bool ceil_mode = false;     // pooling: round the output extent up
  bool has_dilations = true;  // false for ops without a dilations attribute
};

// Reads an INTS attribute with one value per spatial dimension (`rank` values), each
// >= minimum; absent: `rank` copies of fallback.
std::vector<int64_t> window_attr(const KernelContext& ctx, const char* name, size_t rank,
                                 int64_t fallback, int64_t minimum);

// Builds the geometry from the node's strides, dilations, pads and auto_pad for a windowed
// tensor of spatial extents `in` and window `kernel`. Throws a clear error on bad attributes
// or when the output would be empty.
WindowGeometry window_geometry(const KernelContext& ctx, std::span<const int64_t> in,
                               std::span<const int64_t> kernel, WindowOptions options = {});

// Calls fn(out_offset, in_offset, lo, hi, in_first) for every output row (all output positions
// that share their outer coordinates) as seen by kernel tap `tap` (flat index over the kernel
// window, row-major). For output positions out_offset + ox with ox in [lo, hi), the tap reads
// input element in_offset + in_first + (ox - lo) * stride.back(); positions outside [lo, hi)
// fall into padding. in_offset is -1 when the whole row falls into padding (then lo == hi).
template <typename Fn>
void for_each_tap_row(const WindowGeometry& g, size_t tap, Fn&& fn) {
  const size_t r = g.rank(), last = r - 1;
  int64_t k[LOOM_MAX_RANK];
  for (size_t d = r; d-- > 0;) {
    k[d] = static_cast<int64_t>(tap % static_cast<size_t>(g.kernel[d]));
    tap /= static_cast<size_t>(g.kernel[d]);
  }
  const int64_t s = g.stride[last];
  const int64_t off = k[last] * g.dilation[last] - g.pad_begin[last];  // input x = ox * s + off
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = g.in[last] - 1 - off < 0 ? 0 : std::min(g.out[last], (g.in[last] - 1 - off) / s + 1);
  lo = std::min(lo, g.out[last]);
  hi = std::max(hi, lo);
  const int64_t in_first = lo * s + off;
  int64_t oc[LOOM_MAX_RANK] = {};
  size_t rows = 1;
  for (size_t d = 0; d < last; ++d) rows *= static_cast<size_t>(g.out[d]);
  for (size_t row = 0; row < rows; ++row) {
    int64_t in_off = 0;
    bool inside = true;
    for (size_t d = 0; d < last; ++d) {
      const int64_t iy = oc[d] * g.stride[d] + k[d] * g.dilation[d] - g.pad_begin[d];
      inside = inside && iy >= 0 && iy < g.in[d];
      in_off = in_off * g.in[d] + iy;
    }
    const int64_t out_off = static_cast<int64_t>(row) * g.out[last];
    if (inside)
      fn(out_off, in_off * g.in[last], lo, hi, in_first);
    else
      fn(out_off, int64_t{-1}, lo, lo, in_first);
    for (size_t d = last; d-- > 0;) {  // odometer over the outer output coordinates
      if (++oc[d] < g.out[d]) break;
      oc[d] = 0;
    }
  }
}

// One row of a kernel tap's walk: for_each_tap_row's arguments, the same for every plane.
struct TapRow {
  int64_t out_off, in_off, lo, hi, first;
};

// Every tap's rows, tap after tap (the order for_each_tap_row walks them), made once per
// kernel call: walking the geometry again for every (n, c) plane cost more than small planes'
// arithmetic (a streaming model's 1-D pool over 129 planes of three outputs).
inline std::vector<TapRow> tap_rows(const WindowGeometry& g) {
  std::vector<TapRow> rows;
  for (size_t tap = 0; tap < g.kernel_size(); ++tap)
    for_each_tap_row(g, tap,
                     [&](int64_t out_off, int64_t in_off, int64_t lo, int64_t hi, int64_t first) {
                       rows.push_back({out_off, in_off, lo, hi, first});
                     });
  return rows;
}

// col[(c * kernel_size + tap) * out_size + o] = x[c][input position of (o, tap)] or 0 in
// padding, for `channels` planes of x (each in_size long).
template <typename T>
void im2col(const WindowGeometry& g, const T* x, size_t channels, T* col,
            const ParallelFor& parallel);

// The transpose of im2col, for few output positions (each one a dot product per filter):
// patches[o * channels * kernel_size + c * kernel_size + tap] = x[c][input position of (o, tap)]
// or 0 in padding. Each position's patch is contiguous, as a row of the GEMM's op(B)^T.
template <typename T>
void im2patches(const WindowGeometry& g, const T* x, size_t channels, T* patches);

// The adjoint of im2col: y[c][input position of (o, tap)] += col[(c * kernel_size + tap) *
// out_size + o]. y (channels planes of in_size) must be initialised by the caller.
template <typename T>
void col2im(const WindowGeometry& g, const T* col, size_t channels, T* y,
            const ParallelFor& parallel);

}  // namespace loom::cpu::nn
