#include "kernels/normalize.hpp"

#include <arm_neon.h>

#include <cmath>
#include <limits>

#include "kernels/neon_math.hpp"

namespace loom::neon {

void softmax_rows(const float* in, float* out, size_t len, size_t begin, size_t end) {
  for (size_t r = begin; r < end; ++r) {
    const float* x = in + r * len;
    float* y = out + r * len;
    float32x4_t m4 = vdupq_n_f32(-std::numeric_limits<float>::infinity());
    size_t i = 0;
    for (; i + 4 <= len; i += 4) m4 = vmaxq_f32(m4, vld1q_f32(x + i));
    float m = vmaxvq_f32(m4);
    for (; i < len; ++i) m = std::fmax(m, x[i]);
    const float32x4_t mv = vdupq_n_f32(m);
    float32x4_t s4 = vdupq_n_f32(0.0f);
    i = 0;
    for (; i + 4 <= len; i += 4) {
      const float32x4_t e = exp_f32x4(vsubq_f32(vld1q_f32(x + i), mv));
      vst1q_f32(y + i, e);
      s4 = vaddq_f32(s4, e);
    }
    float s = vaddvq_f32(s4);
    if (i < len) {
      float tail[4] = {
          -std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
      for (size_t j = i; j < len; ++j) tail[j - i] = x[j];
      float e[4];
      vst1q_f32(e, exp_f32x4(vsubq_f32(vld1q_f32(tail), mv)));
      for (size_t j = i; j < len; ++j) {
        y[j] = e[j - i];
        s += e[j - i];
      }
    }
    const float32x4_t inv = vdupq_n_f32(1.0f / s);
    i = 0;
    for (; i + 4 <= len; i += 4) vst1q_f32(y + i, vmulq_f32(vld1q_f32(y + i), inv));
    for (; i < len; ++i) y[i] *= 1.0f / s;
  }
}

void softmax_strided(const float* in, float* out, size_t len, size_t inner, size_t begin,
                     size_t end) {
  for (size_t o = begin; o < end; ++o) {
    const float* x = in + o * len * inner;
    float* y = out + o * len * inner;
    size_t j = 0;
    for (; j + 4 <= inner; j += 4) {
      float32x4_t m = vld1q_f32(x + j);
      for (size_t k = 1; k < len; ++k) m = vmaxq_f32(m, vld1q_f32(x + k * inner + j));
      float32x4_t s = vdupq_n_f32(0.0f);
      for (size_t k = 0; k < len; ++k) {
        const float32x4_t e = exp_f32x4(vsubq_f32(vld1q_f32(x + k * inner + j), m));
        vst1q_f32(y + k * inner + j, e);
        s = vaddq_f32(s, e);
      }
      const float32x4_t inv = vdivq_f32(vdupq_n_f32(1.0f), s);
      for (size_t k = 0; k < len; ++k)
        vst1q_f32(y + k * inner + j, vmulq_f32(vld1q_f32(y + k * inner + j), inv));
    }
    for (; j < inner; ++j) {
      float m = x[j];
      for (size_t k = 1; k < len; ++k) m = std::fmax(m, x[k * inner + j]);
      float s = 0.0f;
      for (size_t k = 0; k < len; ++k) {
        const float e = std::exp(x[k * inner + j] - m);
        y[k * inner + j] = e;
        s += e;
      }
      for (size_t k = 0; k < len; ++k) y[k * inner + j] /= s;
    }
  }
}

void layer_norm_rows(const float* in, float* out, size_t len, const float* scale, const float* bias,
                     float epsilon, size_t begin, size_t end) {
  for (size_t r = begin; r < end; ++r) {
    const float* x = in + r * len;
    float* y = out + r * len;
    // Two passes (mean, then centred squares) for accuracy on rows with a large mean.
    float32x4_t s4 = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 4 <= len; i += 4) s4 = vaddq_f32(s4, vld1q_f32(x + i));
    float sum = vaddvq_f32(s4);
    for (; i < len; ++i) sum += x[i];
    const float mean = sum / static_cast<float>(len);
    const float32x4_t mv = vdupq_n_f32(mean);
    float32x4_t q4 = vdupq_n_f32(0.0f);
    i = 0;
    for (; i + 4 <= len; i += 4) {
      const float32x4_t d = vsubq_f32(vld1q_f32(x + i), mv);
      q4 = vfmaq_f32(q4, d, d);
    }
    float sq = vaddvq_f32(q4);
    for (; i < len; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const float inv = 1.0f / std::sqrt(sq / static_cast<float>(len) + epsilon);
    const float32x4_t iv = vdupq_n_f32(inv);
    i = 0;
    for (; i + 4 <= len; i += 4) {
      float32x4_t v =
          vmulq_f32(vmulq_f32(vsubq_f32(vld1q_f32(x + i), mv), iv), vld1q_f32(scale + i));
      if (bias) v = vaddq_f32(v, vld1q_f32(bias + i));
      vst1q_f32(y + i, v);
    }
    for (; i < len; ++i) y[i] = (x[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0f);
  }
}

}  // namespace loom::neon
