// Compiled for ARMv8.2 FP16 (see gemm_fp16.hpp: callers check the CPU first).
#pragma GCC target("arch=armv8.2-a+fp16")

#include "kernels/gemm_fp16.hpp"

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

namespace loom::neon {
namespace {

inline uint16_t to_half_bits(float v) {
  const float16x4_t h = vcvt_f16_f32(vdupq_n_f32(v));
  return vget_lane_u16(vreinterpret_u16_f16(h), 0);
}

}  // namespace

void pack_a_f16(const float* a, size_t row_stride, size_t col_stride, size_t m, size_t k,
                uint16_t* packed, size_t panel_begin, size_t panel_end) {
  for (size_t p = panel_begin; p < panel_end; ++p) {
    uint16_t* out = packed + p * kGemmMR * k;
    const size_t row0 = p * kGemmMR;
    const size_t rows = std::min(kGemmMR, m - row0);
    for (size_t kk = 0; kk < k; ++kk) {
      size_t r = 0;
      for (; r < rows; ++r) out[r] = to_half_bits(a[(row0 + r) * row_stride + kk * col_stride]);
      for (; r < kGemmMR; ++r) out[r] = 0;
      out += kGemmMR;
    }
  }
}

void pack_b_f16(const float* b, size_t row_stride, size_t col_stride, size_t k, size_t n,
                uint16_t* packed, size_t panel_begin, size_t panel_end) {
  for (size_t p = panel_begin; p < panel_end; ++p) {
    uint16_t* out = packed + p * kGemmNR * k;
    const size_t col0 = p * kGemmNR;
    const size_t cols = std::min(kGemmNR, n - col0);
    if (col_stride == 1 && cols == kGemmNR) {
      const float* src = b + col0;
      for (size_t kk = 0; kk < k; ++kk) {
        const float16x8_t h =
            vcombine_f16(vcvt_f16_f32(vld1q_f32(src)), vcvt_f16_f32(vld1q_f32(src + 4)));
        vst1q_u16(out, vreinterpretq_u16_f16(h));
        src += row_stride;
        out += kGemmNR;
      }
      continue;
    }
    for (size_t kk = 0; kk < k; ++kk) {
      size_t c = 0;
      for (; c < cols; ++c) out[c] = to_half_bits(b[kk * row_stride + (col0 + c) * col_stride]);
      for (; c < kGemmNR; ++c) out[c] = 0;
      out += kGemmNR;
    }
  }
}

namespace {

// Adds the fp16 row accumulator to the row's two fp32 accumulators and clears it.
inline void flush(float16x8_t& h, float32x4_t& lo, float32x4_t& hi) {
  lo = vaddq_f32(lo, vcvt_f32_f16(vget_low_f16(h)));
  hi = vaddq_f32(hi, vcvt_high_f32_f16(h));
  h = vdupq_n_f16(0);
}

void micro_kernel_f16_8x8(size_t k, const uint16_t* a16, const uint16_t* b16, const float* bias,
                          float* c, size_t ldc) {
  const auto* a = reinterpret_cast<const float16_t*>(a16);
  const auto* b = reinterpret_cast<const float16_t*>(b16);
  float32x4_t lo[kGemmMR], hi[kGemmMR];
  for (size_t r = 0; r < kGemmMR; ++r) lo[r] = hi[r] = vdupq_n_f32(bias ? bias[r] : 0.0f);
  float16x8_t h0 = vdupq_n_f16(0), h1 = h0, h2 = h0, h3 = h0, h4 = h0, h5 = h0, h6 = h0, h7 = h0;
  for (size_t k0 = 0; k0 < k; k0 += kGemmF16Block) {
    const size_t k1 = std::min(k, k0 + kGemmF16Block);
    for (size_t kk = k0; kk < k1; ++kk) {
      const float16x8_t av = vld1q_f16(a + kk * kGemmMR);
      const float16x8_t bv = vld1q_f16(b + kk * kGemmNR);
      h0 = vfmaq_laneq_f16(h0, bv, av, 0);
      h1 = vfmaq_laneq_f16(h1, bv, av, 1);
      h2 = vfmaq_laneq_f16(h2, bv, av, 2);
      h3 = vfmaq_laneq_f16(h3, bv, av, 3);
      h4 = vfmaq_laneq_f16(h4, bv, av, 4);
      h5 = vfmaq_laneq_f16(h5, bv, av, 5);
      h6 = vfmaq_laneq_f16(h6, bv, av, 6);
      h7 = vfmaq_laneq_f16(h7, bv, av, 7);
    }
    flush(h0, lo[0], hi[0]);
    flush(h1, lo[1], hi[1]);
    flush(h2, lo[2], hi[2]);
    flush(h3, lo[3], hi[3]);
    flush(h4, lo[4], hi[4]);
    flush(h5, lo[5], hi[5]);
    flush(h6, lo[6], hi[6]);
    flush(h7, lo[7], hi[7]);
  }
  for (size_t r = 0; r < kGemmMR; ++r) {
    vst1q_f32(c + r * ldc, lo[r]);
    vst1q_f32(c + r * ldc + 4, hi[r]);
  }
}

}  // namespace

void gemm_tile_f16(size_t m, size_t n, size_t k, const uint16_t* packed_a, const uint16_t* packed_b,
                   const float* row_bias, float* c, size_t ldc, size_t mp, size_t np) {
  const size_t row0 = mp * kGemmMR, col0 = np * kGemmNR;
  const size_t rows = std::min(kGemmMR, m - row0), cols = std::min(kGemmNR, n - col0);
  const uint16_t* a = packed_a + mp * kGemmMR * k;
  const uint16_t* b = packed_b + np * kGemmNR * k;
  float bias[kGemmMR] = {};
  if (row_bias) std::copy(row_bias + row0, row_bias + row0 + rows, bias);
  float* out = c + row0 * ldc + col0;
  if (rows == kGemmMR && cols == kGemmNR) {
    micro_kernel_f16_8x8(k, a, b, row_bias ? bias : nullptr, out, ldc);
    return;
  }
  alignas(16) float tile[kGemmMR * kGemmNR];
  micro_kernel_f16_8x8(k, a, b, row_bias ? bias : nullptr, tile, kGemmNR);
  for (size_t r = 0; r < rows; ++r)
    std::memcpy(out + r * ldc, tile + r * kGemmNR, cols * sizeof(float));
}

}  // namespace loom::neon
