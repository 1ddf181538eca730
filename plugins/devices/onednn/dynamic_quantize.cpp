#include "dynamic_quantize.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::onednn {
namespace {

// Below this many elements one thread does the whole tensor: waking the OpenMP team costs more
// than the two passes (a BERT-base [32, 768] activation takes ~5 us on one AVX-512 core).
constexpr int64_t kParallelElements = 1 << 15;

// The quantization is exact integer-valued float arithmetic in every variant: x / scale (an
// IEEE division, never a reciprocal multiply), clamped to +-1024 (saturates like the unclamped
// value would), rounded half to even by adding and subtracting 1.5 * 2^23 (exact for |v| < 2^22
// in the default rounding mode) instead of a libm call per element, plus the zero point, then
// clamped to [0, 255]. So the vector widths give the same bytes as the scalar loop.
constexpr float kMagic = 12582912.f;  // 1.5 * 2^23

inline uint8_t quantize_one(float x, float scale, float z) {
  float v = std::min(std::max(x / scale, -1024.f), 1024.f);
  v = (v + kMagic) - kMagic + z;
  return static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(v, 0.f), 255.f)));
}

using QuantizeRange = void (*)(const float* xs, int64_t count, uint8_t* q, float scale, float z);

// The range [min(0, x), max(0, x)] of a slice with NaN skipped (as the cpu device, which counts
// a NaN as 0 there, and 0 is in the range anyway), and whether it holds a NaN.
struct Range {
  float lo = 0.f, hi = 0.f;
  bool nan = false;
};
using FindRange = Range (*)(const float* xs, int64_t count);

Range range_scalar(const float* xs, int64_t count) {
  float lo = 0.f, hi = 0.f;
  int64_t nans = 0;
#pragma omp simd reduction(min : lo) reduction(max : hi) reduction(+ : nans)
  for (int64_t i = 0; i < count; ++i) {
    const float x = xs[i];
    const bool nan = x != x;
    nans += nan;
    lo = std::min(lo, nan ? 0.f : x);
    hi = std::max(hi, nan ? 0.f : x);
  }
  return {lo, hi, nans > 0};
}

void quantize_scalar(const float* xs, int64_t count, uint8_t* q, float scale, float z) {
  for (int64_t i = 0; i < count; ++i) q[i] = quantize_one(xs[i], scale, z);
}

#if defined(__x86_64__)
// SSE2 (every x86-64): GCC at -O2 does not vectorize the scalar loop by itself (5x slower).
void quantize_sse2(const float* xs, int64_t count, uint8_t* q, float scale, float z) {
  const __m128 vs = _mm_set1_ps(scale), lo = _mm_set1_ps(-1024.f), hi = _mm_set1_ps(1024.f),
               mv = _mm_set1_ps(kMagic), zv = _mm_set1_ps(z), zero = _mm_setzero_ps(),
               top = _mm_set1_ps(255.f);
  auto four = [&](const float* p) {
    __m128 v = _mm_min_ps(_mm_max_ps(_mm_div_ps(_mm_loadu_ps(p), vs), lo), hi);
    v = _mm_add_ps(_mm_sub_ps(_mm_add_ps(v, mv), mv), zv);
    return _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(v, zero), top));
  };
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m128i a = _mm_packs_epi32(four(xs + i), four(xs + i + 4));
    __m128i b = _mm_packs_epi32(four(xs + i + 8), four(xs + i + 12));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm_packus_epi16(a, b));
  }
  quantize_scalar(xs + i, count - i, q + i, scale, z);
}

// AVX-512: 16 lanes, the clamped int32 lanes narrowed to bytes by vpmovdb. GCC 12's
// avx512fintrin.h gives min, max and the conversions an "undefined" operand initialized from
// itself, which -Wuninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) void quantize_avx512(const float* xs, int64_t count, uint8_t* q,
                                                        float scale, float z) {
  const __m512 vs = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-1024.f),
               hi = _mm512_set1_ps(1024.f), mv = _mm512_set1_ps(kMagic), zv = _mm512_set1_ps(z),
               zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.f);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(_mm512_loadu_ps(xs + i), vs), lo), hi);
    v = _mm512_add_ps(_mm512_sub_ps(_mm512_add_ps(v, mv), mv), zv);
    v = _mm512_min_ps(_mm512_max_ps(v, zero), top);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i),
                     _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
  }
  quantize_scalar(xs + i, count - i, q + i, scale, z);
}

