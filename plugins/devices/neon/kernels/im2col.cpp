#include "kernels/im2col.hpp"

#include <cstring>

namespace loom::neon {

void im2col_rows(const float* in, const Window2d& g, float* col, size_t row_begin, size_t row_end) {
  const size_t taps = static_cast<size_t>(g.kh * g.kw);
  const size_t plane_out = static_cast<size_t>(g.oh * g.ow);
  int64_t lo, hi;
  g.interior_columns(lo, hi);
  for (size_t row = row_begin; row < row_end; ++row) {
    const size_t c = row / taps;
    const int64_t ky = static_cast<int64_t>(row % taps) / g.kw;
    const int64_t kx = static_cast<int64_t>(row % taps) % g.kw;
    const float* plane = in + c * static_cast<size_t>(g.ih * g.iw);
    float* out = col + row * plane_out;
    for (int64_t oy = 0; oy < g.oh; ++oy, out += g.ow) {
      const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
      if (iy < 0 || iy >= g.ih) {
        std::memset(out, 0, static_cast<size_t>(g.ow) * sizeof(float));
        continue;
      }
      const float* src = plane + iy * g.iw;
      const int64_t shift = kx * g.dw - g.pl;
      for (int64_t ox = 0; ox < lo; ++ox) {
        const int64_t ix = ox * g.sw + shift;
        out[ox] = (ix >= 0 && ix < g.iw) ? src[ix] : 0.0f;
      }
      if (g.sw == 1 && hi > lo) {
        std::memcpy(out + lo, src + (lo + shift), static_cast<size_t>(hi - lo) * sizeof(float));
      } else {
        for (int64_t ox = lo; ox < hi; ++ox) out[ox] = src[ox * g.sw + shift];
      }
      for (int64_t ox = hi; ox < g.ow; ++ox) {
        const int64_t ix = ox * g.sw + shift;
        out[ox] = (ix >= 0 && ix < g.iw) ? src[ix] : 0.0f;
      }
    }
  }
}

}  // namespace loom::neon
