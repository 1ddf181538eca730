#include "kernels/gemm.hpp"

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

namespace loom::neon {

void pack_a(const float* a, size_t row_stride, size_t col_stride, size_t m, size_t k, float* packed,
            size_t panel_begin, size_t panel_end) {
  for (size_t p = panel_begin; p < panel_end; ++p) {
    float* out = packed + p * kGemmMR * k;
    const size_t row0 = p * kGemmMR;
    const size_t rows = std::min(kGemmMR, m - row0);
    for (size_t kk = 0; kk < k; ++kk) {
      size_t r = 0;
      for (; r < rows; ++r) out[r] = a[(row0 + r) * row_stride + kk * col_stride];
      for (; r < kGemmMR; ++r) out[r] = 0.0f;
      out += kGemmMR;
    }
  }
}

void pack_b(const float* b, size_t row_stride, size_t col_stride, size_t k, size_t n, float* packed,
            size_t panel_begin, size_t panel_end) {
  for (size_t p = panel_begin; p < panel_end; ++p) {
    float* out = packed + p * kGemmNR * k;
    const size_t col0 = p * kGemmNR;
    const size_t cols = std::min(kGemmNR, n - col0);
    if (col_stride == 1 && cols == kGemmNR) {
      // The common case (activations in NCHW): two q-register copies per k.
      const float* src = b + col0;
      for (size_t kk = 0; kk < k; ++kk) {
        vst1q_f32(out, vld1q_f32(src));
        vst1q_f32(out + 4, vld1q_f32(src + 4));
        src += row_stride;
        out += kGemmNR;
      }
      continue;
    }
    for (size_t kk = 0; kk < k; ++kk) {
      size_t c = 0;
      for (; c < cols; ++c) out[c] = b[kk * row_stride + (col0 + c) * col_stride];
      for (; c < kGemmNR; ++c) out[c] = 0.0f;
      out += kGemmNR;
    }
  }
}

void pack_b_pack4(const float* b, size_t k, size_t plane, float* packed, size_t panel_begin,
                  size_t panel_end) {
  const size_t blocks = (k + 3) / 4;
  for (size_t p = panel_begin; p < panel_end; ++p) {
    float* out = packed + p * kGemmNR * k;
    const size_t col0 = p * kGemmNR;
    const size_t cols = std::min(kGemmNR, plane - col0);
    for (size_t blk = 0; blk < blocks; ++blk) {
      const float* src = b + (blk * plane + col0) * 4;
      const size_t lanes = std::min<size_t>(4, k - blk * 4);
      float* dst = out + blk * 4 * kGemmNR;
      if (cols == kGemmNR) {
        const float32x4x4_t lo = vld4q_f32(src), hi = vld4q_f32(src + 16);
        for (size_t l = 0; l < lanes; ++l) {
          vst1q_f32(dst + l * kGemmNR, lo.val[l]);
          vst1q_f32(dst + l * kGemmNR + 4, hi.val[l]);
        }
        continue;
      }
      for (size_t l = 0; l < lanes; ++l) {
        size_t c = 0;
        for (; c < cols; ++c) dst[l * kGemmNR + c] = src[c * 4 + l];
        for (; c < kGemmNR; ++c) dst[l * kGemmNR + c] = 0.0f;
      }
    }
  }
}

namespace {

// acc[r][0..1] += A(r, k) * B(k, 0..7) for every k: the 8 x 8 register tile. kPack4: c is
// pixel col0 of the tile's first channel block in an NC4HW4 image and ldc the floats between
// blocks; vst4q interleaves 4 rows into 4 pixels, so the tile is stored packed by 4 stores.
template <bool kPack4>
void micro_kernel_8x8(size_t k, const float* a, const float* b, const float* bias, float* c,
                      size_t ldc) {
  float32x4_t c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;
  if (bias) {
    c00 = c01 = vdupq_n_f32(bias[0]);
    c10 = c11 = vdupq_n_f32(bias[1]);
    c20 = c21 = vdupq_n_f32(bias[2]);
    c30 = c31 = vdupq_n_f32(bias[3]);
    c40 = c41 = vdupq_n_f32(bias[4]);
    c50 = c51 = vdupq_n_f32(bias[5]);
    c60 = c61 = vdupq_n_f32(bias[6]);
    c70 = c71 = vdupq_n_f32(bias[7]);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = vdupq_n_f32(0.0f);
    c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = vdupq_n_f32(0.0f);
  }
  for (size_t kk = 0; kk < k; ++kk) {
    const float32x4_t a0 = vld1q_f32(a);
    const float32x4_t a1 = vld1q_f32(a + 4);
    const float32x4_t b0 = vld1q_f32(b);
    const float32x4_t b1 = vld1q_f32(b + 4);
    c00 = vfmaq_laneq_f32(c00, b0, a0, 0);
    c01 = vfmaq_laneq_f32(c01, b1, a0, 0);
    c10 = vfmaq_laneq_f32(c10, b0, a0, 1);
    c11 = vfmaq_laneq_f32(c11, b1, a0, 1);
    c20 = vfmaq_laneq_f32(c20, b0, a0, 2);
    c21 = vfmaq_laneq_f32(c21, b1, a0, 2);
    c30 = vfmaq_laneq_f32(c30, b0, a0, 3);
    c31 = vfmaq_laneq_f32(c31, b1, a0, 3);
    c40 = vfmaq_laneq_f32(c40, b0, a1, 0);
    c41 = vfmaq_laneq_f32(c41, b1, a1, 0);
    c50 = vfmaq_laneq_f32(c50, b0, a1, 1);
    c51 = vfmaq_laneq_f32(c51, b1, a1, 1);
    c60 = vfmaq_laneq_f32(c60, b0, a1, 2);
    c61 = vfmaq_laneq_f32(c61, b1, a1, 2);
    c70 = vfmaq_laneq_f32(c70, b0, a1, 3);
    c71 = vfmaq_laneq_f32(c71, b1, a1, 3);
    a += kGemmMR;
    b += kGemmNR;
  }
  if constexpr (kPack4) {
    vst4q_f32(c, (float32x4x4_t{{c00, c10, c20, c30}}));
    vst4q_f32(c + 16, (float32x4x4_t{{c01, c11, c21, c31}}));
    vst4q_f32(c + ldc, (float32x4x4_t{{c40, c50, c60, c70}}));
    vst4q_f32(c + ldc + 16, (float32x4x4_t{{c41, c51, c61, c71}}));
    return;
  }
  auto store = [&](size_t r, float32x4_t lo, float32x4_t hi) {
    vst1q_f32(c + r * ldc, lo);
    vst1q_f32(c + r * ldc + 4, hi);
  };
  store(0, c00, c01);
  store(1, c10, c11);
  store(2, c20, c21);
  store(3, c30, c31);
  store(4, c40, c41);
  store(5, c50, c51);
  store(6, c60, c61);
  store(7, c70, c71);
}

}  // namespace

void gemm_tile(size_t m, size_t n, size_t k, const float* packed_a, const float* packed_b,
               const float* row_bias, float* c, size_t ldc, size_t mp, size_t np) {
  const size_t row0 = mp * kGemmMR, col0 = np * kGemmNR;
  const size_t rows = std::min(kGemmMR, m - row0), cols = std::min(kGemmNR, n - col0);
  const float* a = packed_a + mp * kGemmMR * k;
  const float* b = packed_b + np * kGemmNR * k;
  float bias[kGemmMR] = {};
  if (row_bias) std::copy(row_bias + row0, row_bias + row0 + rows, bias);
  float* out = c + row0 * ldc + col0;
  if (rows == kGemmMR && cols == kGemmNR) {
    micro_kernel_8x8<false>(k, a, b, row_bias ? bias : nullptr, out, ldc);
    return;
  }
  // An edge tile: compute the full tile into a scratch and copy the valid part.
  alignas(16) float tile[kGemmMR * kGemmNR];
  micro_kernel_8x8<false>(k, a, b, row_bias ? bias : nullptr, tile, kGemmNR);
  for (size_t r = 0; r < rows; ++r)
    std::memcpy(out + r * ldc, tile + r * kGemmNR, cols * sizeof(float));
}

void gemm_tile_pack4(size_t m, size_t n, size_t k, const float* packed_a, const float* packed_b,
                     const float* row_bias, float* c, size_t mp, size_t np) {
  const size_t row0 = mp * kGemmMR, col0 = np * kGemmNR;
  const size_t rows = std::min(kGemmMR, m - row0), cols = std::min(kGemmNR, n - col0);
  const float* a = packed_a + mp * kGemmMR * k;
  const float* b = packed_b + np * kGemmNR * k;
  float bias[kGemmMR] = {};
  if (row_bias) std::copy(row_bias + row0, row_bias + row0 + rows, bias);
  const size_t block_stride = n * 4;
  float* out = c + (row0 / 4) * block_stride + col0 * 4;
  if (rows == kGemmMR && cols == kGemmNR) {
    micro_kernel_8x8<true>(k, a, b, row_bias ? bias : nullptr, out, block_stride);
    return;
  }
  // An edge tile: rows past m come out zero (zero A rows, zero bias), which is what the
  // padding lanes of the last block must hold; blocks past the last are not written.
  alignas(16) float tile[kGemmMR * kGemmNR];
  micro_kernel_8x8<false>(k, a, b, row_bias ? bias : nullptr, tile, kGemmNR);
  for (size_t blk = 0; blk * 4 < rows; ++blk)
    for (size_t col = 0; col < cols; ++col)
      for (size_t l = 0; l < 4; ++l)
        out[blk * block_stride + col * 4 + l] = tile[(blk * 4 + l) * kGemmNR + col];
}

}  // namespace loom::neon
