#include "quantize_image.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::onednn {
namespace {

// Below this many pixels one thread does the whole image (waking the team costs more).
constexpr int64_t kParallelPixels = 1 << 13;

// One element, as the vector loop computes it: an IEEE division (never a reciprocal), NaN as 0,
// clamped to +-1024 (saturates as the unclamped value would) and rounded half to even, plus the
// zero point, saturated to the type.
inline int32_t quantize_one(float x, float scale, int32_t zero, int32_t lo, int32_t hi) {
  float v = x / scale;
  if (std::isnan(v)) v = 0.f;
  v = std::min(std::max(v, -1024.f), 1024.f);
  return std::clamp(static_cast<int32_t>(std::nearbyint(v)) + zero, lo, hi);
}

// Pixels [begin, end) of one image: planes x, x + pixels, x + 2 * pixels -> q interleaved.
[[maybe_unused]] void quantize_scalar(const float* x, uint8_t* q, int64_t pixels, int64_t begin,
                                      int64_t end, float scale, int32_t zero, int32_t lo,
                                      int32_t hi) {
  for (int64_t p = begin; p < end; ++p)
    for (int64_t c = 0; c < 3; ++c)
      q[3 * p + c] = static_cast<uint8_t>(quantize_one(x[c * pixels + p], scale, zero, lo, hi));
}

using Kernel = void (*)(const float* x, uint8_t* q, int64_t pixels, int64_t begin, int64_t end,
                        float scale, int32_t zero, int32_t lo, int32_t hi);

#if defined(__x86_64__)
// pshufb masks that interleave three 16-byte channel vectors a, b, c into the 48 bytes
// a0 b0 c0 a1 b1 c1 ...: kMasks[k][s] picks output vector k's bytes from source s (0x80: none).
struct Masks {
  alignas(16) uint8_t m[3][3][16];
  Masks() {
    for (int k = 0; k < 3; ++k)
      for (int s = 0; s < 3; ++s)
        for (int j = 0; j < 16; ++j) {
          const int g = 16 * k + j;
          m[k][s][j] = g % 3 == s ? static_cast<uint8_t>(g / 3) : 0x80;
        }
  }
};
const Masks kMasks;

// avx512fintrin.h gives min, max and the conversions an "undefined" operand initialized from
// itself, which -Wuninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f,avx512bw"))) void quantize_avx512(const float* x, uint8_t* q,
                                                                 int64_t pixels, int64_t begin,
                                                                 int64_t end, float scale,
                                                                 int32_t zero, int32_t lo,
                                                                 int32_t hi) {
  const __m512 vs = _mm512_set1_ps(scale), fl = _mm512_set1_ps(-1024.f),
               fh = _mm512_set1_ps(1024.f);
  const __m512i vz = _mm512_set1_epi32(zero), vl = _mm512_set1_epi32(lo),
                vh = _mm512_set1_epi32(hi);
  __m128i mask[3][3];
  for (int k = 0; k < 3; ++k)
    for (int s = 0; s < 3; ++s)
      mask[k][s] = _mm_load_si128(reinterpret_cast<const __m128i*>(kMasks.m[k][s]));
  int64_t p = begin;
  for (; p + 16 <= end; p += 16) {
    __m128i ch[3];
    for (int c = 0; c < 3; ++c) {
      __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + c * pixels + p), vs);
      v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0
      v = _mm512_min_ps(_mm512_max_ps(v, fl), fh);
      __m512i r = _mm512_add_epi32(
          _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
      r = _mm512_min_epi32(_mm512_max_epi32(r, vl), vh);
      ch[c] = _mm512_cvtepi32_epi8(r);  // in range: the low byte is the value
    }
    for (int k = 0; k < 3; ++k) {
      const __m128i out = _mm_or_si128(
          _mm_or_si128(_mm_shuffle_epi8(ch[0], mask[k][0]), _mm_shuffle_epi8(ch[1], mask[k][1])),
          _mm_shuffle_epi8(ch[2], mask[k][2]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 3 * p + 16 * k), out);
    }
  }
  quantize_scalar(x, q, pixels, p, end, scale, zero, lo, hi);
}
#pragma GCC diagnostic pop
#endif

Kernel pick_kernel() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return quantize_avx512;
#endif
  return nullptr;
}

const Kernel kKernel = pick_kernel();

}  // namespace

bool quantize_image_supported(int64_t channels) {
  return channels == 3 && kKernel != nullptr;
}

void quantize_image(const float* x, void* q, int64_t images, int64_t pixels, float scale,
                    int32_t zero, bool is_signed) {
  const int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  auto* out = static_cast<uint8_t*>(q);
  const bool parallel = pixels >= kParallelPixels && omp_get_max_threads() > 1;
  for (int64_t n = 0; n < images; ++n) {
    const float* xn = x + n * 3 * pixels;
    uint8_t* qn = out + n * 3 * pixels;
    if (!parallel) {
      kKernel(xn, qn, pixels, 0, pixels, scale, zero, lo, hi);
      continue;
    }
#pragma omp parallel
    {
      // Slices of whole 16-pixel blocks, one per thread.
      const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t per = (pixels / threads + 15) / 16 * 16;
      const int64_t begin = std::min(pixels, t * per), end = std::min(pixels, begin + per);
      if (end > begin) kKernel(xn, qn, pixels, begin, end, scale, zero, lo, hi);
    }
  }
}

}  // namespace loom::onednn
