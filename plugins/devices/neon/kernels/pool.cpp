#include "kernels/pool.hpp"

#include <arm_neon.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace loom::neon {
namespace {

struct MaxReduce {
  static float32x4_t apply(float32x4_t a, float32x4_t b) { return vmaxq_f32(a, b); }
  static float apply(float a, float b) { return std::max(a, b); }
};
struct SumReduce {
  static float32x4_t apply(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }
  static float apply(float a, float b) { return a + b; }
};

// acc[ox] = R(acc[ox], row[ox * sw + shift]) for the interior columns [lo, hi).
template <typename R>
void reduce_row(float* acc, const float* row, int64_t shift, int64_t lo, int64_t hi, int64_t sw) {
  int64_t ox = lo;
  if (sw == 1) {
    for (; ox + 4 <= hi; ox += 4)
      vst1q_f32(acc + ox, R::apply(vld1q_f32(acc + ox), vld1q_f32(row + (ox + shift))));
  } else if (sw == 2) {
    for (; ox + 5 <= hi; ox += 4)  // see depthwise.cpp: vld2q reads one column past
      vst1q_f32(acc + ox, R::apply(vld1q_f32(acc + ox), vld2q_f32(row + (2 * ox + shift)).val[0]));
  }
  for (; ox < hi; ++ox) acc[ox] = R::apply(acc[ox], row[ox * sw + shift]);
}

// Reduces every window of the plane with R into out, starting from `init`.
template <typename R>
void reduce_plane(const float* in, float* out, const Window2d& g, float init) {
  int64_t lo, hi;
  g.interior_columns(lo, hi);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    float* acc = out + oy * g.ow;
    std::fill(acc, acc + g.ow, init);
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
      if (iy < 0 || iy >= g.ih) continue;
      const float* row = in + iy * g.iw;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t shift = kx * g.dw - g.pl;
        for (int64_t ox = 0; ox < lo; ++ox) {
          const int64_t ix = ox * g.sw + shift;
          if (ix >= 0 && ix < g.iw) acc[ox] = R::apply(acc[ox], row[ix]);
        }
        for (int64_t ox = hi; ox < g.ow; ++ox) {
          const int64_t ix = ox * g.sw + shift;
          if (ix >= 0 && ix < g.iw) acc[ox] = R::apply(acc[ox], row[ix]);
        }
        if (hi > lo) reduce_row<R>(acc, row, shift, lo, hi, g.sw);
      }
    }
  }
}

// Taps of each output index along one dimension that count towards the average.
std::vector<float> window_counts(int64_t out, int64_t in, int64_t k, int64_t s, int64_t d,
                                 int64_t pad_begin, int64_t pad_end, bool include_pad) {
  std::vector<float> counts(static_cast<size_t>(out));
  const int64_t lo = include_pad ? -pad_begin : 0, hi = include_pad ? in + pad_end : in;
  for (int64_t o = 0; o < out; ++o) {
    int64_t n = 0;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t pos = o * s + t * d - pad_begin;
      n += pos >= lo && pos < hi;
    }
    counts[static_cast<size_t>(o)] = static_cast<float>(n);
  }
  return counts;
}

}  // namespace

void max_pool_plane(const float* in, float* out, const Window2d& g) {
  reduce_plane<MaxReduce>(in, out, g, -std::numeric_limits<float>::infinity());
}

void average_pool_plane(const float* in, float* out, const Window2d& g, bool count_include_pad) {
  reduce_plane<SumReduce>(in, out, g, 0.0f);
  const std::vector<float> ycount =
      window_counts(g.oh, g.ih, g.kh, g.sh, g.dh, g.pt, g.pb, count_include_pad);
  const std::vector<float> xcount =
      window_counts(g.ow, g.iw, g.kw, g.sw, g.dw, g.pl, g.pr, count_include_pad);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    float* row = out + oy * g.ow;
    const float32x4_t cy = vdupq_n_f32(ycount[static_cast<size_t>(oy)]);
    int64_t ox = 0;
    for (; ox + 4 <= g.ow; ox += 4)
      vst1q_f32(row + ox, vdivq_f32(vld1q_f32(row + ox),
                                    vmulq_f32(cy, vld1q_f32(&xcount[static_cast<size_t>(ox)]))));
    for (; ox < g.ow; ++ox)
      row[ox] /= ycount[static_cast<size_t>(oy)] * xcount[static_cast<size_t>(ox)];
  }
}

float plane_sum(const float* in, size_t n) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a0 = vaddq_f32(a0, vld1q_f32(in + i));
    a1 = vaddq_f32(a1, vld1q_f32(in + i + 4));
  }
  float sum = vaddvq_f32(vaddq_f32(a0, a1));
  for (; i < n; ++i) sum += in[i];
  return sum;
}

float plane_max(const float* in, size_t n) {
  float32x4_t m = vdupq_n_f32(-std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + 4 <= n; i += 4) m = vmaxq_f32(m, vld1q_f32(in + i));
  float best = vmaxvq_f32(m);
  for (; i < n; ++i) best = std::max(best, in[i]);
  return best;
}

}  // namespace loom::neon
