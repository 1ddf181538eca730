#include "kernels/activation.hpp"

#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "kernels/neon_math.hpp"

namespace loom::neon {
namespace {

// Applies a vector function over the range; the tail (fewer than 4 values) goes through the
// same vector function on a padded copy, so every element is computed the same way.
template <typename V>
void map(const float* in, float* out, size_t n, V vf) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    vst1q_f32(out + i, vf(vld1q_f32(in + i)));
    vst1q_f32(out + i + 4, vf(vld1q_f32(in + i + 4)));
  }
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vf(vld1q_f32(in + i)));
  if (i < n) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::copy(in + i, in + n, tail);
    vst1q_f32(tail, vf(vld1q_f32(tail)));
    std::copy(tail, tail + (n - i), out + i);
  }
}

}  // namespace

void activation(Activation kind, ActivationParams p, const float* in, float* out, size_t n) {
  const float32x4_t zero = vdupq_n_f32(0.0f), one = vdupq_n_f32(1.0f);
  const float32x4_t p0 = vdupq_n_f32(p.p0), p1 = vdupq_n_f32(p.p1);
  switch (kind) {
    case Activation::kRelu:
      return map(in, out, n, [&](float32x4_t x) { return vmaxq_f32(x, zero); });
    case Activation::kLeakyRelu:
      return map(in, out, n,
                 [&](float32x4_t x) { return vbslq_f32(vcltzq_f32(x), vmulq_f32(x, p0), x); });
    case Activation::kClip:
      return map(in, out, n, [&](float32x4_t x) { return vminq_f32(vmaxq_f32(x, p0), p1); });
    case Activation::kSigmoid:
      return map(in, out, n, [](float32x4_t x) { return sigmoid_f32x4(x); });
    case Activation::kTanh:
      return map(in, out, n, [](float32x4_t x) { return tanh_f32x4(x); });
    case Activation::kHardSigmoid:
      return map(in, out, n, [&](float32x4_t x) {
        return vminq_f32(vmaxq_f32(vfmaq_f32(p1, x, p0), zero), one);
      });
    case Activation::kHardSwish: {
      const float32x4_t sixth = vdupq_n_f32(1.0f / 6.0f), half = vdupq_n_f32(0.5f);
      return map(in, out, n, [&](float32x4_t x) {
        return vmulq_f32(x, vminq_f32(vmaxq_f32(vfmaq_f32(half, x, sixth), zero), one));
      });
    }
    case Activation::kAbs:
      return map(in, out, n, [](float32x4_t x) { return vabsq_f32(x); });
    case Activation::kNeg:
      return map(in, out, n, [](float32x4_t x) { return vnegq_f32(x); });
    case Activation::kExp:
      return map(in, out, n, [](float32x4_t x) { return exp_f32x4(x); });
    case Activation::kSqrt:
      return map(in, out, n, [](float32x4_t x) { return vsqrtq_f32(x); });
  }
}

}  // namespace loom::neon
