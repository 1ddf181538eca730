#include "kernels/pool_pack4.hpp"

#include <arm_neon.h>

#include <limits>

namespace loom::neon {
namespace {

// Taps [t_lo, t_hi) of output index o whose input position lies in [0, in).
void valid_taps(int64_t o, int64_t s, int64_t d, int64_t k, int64_t pad, int64_t in, int64_t& lo,
                int64_t& hi) {
  lo = 0;
  hi = k;
  while (lo < k && o * s + lo * d - pad < 0) ++lo;
  while (hi > lo && o * s + (hi - 1) * d - pad >= in) --hi;
}

// Taps counted by count_include_pad: those inside the explicitly padded extent.
int64_t padded_taps(int64_t o, int64_t s, int64_t d, int64_t k, int64_t pad_begin, int64_t pad_end,
                    int64_t in) {
  int64_t n = 0;
  for (int64_t t = 0; t < k; ++t) {
    const int64_t pos = o * s + t * d - pad_begin;
    n += pos >= -pad_begin && pos < in + pad_end;
  }
  return n;
}

template <bool kMax>
void pool_block(const float* in, float* out, const Window2d& g, bool count_include_pad) {
  const float32x4_t init = vdupq_n_f32(kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    int64_t y_lo, y_hi;
    valid_taps(oy, g.sh, g.dh, g.kh, g.pt, g.ih, y_lo, y_hi);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      int64_t x_lo, x_hi;
      valid_taps(ox, g.sw, g.dw, g.kw, g.pl, g.iw, x_lo, x_hi);
      float32x4_t acc = init;
      for (int64_t ky = y_lo; ky < y_hi; ++ky) {
        const float* row = in + (oy * g.sh + ky * g.dh - g.pt) * g.iw * 4;
        for (int64_t kx = x_lo; kx < x_hi; ++kx) {
          const float32x4_t v = vld1q_f32(row + (ox * g.sw + kx * g.dw - g.pl) * 4);
          acc = kMax ? vmaxq_f32(acc, v) : vaddq_f32(acc, v);
        }
      }
      if constexpr (!kMax) {
        const int64_t count = count_include_pad
                                  ? padded_taps(oy, g.sh, g.dh, g.kh, g.pt, g.pb, g.ih) *
                                        padded_taps(ox, g.sw, g.dw, g.kw, g.pl, g.pr, g.iw)
                                  : (y_hi - y_lo) * (x_hi - x_lo);
        // An empty window (possible with ceil_mode) averages to 0 / 0, as in the NCHW kernel.
        acc = vdivq_f32(acc, vdupq_n_f32(static_cast<float>(count)));
      }
      vst1q_f32(out + (oy * g.ow + ox) * 4, acc);
    }
  }
}

}  // namespace

void max_pool_pack4_block(const float* in, float* out, const Window2d& g) {
  pool_block<true>(in, out, g, false);
}

void average_pool_pack4_block(const float* in, float* out, const Window2d& g,
                              bool count_include_pad) {
  pool_block<false>(in, out, g, count_include_pad);
}

void global_pool_pack4_block(const float* in, size_t plane, bool max, float* out) {
  if (max) {
    float32x4_t acc = vdupq_n_f32(-std::numeric_limits<float>::infinity());
    for (size_t i = 0; i < plane; ++i) acc = vmaxq_f32(acc, vld1q_f32(in + i * 4));
    vst1q_f32(out, acc);
    return;
  }
  // Two accumulators halve the dependency chain of the adds.
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
  size_t i = 0;
  for (; i + 2 <= plane; i += 2) {
    a0 = vaddq_f32(a0, vld1q_f32(in + i * 4));
    a1 = vaddq_f32(a1, vld1q_f32(in + i * 4 + 4));
  }
  if (i < plane) a0 = vaddq_f32(a0, vld1q_f32(in + i * 4));
  vst1q_f32(out, vdivq_f32(vaddq_f32(a0, a1), vdupq_n_f32(static_cast<float>(plane))));
}

}  // namespace loom::neon
