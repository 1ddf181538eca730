// im2col / col2im for N-D windows (see conv_util.hpp). Each column row is one (channel, tap)
// pair, filled one output row at a time: zeros for the padded ends, a copy (or a strided
// gather) for the part inside the input.
#include <algorithm>
#include <cstring>
#include <vector>

#include "conv_util.hpp"

namespace loom::cpu::nn {

template <typename T>
void im2col(const WindowGeometry& g, const T* x, size_t channels, T* col,
            const ParallelFor& parallel) {
  const size_t taps = g.kernel_size(), out_size = g.out_size(), in_size = g.in_size();
  const int64_t s = g.stride.back(), width = g.out.back();
  auto rows = [&](size_t begin, size_t end) {
    for (size_t row = begin; row < end; ++row) {
      const T* plane = x + (row / taps) * in_size;
      T* dst_row = col + row * out_size;
      for_each_tap_row(g, row % taps,
                       [&](int64_t out_off, int64_t in_off, int64_t lo, int64_t hi, int64_t first) {
                         T* dst = dst_row + out_off;
                         std::fill(dst, dst + lo, T(0));
                         std::fill(dst + hi, dst + width, T(0));
                         if (hi <= lo) return;
                         const T* src = plane + in_off + first;
                         if (s == 1) {
                           std::memcpy(dst + lo, src, static_cast<size_t>(hi - lo) * sizeof(T));
                         } else {
                           for (int64_t i = 0; i < hi - lo; ++i) dst[lo + i] = src[i * s];
                         }
                       });
    }
  };
  const size_t total = channels * taps;
  // A task copies a few thousand values at least: fewer cost less than waking a worker.
  if (parallel)
    parallel(total, std::max<size_t>(4, 4096 / std::max<size_t>(1, out_size)), rows);
  else
    rows(0, total);
}

template <typename T>
void im2patches(const WindowGeometry& g, const T* x, size_t channels, T* patches) {
  const size_t taps = g.kernel_size(), out_size = g.out_size(), in_size = g.in_size();
  const size_t k = channels * taps;
  if (g.rank() == 1 && g.dilation[0] == 1) {
    // 1-D, undilated (a frame filter over a signal): each patch row is one run of the input,
    // copied whole, with zeros where it hangs over the padding.
    const int64_t width = static_cast<int64_t>(taps), in = g.in[0];
    for (size_t o = 0; o < out_size; ++o) {
      const int64_t start = static_cast<int64_t>(o) * g.stride[0] - g.pad_begin[0];
      const int64_t lo = std::clamp<int64_t>(-start, 0, width);
      const int64_t hi = std::clamp<int64_t>(in - start, lo, width);
      for (size_t c = 0; c < channels; ++c) {
        T* dst = patches + o * k + c * taps;
        std::fill(dst, dst + lo, T(0));
        std::copy(x + c * in_size + start + lo, x + c * in_size + start + hi, dst + lo);
        std::fill(dst + hi, dst + width, T(0));
      }
    }
    return;
  }
  // The input offset each (position, tap) reads, or -1 in padding: the same for every channel.
  // Computed point by point (few positions), odometers over the output and kernel coordinates.
  const size_t r = g.rank();
  std::vector<int64_t> offsets(out_size * taps);
  auto advance = [r](int64_t* coord, const std::vector<int64_t>& extent) {
    for (size_t d = r; d-- > 0;) {
      if (++coord[d] < extent[d]) return;
      coord[d] = 0;
    }
  };
  int64_t oc[LOOM_MAX_RANK] = {};
  for (size_t o = 0; o < out_size; ++o, advance(oc, g.out)) {
    int64_t kc[LOOM_MAX_RANK] = {};
    for (size_t tap = 0; tap < taps; ++tap, advance(kc, g.kernel)) {
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < r; ++d) {
        const int64_t i = oc[d] * g.stride[d] + kc[d] * g.dilation[d] - g.pad_begin[d];
        inside = inside && i >= 0 && i < g.in[d];
        off = off * g.in[d] + i;
      }
      offsets[o * taps + tap] = inside ? off : -1;
    }
  }
  for (size_t o = 0; o < out_size; ++o) {
    const int64_t* off = offsets.data() + o * taps;
    T* dst = patches + o * k;
    for (size_t c = 0; c < channels; ++c) {
      const T* plane = x + c * in_size;
      for (size_t tap = 0; tap < taps; ++tap)
        dst[c * taps + tap] = off[tap] < 0 ? T(0) : plane[off[tap]];
    }
  }
}

template <typename T>
void col2im(const WindowGeometry& g, const T* col, size_t channels, T* y,
            const ParallelFor& parallel) {
  const size_t taps = g.kernel_size(), out_size = g.out_size(), in_size = g.in_size();
  const int64_t s = g.stride.back();
  // Taps of one channel overlap in y, so a channel is never split between threads.
  auto planes = [&](size_t begin, size_t end) {
    for (size_t c = begin; c < end; ++c) {
      T* plane = y + c * in_size;
      for (size_t tap = 0; tap < taps; ++tap) {
        const T* src_row = col + (c * taps + tap) * out_size;
        for_each_tap_row(
            g, tap, [&](int64_t out_off, int64_t in_off, int64_t lo, int64_t hi, int64_t first) {
              if (hi <= lo) return;
              const T* src = src_row + out_off + lo;
              T* dst = plane + in_off + first;
              for (int64_t i = 0; i < hi - lo; ++i) dst[i * s] += src[i];
            });
      }
    }
  };
  if (parallel)
    parallel(channels, 1, planes);
  else
    planes(0, channels);
}

template void im2col<float>(const WindowGeometry&, const float*, size_t, float*,
                            const ParallelFor&);
template void im2col<double>(const WindowGeometry&, const double*, size_t, double*,
                             const ParallelFor&);
template void im2patches<float>(const WindowGeometry&, const float*, size_t, float*);
template void im2patches<double>(const WindowGeometry&, const double*, size_t, double*);
template void col2im<float>(const WindowGeometry&, const float*, size_t, float*,
                            const ParallelFor&);
template void col2im<double>(const WindowGeometry&, const double*, size_t, double*,
                             const ParallelFor&);

}  // namespace loom::cpu::nn
