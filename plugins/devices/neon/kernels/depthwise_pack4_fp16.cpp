// Compiled for ARMv8.2 FP16 (see depthwise_pack4_fp16.hpp: callers check the CPU first).
#pragma GCC target("arch=armv8.2-a+fp16")

#include "kernels/depthwise_pack4_fp16.hpp"

#include <arm_neon.h>

#include <algorithm>

namespace loom::neon {
namespace {

inline float16x4_t zero4() {
  return vreinterpret_f16_u16(vdup_n_u16(0));
}
inline float16x8_t zero8() {
  return vreinterpretq_f16_u16(vdupq_n_u16(0));
}

// Widens the fp16 sum of one pixel's taps and adds the bias in f32.
inline void store_pixel(float* dst, float16x4_t acc, float32x4_t bias) {
  vst1q_f32(dst, vaddq_f32(bias, vcvt_f32_f16(acc)));
}

// Two neighbouring output pixels: the low half of acc is `dst`, the high half `dst + 4`.
inline void store_pair(float* dst, float16x8_t acc, float32x4_t bias) {
  vst1q_f32(dst, vaddq_f32(bias, vcvt_f32_f16(vget_low_f16(acc))));
  vst1q_f32(dst + 4, vaddq_f32(bias, vcvt_high_f32_f16(acc)));
}

// One output pixel with bounds checks on every tap: the border of the plane.
float16x4_t border_pixel(const float16_t* in, const float16_t* w, const Window2d& g, int64_t oy,
                         int64_t ox) {
  float16x4_t acc = zero4();
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
    if (iy < 0 || iy >= g.ih) continue;
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
      if (ix < 0 || ix >= g.iw) continue;
      acc = vfma_f16(acc, vld1_f16(in + (iy * g.iw + ix) * 4), vld1_f16(w + (ky * g.kw + kx) * 8));
    }
  }
  return acc;
}

// The input pixel at p and the one `step` halves further (the next output pixel's), as one
// vector; with unit stride they are adjacent and one load takes both.
template <bool kUnitStride>
inline float16x8_t load_pair(const float16_t* p, size_t step) {
  if constexpr (kUnitStride)
    return vld1q_f16(p);
  else
    return vcombine_f16(vld1_f16(p), vld1_f16(p + step));
}

// The interior pixels of one row, 3x3, two pixels per vector: the 9 weight vectors stay in
// registers.
template <bool kUnitStride>
void row_3x3(const float16_t* top, const float16_t* w, float32x4_t bias, float* dst,
             const Window2d& g, int64_t lo, int64_t hi) {
  const size_t row = static_cast<size_t>(g.dh * g.iw) * 4, col = static_cast<size_t>(g.dw) * 4;
  const size_t step = static_cast<size_t>(g.sw) * 4;
  const float16x8_t w0 = vld1q_f16(w), w1 = vld1q_f16(w + 8), w2 = vld1q_f16(w + 16);
  const float16x8_t w3 = vld1q_f16(w + 24), w4 = vld1q_f16(w + 32), w5 = vld1q_f16(w + 40);
  const float16x8_t w6 = vld1q_f16(w + 48), w7 = vld1q_f16(w + 56), w8 = vld1q_f16(w + 64);
  int64_t ox = lo;
  for (; ox + 2 <= hi; ox += 2) {
    const float16_t* p = top + (ox * g.sw - g.pl) * 4;
    float16x8_t acc = vmulq_f16(load_pair<kUnitStride>(p, step), w0);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + col, step), w1);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + 2 * col, step), w2);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + row, step), w3);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + row + col, step), w4);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + row + 2 * col, step), w5);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + 2 * row, step), w6);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + 2 * row + col, step), w7);
    acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + 2 * row + 2 * col, step), w8);
    store_pair(dst + ox * 4, acc, bias);
  }
  if (ox < hi) {  // an odd interior width: the last pixel alone
    const float16_t* p = top + (ox * g.sw - g.pl) * 4;
    float16x4_t acc = zero4();
    for (size_t ky = 0; ky < 3; ++ky)
      for (size_t kx = 0; kx < 3; ++kx)
        acc = vfma_f16(acc, vld1_f16(p + ky * row + kx * col), vld1_f16(w + (ky * 3 + kx) * 8));
    store_pixel(dst + ox * 4, acc, bias);
  }
}

