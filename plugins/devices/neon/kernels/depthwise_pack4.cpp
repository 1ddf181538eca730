#include "kernels/depthwise_pack4.hpp"

#include <arm_neon.h>

#include <algorithm>

namespace loom::neon {
namespace {

// One output pixel with bounds checks on every tap: the border of the plane.
float32x4_t border_pixel(const float* in, const float* weights, float32x4_t bias, const Window2d& g,
                         int64_t oy, int64_t ox) {
  float32x4_t acc = bias;
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
    if (iy < 0 || iy >= g.ih) continue;
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
      if (ix < 0 || ix >= g.iw) continue;
      acc = vfmaq_f32(acc, vld1q_f32(in + (iy * g.iw + ix) * 4),
                      vld1q_f32(weights + (ky * g.kw + kx) * 4));
    }
  }
  return acc;
}

// The interior pixels of one row, 3x3: the 9 weight vectors stay in registers.
void row_3x3(const float* top, const float* w, float32x4_t bias, float* dst, const Window2d& g,
             int64_t lo, int64_t hi) {
  const size_t row = static_cast<size_t>(g.dh * g.iw) * 4, col = static_cast<size_t>(g.dw) * 4;
  const float32x4_t w0 = vld1q_f32(w), w1 = vld1q_f32(w + 4), w2 = vld1q_f32(w + 8);
  const float32x4_t w3 = vld1q_f32(w + 12), w4 = vld1q_f32(w + 16), w5 = vld1q_f32(w + 20);
  const float32x4_t w6 = vld1q_f32(w + 24), w7 = vld1q_f32(w + 28), w8 = vld1q_f32(w + 32);
  for (int64_t ox = lo; ox < hi; ++ox) {
    const float* p = top + (ox * g.sw - g.pl) * 4;
    float32x4_t acc = vfmaq_f32(bias, vld1q_f32(p), w0);
    acc = vfmaq_f32(acc, vld1q_f32(p + col), w1);
    acc = vfmaq_f32(acc, vld1q_f32(p + 2 * col), w2);
    acc = vfmaq_f32(acc, vld1q_f32(p + row), w3);
    acc = vfmaq_f32(acc, vld1q_f32(p + row + col), w4);
    acc = vfmaq_f32(acc, vld1q_f32(p + row + 2 * col), w5);
    acc = vfmaq_f32(acc, vld1q_f32(p + 2 * row), w6);
    acc = vfmaq_f32(acc, vld1q_f32(p + 2 * row + col), w7);
    acc = vfmaq_f32(acc, vld1q_f32(p + 2 * row + 2 * col), w8);
    vst1q_f32(dst + ox * 4, acc);
  }
}

// The interior pixels of one row for any kernel size.
void row_generic(const float* top, const float* w, float32x4_t bias, float* dst, const Window2d& g,
                 int64_t lo, int64_t hi) {
  for (int64_t ox = lo; ox < hi; ++ox) {
    const float* p = top + (ox * g.sw - g.pl) * 4;
    float32x4_t acc = bias;
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        acc = vfmaq_f32(acc, vld1q_f32(p + (ky * g.dh * g.iw + kx * g.dw) * 4),
                        vld1q_f32(w + (ky * g.kw + kx) * 4));
    vst1q_f32(dst + ox * 4, acc);
  }
}

}  // namespace

void depthwise_pack4_block(const float* in, const float* weights, const float* bias, float* out,
                           const Window2d& g) {
  const float32x4_t b = vld1q_f32(bias);
  int64_t y_lo, y_hi, x_lo, x_hi;
  g.interior_rows(y_lo, y_hi);
  g.interior_columns(x_lo, x_hi);
  const bool k3 = g.kh == 3 && g.kw == 3;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    float* dst = out + oy * g.ow * 4;
    const bool inside = oy >= y_lo && oy < y_hi;
    const int64_t lo = inside ? x_lo : g.ow, hi = inside ? x_hi : g.ow;
    for (int64_t ox = 0; ox < lo; ++ox)
      vst1q_f32(dst + ox * 4, border_pixel(in, weights, b, g, oy, ox));
    if (hi > lo) {
      const float* top = in + (oy * g.sh - g.pt) * g.iw * 4;
      if (k3)
        row_3x3(top, weights, b, dst, g, lo, hi);
      else
        row_generic(top, weights, b, dst, g, lo, hi);
    }
    for (int64_t ox = std::max(hi, lo); ox < g.ow; ++ox)
      vst1q_f32(dst + ox * 4, border_pixel(in, weights, b, g, oy, ox));
  }
}

}  // namespace loom::neon
