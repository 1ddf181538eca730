#include "max_pool_int8.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <loom/vector_math.hpp>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace loom::onednn {
namespace {

// The input rows and columns output row `oy` / column `ox` reads (inside the input only).
struct Window {
  int64_t first, count, step;
};
Window window(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t dilation,
              int64_t extent) {
  int64_t first = o * stride - pad, count = 0, start = -1;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t i = first + k * dilation;
    if (i < 0 || i >= extent) continue;
    if (start < 0) start = i;
    ++count;
  }
  return {start, count, dilation};
}

// One output row of image `image` (channels-last) into `out`, one output pixel at a time: the
// maximum over the window of each channel, accumulated in registers a vector of channels at a
// time.
template <bool Signed>
void pool_row_portable(const MaxPoolInt8Shape& s, const uint8_t* image, const Window& rows,
                       uint8_t* out) {
  using T = std::conditional_t<Signed, int8_t, uint8_t>;
  const int64_t c = s.channels;
  for (int64_t ox = 0; ox < s.out_width; ++ox) {
    const Window cols = window(ox, s.stride_w, s.pad_left, s.kernel_w, s.dilation_w, s.width);
    T* o = reinterpret_cast<T*>(out + ox * c);
    std::fill_n(o, c, std::numeric_limits<T>::lowest());
    for (int64_t y = 0; y < rows.count; ++y)
      for (int64_t x = 0; x < cols.count; ++x) {
        const T* p = reinterpret_cast<const T*>(
            image + ((rows.first + y * rows.step) * s.width + cols.first + x * cols.step) * c);
        for (int64_t ch = 0; ch < c; ++ch) o[ch] = std::max(o[ch], p[ch]);
      }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
LOOM_AVX512_WARNINGS_OFF
template <bool Signed>
__attribute__((target("avx512bw"))) void pool_row_avx512(const MaxPoolInt8Shape& s,
                                                         const uint8_t* image, const Window& rows,
                                                         uint8_t* out) {
  const int64_t c = s.channels;
  const __m512i lowest = _mm512_set1_epi8(Signed ? -128 : 0);
  for (int64_t ox = 0; ox < s.out_width; ++ox) {
    const Window cols = window(ox, s.stride_w, s.pad_left, s.kernel_w, s.dilation_w, s.width);
    for (int64_t c0 = 0; c0 < c; c0 += 64) {
      const __mmask64 m = c - c0 >= 64 ? ~__mmask64{0} : (__mmask64{1} << (c - c0)) - 1;
      __m512i acc = lowest;
      for (int64_t y = 0; y < rows.count; ++y) {
        const uint8_t* row = image + (rows.first + y * rows.step) * s.width * c + c0;
        for (int64_t x = 0; x < cols.count; ++x) {
          const __m512i v = _mm512_maskz_loadu_epi8(m, row + (cols.first + x * cols.step) * c);
          acc = Signed ? _mm512_max_epi8(acc, v) : _mm512_max_epu8(acc, v);
        }
      }
      _mm512_mask_storeu_epi8(out + ox * c + c0, m, acc);
    }
  }
}
LOOM_AVX512_WARNINGS_ON
#endif

using PoolRow = void (*)(const MaxPoolInt8Shape&, const uint8_t*, const Window&, uint8_t*);

PoolRow pool_row(bool is_signed) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512bw"))
    return is_signed ? &pool_row_avx512<true> : &pool_row_avx512<false>;
#endif
  return is_signed ? &pool_row_portable<true> : &pool_row_portable<false>;
}

}  // namespace

void max_pool_int8(const MaxPoolInt8Shape& s, const void* src, void* dst) {
  const PoolRow row_of = pool_row(s.is_signed);
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t rows = s.batch * s.out_height;
  // A team only where there is work for it: waking it costs more than a small pool.
  const bool team = rows * s.out_width * s.channels * s.kernel_h * s.kernel_w >= (int64_t{1} << 18);
#pragma omp parallel for schedule(static) if (team)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / s.out_height, oy = r % s.out_height;
    const Window window_rows =
        window(oy, s.stride_h, s.pad_top, s.kernel_h, s.dilation_h, s.height);
    row_of(s, in + n * s.height * s.width * s.channels, window_rows,
           out + r * s.out_width * s.channels);
  }
}

}  // namespace loom::onednn