// The interior pixels of one row for any kernel size, two pixels per vector.
template <bool kUnitStride>
void row_generic(const float16_t* top, const float16_t* w, float32x4_t bias, float* dst,
                 const Window2d& g, int64_t lo, int64_t hi) {
  const size_t step = static_cast<size_t>(g.sw) * 4;
  int64_t ox = lo;
  for (; ox + 2 <= hi; ox += 2) {
    const float16_t* p = top + (ox * g.sw - g.pl) * 4;
    float16x8_t acc = zero8();
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        acc = vfmaq_f16(acc, load_pair<kUnitStride>(p + (ky * g.dh * g.iw + kx * g.dw) * 4, step),
                        vld1q_f16(w + (ky * g.kw + kx) * 8));
    store_pair(dst + ox * 4, acc, bias);
  }
  if (ox < hi) {
    const float16_t* p = top + (ox * g.sw - g.pl) * 4;
    float16x4_t acc = zero4();
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        acc = vfma_f16(acc, vld1_f16(p + (ky * g.dh * g.iw + kx * g.dw) * 4),
                       vld1_f16(w + (ky * g.kw + kx) * 8));
    store_pixel(dst + ox * 4, acc, bias);
  }
}

template <bool kUnitStride>
void interior_row(const float16_t* top, const float16_t* w, float32x4_t bias, float* dst,
                  const Window2d& g, int64_t lo, int64_t hi) {
  if (g.kh == 3 && g.kw == 3)
    row_3x3<kUnitStride>(top, w, bias, dst, g, lo, hi);
  else
    row_generic<kUnitStride>(top, w, bias, dst, g, lo, hi);
}

// The block in binary16, 8 values per step (the block holds ih * iw * 4 values, a multiple of 4).
void convert_block(const float* in, size_t n, float16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    vst1q_f16(out + i,
              vcombine_f16(vcvt_f16_f32(vld1q_f32(in + i)), vcvt_f16_f32(vld1q_f32(in + i + 4))));
  for (; i < n; i += 4) vst1_f16(out + i, vcvt_f16_f32(vld1q_f32(in + i)));
}

}  // namespace

void pack_depthwise_pack4_weights_f16(const float* weights, size_t taps, uint16_t* packed) {
  for (size_t t = 0; t < taps; ++t) {
    const float16x4_t h = vcvt_f16_f32(vld1q_f32(weights + t * 4));
    vst1q_u16(packed + t * 8, vreinterpretq_u16_f16(vcombine_f16(h, h)));
  }
}

void depthwise_pack4_block_f16(const float* in, const uint16_t* weights, const float* bias,
                               float* out, const Window2d& g, uint16_t* scratch) {
  auto* half = reinterpret_cast<float16_t*>(scratch);
  const auto* w = reinterpret_cast<const float16_t*>(weights);
  convert_block(in, static_cast<size_t>(g.ih * g.iw) * 4, half);
  const float32x4_t b = vld1q_f32(bias);
  int64_t y_lo, y_hi, x_lo, x_hi;
  g.interior_rows(y_lo, y_hi);
  g.interior_columns(x_lo, x_hi);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    float* dst = out + oy * g.ow * 4;
    const bool inside = oy >= y_lo && oy < y_hi;
    const int64_t lo = inside ? x_lo : g.ow, hi = inside ? x_hi : g.ow;
    for (int64_t ox = 0; ox < lo; ++ox)
      store_pixel(dst + ox * 4, border_pixel(half, w, g, oy, ox), b);
    if (hi > lo) {
      const float16_t* top = half + (oy * g.sh - g.pt) * g.iw * 4;
      if (g.sw == 1)
        interior_row<true>(top, w, b, dst, g, lo, hi);
      else
        interior_row<false>(top, w, b, dst, g, lo, hi);
    }
    for (int64_t ox = std::max(hi, lo); ox < g.ow; ++ox)
      store_pixel(dst + ox * 4, border_pixel(half, w, g, oy, ox), b);
  }
}

}  // namespace loom::neon
