#include "matvec.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::onednn {

int64_t matvec_packed_size(int64_t k, int64_t n) {
  return (n + kMatvecBlock - 1) / kMatvecBlock * k * kMatvecBlock;
}

void pack_matvec_weights(const float* b, int64_t k, int64_t n, bool transposed, float* packed) {
  std::fill(packed, packed + matvec_packed_size(k, n), 0.f);
  for (int64_t col = 0; col < n; ++col) {
    float* dst = packed + (col / kMatvecBlock) * k * kMatvecBlock + col % kMatvecBlock;
    for (int64_t row = 0; row < k; ++row)
      dst[row * kMatvecBlock] = transposed ? b[col * k + row] : b[row * n + col];
  }
}

namespace {

// One block: out[0..16) = sum_k x[k] * w[k][0..16). Four partial sums hide the latency of
// the multiply-adds; the kernels differ only in vector width.
using BlockKernel = void (*)(const float* x, const float* w, int64_t k, float* out);

void block_generic(const float* x, const float* w, int64_t k, float* out) {
  float acc[kMatvecBlock] = {};
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j = 0; j < kMatvecBlock; ++j) acc[j] += x[r] * w[r * kMatvecBlock + j];
  std::copy(acc, acc + kMatvecBlock, out);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void block_avx512(const float* x, const float* w, int64_t k,
                                                     float* out) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t r = 0;
  for (; r + 4 <= k; r += 4, w += 4 * kMatvecBlock) {
    a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[r]), _mm512_loadu_ps(w), a0);
    a1 = _mm512_fmadd_ps(_mm512_set1_ps(x[r + 1]), _mm512_loadu_ps(w + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_set1_ps(x[r + 2]), _mm512_loadu_ps(w + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_set1_ps(x[r + 3]), _mm512_loadu_ps(w + 48), a3);
  }
  for (; r < k; ++r, w += kMatvecBlock)
    a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[r]), _mm512_loadu_ps(w), a0);
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2,fma"))) void block_avx2(const float* x, const float* w, int64_t k,
                                                    float* out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t r = 0;
  for (; r + 2 <= k; r += 2, w += 2 * kMatvecBlock) {
    __m256 x0 = _mm256_set1_ps(x[r]), x1 = _mm256_set1_ps(x[r + 1]);
    a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w), a0);
    a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + 8), a1);
    a2 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + 16), a2);
    a3 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + 24), a3);
  }
  for (; r < k; ++r, w += kMatvecBlock) {
    __m256 x0 = _mm256_set1_ps(x[r]);
    a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w), a0);
    a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + 8), a1);
  }
  _mm256_storeu_ps(out, _mm256_add_ps(a0, a2));
  _mm256_storeu_ps(out + 8, _mm256_add_ps(a1, a3));
}
#endif

BlockKernel block_kernel(MatvecKernel kernel) {
  switch (kernel) {
#if defined(__x86_64__)
    case MatvecKernel::kAvx512:
      return block_avx512;
    case MatvecKernel::kAvx2:
      return block_avx2;
#endif
    default:
      return block_generic;
  }
}

// Block j of y = alpha * x packed + bias.
inline void one_block(BlockKernel kernel, const float* x, const float* packed, const float* bias,
                      float alpha, float* y, int64_t k, int64_t n, int64_t j) {
  float out[kMatvecBlock];
  kernel(x, packed + j * k * kMatvecBlock, k, out);
  const int64_t first = j * kMatvecBlock, count = std::min(kMatvecBlock, n - first);
  for (int64_t c = 0; c < count; ++c)
    y[first + c] = alpha * out[c] + (bias ? bias[first + c] : 0.f);
}

MatvecKernel best_kernel() {
  for (MatvecKernel k : {MatvecKernel::kAvx512, MatvecKernel::kAvx2})
    if (matvec_kernel_runs_here(k)) return k;
  return MatvecKernel::kGeneric;
}

}  // namespace

bool matvec_kernel_runs_here(MatvecKernel kernel) {
  switch (kernel) {
#if defined(__x86_64__)
    case MatvecKernel::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case MatvecKernel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    case MatvecKernel::kGeneric:
      return true;
    default:
      return false;
  }
}

void matvec(const float* x, const float* packed, const float* bias, float alpha, float* y,
            int64_t k, int64_t n) {
  static const MatvecKernel kBest = best_kernel();
  matvec(x, packed, bias, alpha, y, k, n, kBest);
}

void matvec(const float* x, const float* packed, const float* bias, float alpha, float* y,
            int64_t k, int64_t n, MatvecKernel which) {
  const BlockKernel kernel = block_kernel(which);
  int64_t blocks = (n + kMatvecBlock - 1) / kMatvecBlock;
  // Contiguous ranges of blocks per thread: each streams one run of memory.
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < blocks; ++j) one_block(kernel, x, packed, bias, alpha, y, k, n, j);
}

void matvec_serial(const float* x, const float* packed, const float* bias, float alpha, float* y,
                   int64_t k, int64_t n) {
  static const BlockKernel kernel = block_kernel(best_kernel());
  const int64_t blocks = (n + kMatvecBlock - 1) / kMatvecBlock;
  for (int64_t j = 0; j < blocks; ++j) one_block(kernel, x, packed, bias, alpha, y, k, n, j);
}

}  // namespace loom::onednn
