// The packed GEMM in half precision, for CPUs with ARMv8.2 FP16 arithmetic (precision=f16):
// the same panel layout as kernels/gemm.hpp with 16-bit elements, so one q-register holds a
// whole 8-wide panel row and the 8x8 tile needs half the FMAs. Products accumulate in fp16
// for kGemmF16Block steps of k and are then added to fp32 accumulators, which bounds the
// rounding error of long dot products (K in the thousands) to that of 64-term fp16 sums.
// Only call these after cpu_features().fp16_arithmetic: the file is compiled for
// armv8.2-a+fp16 and would fault on an older core.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm.hpp"

namespace loom::neon {

inline constexpr size_t kGemmF16Block = 64;

// Packs like pack_a / pack_b, converting to fp16 (IEEE binary16 bits).
void pack_a_f16(const float* a, size_t row_stride, size_t col_stride, size_t m, size_t k,
                uint16_t* packed, size_t panel_begin, size_t panel_end);
void pack_b_f16(const float* b, size_t row_stride, size_t col_stride, size_t k, size_t n,
                uint16_t* packed, size_t panel_begin, size_t panel_end);
// C tile (mp, np) = A * B (+ row_bias) in fp32, from fp16 panels.
void gemm_tile_f16(size_t m, size_t n, size_t k, const uint16_t* packed_a, const uint16_t* packed_b,
                   const float* row_bias, float* c, size_t ldc, size_t mp, size_t np);

}  // namespace loom::neon
