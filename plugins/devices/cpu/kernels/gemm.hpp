// A reusable, dependency-free dense matrix multiply for the cpu device (Gemm, MatMul, Conv,
// ConvTranspose, and other kernels such as RNNs or Einsum):
//
//   C = alpha * op(A) * op(B) + beta * C      op(A): M x K, op(B): K x N, C: M x N
//
// Row-major with leading dimensions (element strides between rows):
//   op(A)[i][k] = trans_a ? A[k * lda + i] : A[i * lda + k]
//   op(B)[k][j] = trans_b ? B[j * ldb + k] : B[k * ldb + j]
//   C[i][j]     = C[i * ldc + j]
// When beta == 0, C is only written, never read (it may hold garbage or NaN).
//
// The routine is cache-blocked with packed panels and a register-tile micro-kernel written in
// plain C++ that the compiler vectorises (see gemm_blocked.cpp). Work is split over threads
// through a ParallelFor callback, so callers need not have a KernelContext.
#pragma once

#include <cstddef>
#include <functional>

namespace loom::cpu {

class KernelContext;

// Splits [0, n) into chunks of at least `grain` items, runs fn(begin, end) for each chunk
// (possibly concurrently) and returns when all are done. fn does not throw.
using ParallelFor =
    std::function<void(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn)>;

// A ParallelFor that forwards to the kernel context's thread pool. The context must outlive
// the returned callback.
ParallelFor parallel_for_of(const KernelContext& ctx);

// `parallel` may be empty: everything then runs on the calling thread.
void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float* a,
          size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc,
          const ParallelFor& parallel = {});
void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, double alpha, const double* a,
          size_t lda, const double* b, size_t ldb, double beta, double* c, size_t ldc,
          const ParallelFor& parallel = {});

// Below this many columns (n) gemm() computes floats as dot products of A's rows with op(B)'s
// columns, which it reads fastest with B transposed (each column contiguous): callers with a
// choice of layout (Conv's patches) give B transposed then. It depends on the CPU.
size_t gemm_dot_columns();

}  // namespace loom::cpu
