// Packed single-precision GEMM for NEON: C[M, N] = A[M, K] * B[K, N] (+ a bias per row).
//
// Both operands are packed into panels so the micro-kernel streams them contiguously: A into
// panels of kGemmMR rows (for each k, MR consecutive values), B into panels of kGemmNR columns
// (for each k, NR consecutive values); edges are zero-padded. The 8 x 8 micro-kernel keeps the
// C tile in 16 q-registers and does one vfmaq_laneq per row and half-panel per k. Constant
// operands (conv and Gemm weights) are packed once at compile time; activations at run time.
// Strided packing reads transposed operands (Gemm transA/transB) without a copy.
#pragma once

#include <cstddef>

namespace loom::neon {

inline constexpr size_t kGemmMR = 8;
inline constexpr size_t kGemmNR = 8;

inline size_t gemm_panels(size_t extent, size_t panel) {
  return (extent + panel - 1) / panel;
}
// Floats of the packed A (M x K) and packed B (K x N).
inline size_t packed_a_floats(size_t m, size_t k) {
  return gemm_panels(m, kGemmMR) * kGemmMR * k;
}
inline size_t packed_b_floats(size_t k, size_t n) {
  return gemm_panels(n, kGemmNR) * kGemmNR * k;
}

// A(i, k) = a[i * row_stride + k * col_stride]; packs rows into panels [panel_begin, panel_end).
void pack_a(const float* a, size_t row_stride, size_t col_stride, size_t m, size_t k, float* packed,
            size_t panel_begin, size_t panel_end);
// B(k, j) = b[k * row_stride + j * col_stride]; packs columns into panels [panel_begin, panel_end).
void pack_b(const float* b, size_t row_stride, size_t col_stride, size_t k, size_t n, float* packed,
            size_t panel_begin, size_t panel_end);

// B(k, j) = channel k, pixel j of one NC4HW4 image ([ceil(k/4)][plane][4]): the 1x1 conv
// operand read from the packed layout (vld4q de-interleaves 4 pixels of a channel block).
void pack_b_pack4(const float* b, size_t k, size_t plane, float* packed, size_t panel_begin,
                  size_t panel_end);

// Computes the C tile of row panel `mp` and column panel `np`: C = A * B (+ row_bias[i] when
// row_bias is not null). ldc: row stride of C.
void gemm_tile(size_t m, size_t n, size_t k, const float* packed_a, const float* packed_b,
               const float* row_bias, float* c, size_t ldc, size_t mp, size_t np);

// gemm_tile writing C (M channels x N pixels) into one NC4HW4 image at c ([ceil(M/4)][N][4]),
// the padding lanes of the last block included (zero).
void gemm_tile_pack4(size_t m, size_t n, size_t k, const float* packed_a, const float* packed_b,
                     const float* row_bias, float* c, size_t mp, size_t np);

}  // namespace loom::neon
