#include "kernels/depthwise.hpp"

#include <arm_neon.h>

namespace loom::neon {
namespace {

// Adds tap weight `wv` times row[ox * sw + shift] to the output columns [lo, hi), all of
// whose inputs lie inside the row.
void accumulate_row(float* acc, const float* row, int64_t shift, float wv, int64_t lo, int64_t hi,
                    int64_t sw) {
  const float32x4_t w4 = vdupq_n_f32(wv);
  int64_t ox = lo;
  if (sw == 1) {
    for (; ox + 8 <= hi; ox += 8) {
      const float* src = row + (ox + shift);
      vst1q_f32(acc + ox, vfmaq_f32(vld1q_f32(acc + ox), vld1q_f32(src), w4));
      vst1q_f32(acc + ox + 4, vfmaq_f32(vld1q_f32(acc + ox + 4), vld1q_f32(src + 4), w4));
    }
    for (; ox + 4 <= hi; ox += 4)
      vst1q_f32(acc + ox, vfmaq_f32(vld1q_f32(acc + ox), vld1q_f32(row + (ox + shift)), w4));
  } else if (sw == 2) {
    // vld2q reads 8 floats, one past the last even column of the 4 outputs: require a fifth
    // output column inside the row so the read stays in it.
    for (; ox + 5 <= hi; ox += 4) {
      const float32x4_t even = vld2q_f32(row + (2 * ox + shift)).val[0];
      vst1q_f32(acc + ox, vfmaq_f32(vld1q_f32(acc + ox), even, w4));
    }
  }
  for (; ox < hi; ++ox) acc[ox] += wv * row[ox * sw + shift];
}

}  // namespace

void depthwise_plane(const float* in, const float* w, float bias, float* out, const Window2d& g) {
  int64_t lo, hi;
  g.interior_columns(lo, hi);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    float* acc = out + oy * g.ow;
    for (int64_t ox = 0; ox < g.ow; ++ox) acc[ox] = bias;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
      if (iy < 0 || iy >= g.ih) continue;
      const float* row = in + iy * g.iw;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const float wv = w[ky * g.kw + kx];
        const int64_t shift = kx * g.dw - g.pl;  // ix = ox * sw + shift
        // Border columns: check each tap.
        for (int64_t ox = 0; ox < lo; ++ox) {
          const int64_t ix = ox * g.sw + shift;
          if (ix >= 0 && ix < g.iw) acc[ox] += wv * row[ix];
        }
        for (int64_t ox = hi; ox < g.ow; ++ox) {
          const int64_t ix = ox * g.sw + shift;
          if (ix >= 0 && ix < g.iw) acc[ox] += wv * row[ix];
        }
        if (hi > lo) accumulate_row(acc, row, shift, wv, lo, hi, g.sw);
      }
    }
  }
}

}  // namespace loom::neon
