#include "softmax_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <loom/vector_math.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::onednn {

#if defined(__x86_64__)
LOOM_AVX512_WARNINGS_OFF
namespace {

// One row in three passes: the max; exp(x - max) and its sum (softmax stores the exps); then
// the scale by 1/sum, or (x - max) - log(sum). The last partial vector goes through masks.
// With `masked_rows`, a row whose maximum is -inf becomes 0 (otherwise -inf - -inf gives NaN).
__attribute__((target("avx512f"))) void row_avx512(const float* in, float* out, int64_t len,
                                                   bool log, bool masked_rows = false) {
  const int64_t full = len / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (len - full)) - 1u);
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < full; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(in + j));
  if (tail) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_maskz_loadu_ps(tail, in + full));
  const float row_max = _mm512_reduce_max_ps(vmax);
  if (masked_rows && row_max == -std::numeric_limits<float>::infinity()) {
    std::fill(out, out + len, 0.f);
    return;
  }
  const __m512 m = _mm512_set1_ps(row_max);

  __m512 vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < full; j += 16) {
    __m512 e = sdk::exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(in + j), m));
    if (!log) _mm512_storeu_ps(out + j, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (tail) {
    __m512 e = sdk::exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, in + full), m));
    if (!log) _mm512_mask_storeu_ps(out + full, tail, e);
    vsum = _mm512_mask_add_ps(vsum, tail, vsum, e);
  }
  const float sum = _mm512_reduce_add_ps(vsum);

  if (log) {
    const __m512 log_sum = _mm512_set1_ps(std::log(sum));
    // (x - max) - log(sum), not x - (max + log(sum)): the latter cancels digits for large x.
    for (int64_t j = 0; j < full; j += 16)
      _mm512_storeu_ps(out + j, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(in + j), m), log_sum));
    if (tail)
      _mm512_mask_storeu_ps(
          out + full, tail,
          _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, in + full), m), log_sum));
    return;
  }
  const __m512 scale = _mm512_set1_ps(1.f / sum);
  for (int64_t j = 0; j < full; j += 16)
    _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_loadu_ps(out + j), scale));
  if (tail)
    _mm512_mask_storeu_ps(out + full, tail,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, out + full), scale));
}

}  // namespace
LOOM_AVX512_WARNINGS_ON

bool softmax_rows_available() {
  return __builtin_cpu_supports("avx512f");
}

void softmax_rows(const float* x, float* y, int64_t rows, int64_t len, bool log) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) row_avx512(x + r * len, y + r * len, len, log);
}

#else

bool softmax_rows_available() {
  return false;
}

void softmax_rows(const float*, float*, int64_t, int64_t, bool) {}

#endif

void softmax_row_inplace(float* row, int64_t len) {
  if (len <= 0) return;
#if defined(__x86_64__)
  static const bool vector = softmax_rows_available();
  if (vector) return row_avx512(row, row, len, false, true);
#endif
  float m = -std::numeric_limits<float>::infinity();
  // A NaN propagates through the sum below: max() ignores it here, as the vector kernel's does.
  for (int64_t j = 0; j < len; ++j) m = std::max(m, row[j]);
  if (m == -std::numeric_limits<float>::infinity()) {
    std::fill(row, row + len, 0.f);
    return;
  }
  float sum = 0;
  for (int64_t j = 0; j < len; ++j) sum += row[j] = std::exp(row[j] - m);
  const float inv = 1.f / sum;
  for (int64_t j = 0; j < len; ++j) row[j] *= inv;
}

}  // namespace loom::onednn
