// Matrix-vector product with constant weights: the classifier of a batch-1 network
// (Gemm/MatMul of a [1, K] row by a [K, N] constant).
//
// oneDNN 2.6's matmul (brgemm) computes it in 39 us for MobileNetV2's 1280x1000 classifier when
// the 5 MB of weights are in cache, but 190-230 us inside the network, where they come from
// memory: its blocked weight layout is read in a pattern the hardware prefetchers follow
// poorly. Here each thread streams one contiguous range of weights, packed so that every
// 64-byte line feeds one 16-wide multiply-add (docs/onednn-device.md, item 13).
#pragma once

#include <cstdint>

namespace loom::onednn {

// Outputs per packed block: one AVX-512 vector, two AVX2 vectors.
inline constexpr int64_t kMatvecBlock = 16;

// Floats of the packed form of a [K, N] matrix: ceil(N/16) blocks of [K][16].
int64_t matvec_packed_size(int64_t k, int64_t n);
// Packs the [K, N] matrix b (row-major; [N, K] when `transposed`) into `packed`
// (matvec_packed_size floats; columns past N are zero): block j, row k holds b[k][16j..16j+15].
void pack_matvec_weights(const float* b, int64_t k, int64_t n, bool transposed, float* packed);

// The vector kernels matvec() picks from: the widest this CPU runs.
enum class MatvecKernel { kAvx512, kAvx2, kGeneric };
bool matvec_kernel_runs_here(MatvecKernel kernel);

// y[n] = alpha * sum_k x[k] * b[k][n] + bias[n] (bias may be null), with `packed` from
// pack_matvec_weights. Splits the blocks over the OpenMP threads of the calling thread.
void matvec(const float* x, const float* packed, const float* bias, float alpha, float* y,
            int64_t k, int64_t n);
// The same on the calling thread alone, for kernels that call it from their own threads
// (lstm_cells.cpp: a recurrence step's product is too small to split).
void matvec_serial(const float* x, const float* packed, const float* bias, float alpha, float* y,
                   int64_t k, int64_t n);
// Same with a given kernel (one that runs here), for tests.
void matvec(const float* x, const float* packed, const float* bias, float alpha, float* y,
            int64_t k, int64_t n, MatvecKernel kernel);

}  // namespace loom::onednn