// Four independent accumulator pairs, so the min/max latency chains overlap (one pair ran at
// a third of the speed). vminps/vmaxps return their second operand when either is NaN, so a NaN
// lane leaves the accumulator as it was; the unordered compare records that one was seen.
__attribute__((target("avx512f"))) Range range_avx512(const float* xs, int64_t count) {
  __m512 lo[4], hi[4];
  for (int k = 0; k < 4; ++k) lo[k] = hi[k] = _mm512_setzero_ps();
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 64 <= count; i += 64) {
    for (int k = 0; k < 4; ++k) {
      const __m512 x = _mm512_loadu_ps(xs + i + 16 * k);
      nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
      lo[k] = _mm512_min_ps(x, lo[k]);
      hi[k] = _mm512_max_ps(x, hi[k]);
    }
  }
  const __m512 l = _mm512_min_ps(_mm512_min_ps(lo[0], lo[1]), _mm512_min_ps(lo[2], lo[3]));
  const __m512 h = _mm512_max_ps(_mm512_max_ps(hi[0], hi[1]), _mm512_max_ps(hi[2], hi[3]));
  Range tail = range_scalar(xs + i, count - i);
  return {std::min(tail.lo, _mm512_reduce_min_ps(l)), std::max(tail.hi, _mm512_reduce_max_ps(h)),
          tail.nan || nan != 0};
}
#pragma GCC diagnostic pop
#endif

QuantizeRange pick_quantize() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return quantize_avx512;
  return quantize_sse2;
#else
  return quantize_scalar;
#endif
}

FindRange pick_range() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return range_avx512;
#endif
  return range_scalar;
}

// fn(begin, end) over contiguous slices of [0, count) of whole 64-byte lines, one per thread of
// the calling thread's OpenMP team (oneDNN's), or over all of it on this thread.
template <typename Fn>
void for_slices(int64_t count, bool parallel, const Fn& fn) {
  if (!parallel) {
    fn(int64_t{0}, count);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = (count / threads + 63) / 64 * 64;
    const int64_t begin = std::min(count, t * per), end = std::min(count, begin + per);
    if (end > begin) fn(begin, end);
  }
}

}  // namespace

void dynamic_quantize(const float* xs, int64_t count, uint8_t* q, float& scale, uint8_t& zero) {
  const bool parallel = count >= kParallelElements && omp_get_max_threads() > 1;
  static const FindRange find_range = pick_range();
  float lo = 0.f, hi = 0.f;
  bool nans = false;
  for_slices(count, parallel, [&](int64_t begin, int64_t end) {
    const Range r = find_range(xs + begin, end - begin);
#pragma omp critical(loom_dynamic_quantize_range)
    {
      lo = std::min(lo, r.lo);
      hi = std::max(hi, r.hi);
      nans = nans || r.nan;
    }
  });
  scale = (hi - lo) / 255.f;
  auto saturate = [](double v) {
    return static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0));
  };
  zero = scale > 0.f ? saturate(0.f - lo / scale) : 0;
  if (!(scale > 0.f) || nans) {  // the rare cases, element by element as the cpu device
    for (int64_t i = 0; i < count; ++i)
      q[i] =
          scale > 0.f ? saturate(static_cast<double>(std::nearbyint(xs[i] / scale)) + zero) : zero;
    return;
  }
  static const QuantizeRange quantize = pick_quantize();
  const float z = static_cast<float>(zero);
  for_slices(count, parallel, [&](int64_t begin, int64_t end) {
    quantize(xs + begin, end - begin, q + begin, scale, z);
  });
}

}  // namespace loom::onednn
