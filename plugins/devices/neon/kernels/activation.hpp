// Unary elementwise ops and activations over a contiguous range of floats.
#pragma once

#include <cstddef>

namespace loom::neon {

enum class Activation {
  kRelu,
  kLeakyRelu,  // p0 = alpha
  kClip,       // p0 = min, p1 = max
  kSigmoid,
  kTanh,
  kHardSigmoid,  // p0 = alpha, p1 = beta: max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 1 / 2))
  kAbs,
  kNeg,
  kExp,
  kSqrt,
};

struct ActivationParams {
  float p0 = 0.0f, p1 = 0.0f;
};

// out[i] = f(in[i]) for i in [0, n); in and out may be the same pointer.
void activation(Activation kind, ActivationParams params, const float* in, float* out, size_t n);

}  // namespace loom::neon
