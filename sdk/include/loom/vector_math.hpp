// AVX-512 vector math that CPU devices share (onednn: softmax_rows.cpp, lstm_cells.cpp; cpu:
// gemm_blocked.cpp's dot products, the recurrent cells): x86-64 with AVX-512F only; callers
// check the CPU before they run these.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

// GCC 12's avx512fintrin.h gives max, roundscale, scalef and reduce an "undefined" operand
// initialized from itself, which -Wuninitialized reports once they are inlined: code using
// them sits between these two.
#if defined(__clang__)
#define LOOM_AVX512_WARNINGS_OFF \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#else
#define LOOM_AVX512_WARNINGS_OFF                                                       \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#endif
#define LOOM_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")

LOOM_AVX512_WARNINGS_OFF

namespace loom::sdk {

// Whether this CPU runs the functions below (checked once).
inline bool cpu_has_avx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
  }();
  return has;
}

// exp(x) for x <= 0 (x - max): x = n ln2 + r with |r| <= ln2/2, exp(r) by its degree-6 Taylor
// polynomial (relative error 1.2e-7), times 2^n by scalef, which rounds to denormals and to 0
// like expf. Below -104 the result is 0 (exp(-104) is under half the smallest denormal).
// max(-104, x) keeps a NaN: the second operand is returned when either is NaN.
__attribute__((target("avx512f"))) inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.f), x);
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

// sigmoid(x) = 1 / (1 + e^-x), from e = exp(-|x|) so that no exponent overflows: 1 / (1 + e)
// for x >= 0, e / (1 + e) below. A NaN stays NaN.
__attribute__((target("avx512f"))) inline __m512 sigmoid_ps(__m512 x) {
  const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x)));
  const __m512 denominator = _mm512_add_ps(_mm512_set1_ps(1.f), e);
  const __mmask16 positive = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  return _mm512_div_ps(_mm512_mask_blend_ps(positive, e, _mm512_set1_ps(1.f)), denominator);
}

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|). A NaN stays NaN.
__attribute__((target("avx512f"))) inline __m512 tanh_ps(__m512 x) {
  const __m512 e = exp_nonpositive(_mm512_mul_ps(_mm512_set1_ps(-2.f), _mm512_abs_ps(x)));
  const __m512 t =
      _mm512_div_ps(_mm512_sub_ps(_mm512_set1_ps(1.f), e), _mm512_add_ps(_mm512_set1_ps(1.f), e));
  const __m512i sign = _mm512_and_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  return _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(t), sign));
}

}  // namespace loom::sdk

LOOM_AVX512_WARNINGS_ON
#endif
