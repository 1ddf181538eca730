// Runs a whole packed GEMM on the device's threads: packs the run-time operand panel by panel
// in parallel, then computes the C tiles in parallel (tiles ordered so one thread walks the
// row panels of one B panel while it is hot in cache).
//
// The element type of the packed panels picks the arithmetic: float for the fp32 kernels,
// uint16_t (binary16 bits) for the ARMv8.2 FP16 kernels (precision=f16, checked at device
// creation). PackedWeights holds a constant operand packed once at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/gemm.hpp"
#include "ops/op.hpp"

namespace loom::neon {

// Uninitialised scratch (no zeroing: every element is written before it is read).
template <typename T = float>
std::unique_ptr<T[]> scratch(size_t n) {
  return std::unique_ptr<T[]>(new T[n ? n : 1]);
}
inline std::unique_ptr<float[]> scratch_floats(size_t n) {
  return scratch<float>(n);
}

// Packs like pack_a / pack_b into panels of T (float, or uint16_t for fp16).
template <typename T>
void pack_a_as(const float* a, size_t rs, size_t cs, size_t m, size_t k, T* packed,
               size_t panel_begin, size_t panel_end);
template <typename T>
void pack_b_as(const float* b, size_t rs, size_t cs, size_t k, size_t n, T* packed,
               size_t panel_begin, size_t panel_end);

// C[m, n] = packed_a * B (+ row_bias), B(k, j) = b[k * b_rs + j * b_cs].
template <typename T>
void gemm_with_packed_a(const Runtime& rt, size_t m, size_t n, size_t k, const T* packed_a,
                        const float* b, size_t b_rs, size_t b_cs, const float* row_bias, float* c,
                        size_t ldc);
// C[m, plane] = packed_a (fp32) * B (+ row_bias) with B the k channels of one NC4HW4 image
// and C written into another (m channels, padding lanes zero): a 1x1 convolution in NC4HW4.
void gemm_with_packed_a_pack4_b(const Runtime& rt, size_t m, size_t plane, size_t k,
                                const float* packed_a, const float* b_pack4, const float* row_bias,
                                float* c_pack4);
// C[m, n] = A * packed_b, A(i, kk) = a[i * a_rs + kk * a_cs].
template <typename T>
void gemm_with_packed_b(const Runtime& rt, size_t m, size_t n, size_t k, const float* a,
                        size_t a_rs, size_t a_cs, const T* packed_b, float* c, size_t ldc);

// A constant GEMM operand packed at compile time, fp32 or fp16.
struct PackedWeights {
  bool half = false;
  std::vector<float> f32;
  std::vector<uint16_t> f16;
};

}  // namespace loom::neon
