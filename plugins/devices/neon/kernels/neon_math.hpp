// Vector transcendental functions for the activation and softmax kernels.
//
// exp: x = n * ln2 + r with |r| <= ln2 / 2 (ln2 split in two parts for an exact reduction),
// e^r by a degree-6 Taylor/minimax polynomial in Horner form, 2^n built in the exponent bits.
// Inputs are clamped to [-87.3, ln(FLT_MAX)] (no denormal results; above the range +inf, as
// expf gives). Relative error: a few ulp.
#pragma once

#include <arm_neon.h>

namespace loom::neon {

inline float32x4_t exp_f32x4(float32x4_t input) {
  const float32x4_t hi = vdupq_n_f32(88.72283935546875f), lo = vdupq_n_f32(-87.3f);
  const float32x4_t x = vminq_f32(vmaxq_f32(input, lo), hi);
  const float32x4_t log2e = vdupq_n_f32(1.44269504088896341f);
  const float32x4_t ln2_hi = vdupq_n_f32(0.693359375f), ln2_lo = vdupq_n_f32(-2.12194440e-4f);
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, log2e));
  float32x4_t r = vfmsq_f32(x, n, ln2_hi);
  r = vfmsq_f32(r, n, ln2_lo);
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  const float32x4_t r2 = vmulq_f32(r, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, r2);  // 1 + r + r^2 * P(r)
  // 2^n as 2^(n/2) * 2^(n - n/2): n reaches 128 near the top of the range, beyond a float
  // exponent, while each half stays a normal power of two.
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  const float32x4_t result = vmulq_f32(vmulq_f32(p, s1), s2);
  const uint32x4_t overflow = vcgtq_f32(input, hi);
  return vbslq_f32(overflow, vdupq_n_f32(__builtin_inff()), result);
}

// 1 / (1 + e^-x), with an exact division.
inline float32x4_t sigmoid_f32x4(float32x4_t x) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  return vdivq_f32(one, vaddq_f32(one, exp_f32x4(vnegq_f32(x))));
}

// tanh(x) = sign(x) * (1 - 2 / (e^(2|x|) + 1)); for |x| < 0.0625 the odd Taylor series
// x - x^3/3 + 2x^5/15 avoids the cancellation of the first form near zero.
inline float32x4_t tanh_f32x4(float32x4_t x) {
  const float32x4_t ax = vabsq_f32(x);
  const float32x4_t one = vdupq_n_f32(1.0f);
  const float32x4_t e = exp_f32x4(vaddq_f32(ax, ax));
  float32x4_t big = vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.0f), vaddq_f32(e, one)));
  big = vbslq_f32(vcltzq_f32(x), vnegq_f32(big), big);
  const float32x4_t x2 = vmulq_f32(x, x);
  float32x4_t poly = vfmaq_f32(vdupq_n_f32(-1.0f / 3.0f), x2, vdupq_n_f32(2.0f / 15.0f));
  const float32x4_t small = vfmaq_f32(x, vmulq_f32(x, x2), poly);
  return vbslq_f32(vcltq_f32(ax, vdupq_n_f32(0.0625f)), small, big);
}

}  // namespace loom::neon
