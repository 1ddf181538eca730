// The blocked GEMM behind gemm.hpp. Classic three-level blocking (Goto/BLIS):
//   - op(B) is packed per (KC x NC) block into NR-wide column panels,
//   - op(A) is packed per (MC x KC) block into MR-tall row panels (alpha folded in),
//   - a micro-kernel multiplies one MR x KC panel by one KC x NR panel into an MR x NR
//     register tile, which the compiler keeps in vector registers and vectorises along NR.
// Packing makes the micro-kernel read contiguous memory whatever the transposes and strides
// are, and zero-pads partial panels so the micro-kernel never branches on edges.
//
// The micro-kernel is plain C++. On x86-64 a second copy is compiled for AVX2+FMA and picked
// at run time, because the baseline ABI (SSE2) leaves most of a modern core unused; every other
// target gets the portable copy, tuned for 128-bit vectors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <loom/vector_math.hpp>
#include <memory>
#include <type_traits>
#include <vector>

#include "../kernel.hpp"
#include "gemm.hpp"

namespace loom::cpu {

ParallelFor parallel_for_of(const KernelContext& ctx) {
  return [&ctx](size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
    ctx.parallel_for(n, grain, fn);
  };
}

namespace {

#if defined(__GNUC__)
#define LOOM_GEMM_INLINE inline __attribute__((always_inline))
#else
#define LOOM_GEMM_INLINE inline
#endif

// C tile (MR x NR at c, row stride ldc) = acc + beta * C tile; beta == 0 does not read C.
template <typename T, size_t MR, size_t NR, bool Fma>
LOOM_GEMM_INLINE void micro_kernel_body(size_t kc, const T* __restrict ap, const T* __restrict bp,
                                        T* __restrict c, size_t ldc, T beta) {
  T acc[MR][NR] = {};
  for (size_t p = 0; p < kc; ++p) {
#pragma GCC unroll 16
    for (size_t i = 0; i < MR; ++i) {
      const T a = ap[i];
#pragma GCC unroll 32
      for (size_t j = 0; j < NR; ++j) {
        if constexpr (Fma)
          acc[i][j] = std::fma(a, bp[j], acc[i][j]);
        else
          acc[i][j] += a * bp[j];
      }
    }
    ap += MR;
    bp += NR;
  }
  if (beta == T(0)) {
    for (size_t i = 0; i < MR; ++i)
      for (size_t j = 0; j < NR; ++j) c[i * ldc + j] = acc[i][j];
  } else {
    for (size_t i = 0; i < MR; ++i)
      for (size_t j = 0; j < NR; ++j) c[i * ldc + j] = acc[i][j] + beta * c[i * ldc + j];
  }
}

template <typename T>
using MicroKernel = void (*)(size_t kc, const T* ap, const T* bp, T* c, size_t ldc, T beta);

// Portable register tiles: 12 accumulators of a 128-bit vector unit (SSE2, NEON).
constexpr size_t kPortableMR = 6;
template <typename T>
constexpr size_t kPortableNR = 16 / sizeof(T) * 2;

template <typename T>
void micro_portable(size_t kc, const T* ap, const T* bp, T* c, size_t ldc, T beta) {
  micro_kernel_body<T, kPortableMR, kPortableNR<T>, false>(kc, ap, bp, c, ldc, beta);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_GEMM_HAVE_AVX2 1
// 6 x (2 x 256-bit) accumulators: 12 of the 16 ymm registers, the rest hold B and a broadcast.
constexpr size_t kAvx2MR = 6;
template <typename T>
constexpr size_t kAvx2NR = 32 / sizeof(T) * 2;

template <typename T>
__attribute__((target("avx2,fma"))) void micro_avx2(size_t kc, const T* ap, const T* bp, T* c,
                                                    size_t ldc, T beta) {
  micro_kernel_body<T, kAvx2MR, kAvx2NR<T>, true>(kc, ap, bp, c, ldc, beta);
}

bool cpu_has_avx2_fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
#endif

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of alpha*op(A) into MR-tall panels: panel r holds
// element (i0 + r*MR + i, p0 + p) at [r*MR*kc + p*MR + i]; rows past mc are zero.
template <typename T, size_t MR>
void pack_a(bool trans, const T* a, size_t lda, size_t i0, size_t mc, size_t p0, size_t kc, T alpha,
            T* out) {
  for (size_t r = 0; r < mc; r += MR) {
    const size_t rows = std::min(MR, mc - r);
    T* panel = out + r * kc;
    if (trans) {  // op(A) rows are columns of A: each k step reads `rows` contiguous values
      for (size_t p = 0; p < kc; ++p) {
        const T* src = a + (p0 + p) * lda + i0 + r;
        T* dst = panel + p * MR;
        for (size_t i = 0; i < rows; ++i) dst[i] = alpha * src[i];
        for (size_t i = rows; i < MR; ++i) dst[i] = T(0);
      }
    } else {  // read each row of A contiguously, scatter it with stride MR into the panel
      for (size_t i = 0; i < rows; ++i) {
        const T* src = a + (i0 + r + i) * lda + p0;
        for (size_t p = 0; p < kc; ++p) panel[p * MR + i] = alpha * src[p];
      }
      for (size_t i = rows; i < MR; ++i)
        for (size_t p = 0; p < kc; ++p) panel[p * MR + i] = T(0);
    }
  }
}

// Packs rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) into NR-wide panels: panel s holds element
// (p0 + p, j0 + s*NR + j) at [s*NR*kc + p*NR + j]; columns past nc are zero.
template <typename T, size_t NR>
void pack_b(bool trans, const T* b, size_t ldb, size_t p0, size_t kc, size_t j0, size_t nc,
            T* out) {
  for (size_t s = 0; s < nc; s += NR) {
    const size_t cols = std::min(NR, nc - s);
    T* panel = out + s * kc;
    for (size_t p = 0; p < kc; ++p) {
      T* dst = panel + p * NR;
      const size_t row = p0 + p;
      if (!trans && cols == NR) {
        std::memcpy(dst, b + row * ldb + j0 + s, NR * sizeof(T));
        continue;
      }
      for (size_t j = 0; j < cols; ++j) {
        const size_t col = j0 + s + j;
        dst[j] = trans ? b[col * ldb + row] : b[row * ldb + col];
      }
      for (size_t j = cols; j < NR; ++j) dst[j] = T(0);
    }
  }
}

// Dot products of one contiguous vector x with `count` contiguous rows (row j at rows + j*ldr):
//   out[j * ostride] = alpha * x.row_j + beta * out[j * ostride]   (beta 0: out is not read).
// Four rows at a time share each load of x, and each row keeps its own split accumulators, so
// the compiler turns the lanes into vector multiply-adds without reassociating one running sum.
// Floats accumulate in double: this is the reference device, and a float sum of a few thousand
// products that cancel (a classifier's logit) drifts by more than the tolerance the other
// devices are held to against it. Products of two floats are exact in double.
template <typename T, bool Fma>
LOOM_GEMM_INLINE void dots_body(const T* __restrict x, const T* __restrict rows, size_t ldr,
                                size_t count, size_t k, T alpha, T beta, T* __restrict out,
                                size_t ostride) {
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  constexpr size_t kRows = 4;
  constexpr size_t kLanes = 64 / sizeof(Acc);  // one 512-bit or two 256-bit vectors per row
  auto store = [&](size_t j, Acc sum) {
    T& dst = out[j * ostride];
    const T v = alpha * T(sum);
    dst = beta == T(0) ? v : v + beta * dst;
  };
  size_t j = 0;
  for (; j + kRows <= count; j += kRows) {
    const T* r = rows + j * ldr;
    Acc lanes[kRows][kLanes] = {};
    size_t p = 0;
    for (; p + kLanes <= k; p += kLanes) {
      Acc xv[kLanes];
#pragma GCC unroll 16
      for (size_t l = 0; l < kLanes; ++l) xv[l] = Acc(x[p + l]);
#pragma GCC unroll 4
      for (size_t i = 0; i < kRows; ++i) {
#pragma GCC unroll 16
        for (size_t l = 0; l < kLanes; ++l) {
          const Acc rv = Acc(r[i * ldr + p + l]);
          if constexpr (Fma)
            lanes[i][l] = std::fma(xv[l], rv, lanes[i][l]);
          else
            lanes[i][l] += xv[l] * rv;
        }
      }
    }
    for (size_t i = 0; i < kRows; ++i) {
      Acc sum = Acc(0);
      for (size_t q = p; q < k; ++q) sum += Acc(x[q]) * Acc(r[i * ldr + q]);
      for (size_t l = 0; l < kLanes; ++l) sum += lanes[i][l];
      store(j + i, sum);
    }
  }
  for (; j < count; ++j) {
    const T* r = rows + j * ldr;
    Acc lanes[kLanes] = {};
    size_t p = 0;
    for (; p + kLanes <= k; p += kLanes) {
#pragma GCC unroll 16
      for (size_t l = 0; l < kLanes; ++l) {
        if constexpr (Fma)
          lanes[l] = std::fma(Acc(x[p + l]), Acc(r[p + l]), lanes[l]);
        else
          lanes[l] += Acc(x[p + l]) * Acc(r[p + l]);
      }
    }
    Acc sum = Acc(0);
    for (; p < k; ++p) sum += Acc(x[p]) * Acc(r[p]);
    for (size_t l = 0; l < kLanes; ++l) sum += lanes[l];
    store(j, sum);
  }
}

template <typename T>
using DotsKernel = void (*)(const T* x, const T* rows, size_t ldr, size_t count, size_t k, T alpha,
                            T beta, T* out, size_t ostride);

template <typename T>
void dots_portable(const T* x, const T* rows, size_t ldr, size_t count, size_t k, T alpha, T beta,
                   T* out, size_t ostride) {
  dots_body<T, false>(x, rows, ldr, count, k, alpha, beta, out, ostride);
}

#ifdef LOOM_GEMM_HAVE_AVX2
template <typename T>
__attribute__((target("avx2,fma"))) void dots_avx2(const T* x, const T* rows, size_t ldr,
                                                   size_t count, size_t k, T alpha, T beta, T* out,
                                                   size_t ostride) {
  dots_body<T, true>(x, rows, ldr, count, k, alpha, beta, out, ostride);
}

// AVX-512, floats: written with intrinsics because the compiler's vectorisation of the plain
// body above is fragile (a small change to it turned it scalar). Converting every element to
// double bounds the loop by the conversions, so products accumulate in float lanes for at most
// four steps (sixteen lanes, 64 elements), and each block's lanes are then added in double: a
// lane's float sum has four terms, far from the thousands-long chains that drifted. Four rows
// share each load of x; the tail of k is a masked load (masked-off elements are not read).
LOOM_AVX512_WARNINGS_OFF

// The sixteen float lanes of `block` added into the eight double lanes of `sum`.
__attribute__((target("avx512f"), always_inline)) inline __m512d flush(__m512 block, __m512d sum) {
  sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm512_castps512_ps256(block)));
  return _mm512_add_pd(
      sum, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(block), 1))));
}

__attribute__((target("avx512f"), always_inline)) inline __m256d halves(__m512d v) {
  return _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
}

// The four rows' lane sums at once: halves added, then horizontal pairs across rows, so the
// short dot products of a recurrent cell do not wait on four separate reduction chains.
__attribute__((target("avx512f"), always_inline)) inline void reduce4(__m512d s0, __m512d s1,
                                                                      __m512d s2, __m512d s3,
                                                                      double* sums) {
  const __m256d h01 = _mm256_hadd_pd(halves(s0), halves(s1));  // s0 s1 pairs interleaved
  const __m256d h23 = _mm256_hadd_pd(halves(s2), halves(s3));
  _mm_storeu_pd(sums, _mm_add_pd(_mm256_castpd256_pd128(h01), _mm256_extractf128_pd(h01, 1)));
  _mm_storeu_pd(sums + 2, _mm_add_pd(_mm256_castpd256_pd128(h23), _mm256_extractf128_pd(h23, 1)));
}

__attribute__((target("avx512f"))) void dots_avx512_f32(const float* x, const float* rows,
                                                        size_t ldr, size_t count, size_t k,
                                                        float alpha, float beta, float* out,
                                                        size_t ostride) {
  constexpr size_t kBlock = 64;
  const size_t body = k / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (k - body)) - 1);
  auto store = [&](size_t j, double sum) {
    float& dst = out[j * ostride];
    const float v = alpha * static_cast<float>(sum);
    dst = beta == 0.f ? v : v + beta * dst;
  };
  size_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const float* r0 = rows + j * ldr;
    const float *r1 = r0 + ldr, *r2 = r1 + ldr, *r3 = r2 + ldr;
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t p0 = 0; p0 < body; p0 += kBlock) {
      const size_t p1 = std::min(body, p0 + kBlock);
      // Two accumulators a row (even and odd steps): eight independent chains keep both FMA
      // units busy through the multiply-add latency.
      __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0, b3 = b0;
      __m512 c0 = b0, c1 = b0, c2 = b0, c3 = b0;
      size_t p = p0;
      for (; p + 32 <= p1; p += 32) {
        const __m512 xv = _mm512_loadu_ps(x + p), xw = _mm512_loadu_ps(x + p + 16);
        b0 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r0 + p), b0);
        b1 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r1 + p), b1);
        b2 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r2 + p), b2);
        b3 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r3 + p), b3);
        c0 = _mm512_fmadd_ps(xw, _mm512_loadu_ps(r0 + p + 16), c0);
        c1 = _mm512_fmadd_ps(xw, _mm512_loadu_ps(r1 + p + 16), c1);
        c2 = _mm512_fmadd_ps(xw, _mm512_loadu_ps(r2 + p + 16), c2);
        c3 = _mm512_fmadd_ps(xw, _mm512_loadu_ps(r3 + p + 16), c3);
      }
      if (p < p1) {
        const __m512 xv = _mm512_loadu_ps(x + p);
        b0 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r0 + p), b0);
        b1 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r1 + p), b1);
        b2 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r2 + p), b2);
        b3 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r3 + p), b3);
      }
      s0 = flush(_mm512_add_ps(b0, c0), s0), s1 = flush(_mm512_add_ps(b1, c1), s1);
      s2 = flush(_mm512_add_ps(b2, c2), s2), s3 = flush(_mm512_add_ps(b3, c3), s3);
    }
    if (tail) {
      const __m512 xv = _mm512_maskz_loadu_ps(tail, x + body);
      s0 = flush(_mm512_mul_ps(xv, _mm512_maskz_loadu_ps(tail, r0 + body)), s0);
      s1 = flush(_mm512_mul_ps(xv, _mm512_maskz_loadu_ps(tail, r1 + body)), s1);
      s2 = flush(_mm512_mul_ps(xv, _mm512_maskz_loadu_ps(tail, r2 + body)), s2);
      s3 = flush(_mm512_mul_ps(xv, _mm512_maskz_loadu_ps(tail, r3 + body)), s3);
    }
    double sums[4];
    reduce4(s0, s1, s2, s3, sums);
    for (size_t i = 0; i < 4; ++i) store(j + i, sums[i]);
  }
  for (; j < count; ++j) {
    const float* r = rows + j * ldr;
    __m512d s = _mm512_setzero_pd();
    for (size_t p0 = 0; p0 < body; p0 += kBlock) {
      const size_t p1 = std::min(body, p0 + kBlock);
      __m512 blk = _mm512_setzero_ps();
      for (size_t p = p0; p < p1; p += 16)
        blk = _mm512_fmadd_ps(_mm512_loadu_ps(x + p), _mm512_loadu_ps(r + p), blk);
      s = flush(blk, s);
    }
    if (tail)
      s = flush(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + body),
                              _mm512_maskz_loadu_ps(tail, r + body)),
                s);
    store(j, _mm512_reduce_add_pd(s));
  }
}

LOOM_AVX512_WARNINGS_ON

bool cpu_has_avx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
  }();
  return has;
}
#endif

template <typename T>
DotsKernel<T> dots_kernel() {
#ifdef LOOM_GEMM_HAVE_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (cpu_has_avx512()) return &dots_avx512_f32;
  if (cpu_has_avx2_fma()) return &dots_avx2<T>;
#endif
  return &dots_portable<T>;
}

// Below this many multiply-adds a task costs less than waking a worker for it.
constexpr size_t kMinTaskMacs = size_t{1} << 17;

// Items per task for `per_item` multiply-adds each.
size_t task_grain(size_t per_item) {
  return std::max<size_t>(1, kMinTaskMacs / std::max<size_t>(1, per_item));
}

// out[j * ostride] for j in [0, count) as dots of x with rows, split into tasks.
template <typename T>
void dots_split(const T* x, const T* rows, size_t ldr, size_t count, size_t k, T alpha, T beta,
                T* out, size_t ostride, const ParallelFor& parallel) {
  const DotsKernel<T> dots = dots_kernel<T>();
  auto run = [&](size_t begin, size_t end) {
    dots(x, rows + begin * ldr, ldr, end - begin, k, alpha, beta, out + begin * ostride, ostride);
  };
  const size_t grain = task_grain(k);
  if (parallel && count > grain)
    parallel(count, grain, run);
  else
    run(0, count);
}

// Cache block sizes: an A block (MC x KC) stays in L2, a B panel (KC x NR) in L1.
constexpr size_t kKC = 256;
constexpr size_t kMC = 96;  // a multiple of every MR above
constexpr size_t kNC = 1024;

struct Problem {
  bool trans_a, trans_b;
  size_t m, n, k;
};

// All of alpha*op(A) packed once, block (p0 / kKC, i0 / kMC) at its own kKC x kMC slot, for
// tasks that split N: each would otherwise pack the whole of A again for its few columns (a
// convolution's weights, once per 16 output positions).
template <typename T, size_t MR>
std::unique_ptr<T[]> pack_all_a(const Problem& pr, const T* a, size_t lda, T alpha) {
  const size_t i_blocks = (pr.m + kMC - 1) / kMC;
  const size_t p_blocks = (pr.k + kKC - 1) / kKC;
  std::unique_ptr<T[]> packed(new T[p_blocks * i_blocks * kKC * kMC]);
  for (size_t pb = 0; pb < p_blocks; ++pb)
    for (size_t ib = 0; ib < i_blocks; ++ib) {
      const size_t p0 = pb * kKC, i0 = ib * kMC;
      pack_a<T, MR>(pr.trans_a, a, lda, i0, std::min(kMC, pr.m - i0), p0, std::min(kKC, pr.k - p0),
                    alpha, packed.get() + (pb * i_blocks + ib) * kKC * kMC);
    }
  return packed;
}

// Computes the C block rows [i_begin, i_end) x cols [j_begin, j_end) over the whole K.
// `a_packed`: A as pack_all_a left it (then i_begin is 0), or null to pack here.
template <typename T, size_t MR, size_t NR>
void gemm_block(const Problem& pr, T alpha, const T* a, size_t lda, const T* b, size_t ldb, T beta,
                T* c, size_t ldc, size_t i_begin, size_t i_end, size_t j_begin, size_t j_end,
                MicroKernel<T> micro, const T* a_packed) {
  const size_t nc_max = std::min(kNC, (j_end - j_begin + NR - 1) / NR * NR);
  const size_t kc_max = std::min(kKC, pr.k);
  const size_t i_blocks = (pr.m + kMC - 1) / kMC;
  std::unique_ptr<T[]> b_pack(new T[kc_max * nc_max]);
  std::unique_ptr<T[]> a_pack(a_packed ? nullptr : new T[kc_max * kMC]);
  T tile[MR * NR];
  for (size_t j0 = j_begin; j0 < j_end; j0 += kNC) {
    const size_t nc = std::min(kNC, j_end - j0);
    for (size_t p0 = 0; p0 < pr.k; p0 += kKC) {
      const size_t kc = std::min(kKC, pr.k - p0);
      const T block_beta = p0 == 0 ? beta : T(1);
      pack_b<T, NR>(pr.trans_b, b, ldb, p0, kc, j0, nc, b_pack.get());
      for (size_t i0 = i_begin; i0 < i_end; i0 += kMC) {
        const size_t mc = std::min(kMC, i_end - i0);
        const T* a_block =
            a_packed ? a_packed + ((p0 / kKC) * i_blocks + i0 / kMC) * kKC * kMC : a_pack.get();
        if (!a_packed) pack_a<T, MR>(pr.trans_a, a, lda, i0, mc, p0, kc, alpha, a_pack.get());
        for (size_t s = 0; s < nc; s += NR) {
          const size_t cols = std::min(NR, nc - s);
          const T* bp = b_pack.get() + s * kc;
          for (size_t r = 0; r < mc; r += MR) {
            const size_t rows = std::min(MR, mc - r);
            const T* ap = a_block + r * kc;
            T* cp = c + (i0 + r) * ldc + j0 + s;
            if (rows == MR && cols == NR) {
              micro(kc, ap, bp, cp, ldc, block_beta);
              continue;
            }
            // Edge tile: compute into a scratch tile, then merge the valid part.
            micro(kc, ap, bp, tile, NR, T(0));
            for (size_t i = 0; i < rows; ++i)
              for (size_t j = 0; j < cols; ++j) {
                T& dst = cp[i * ldc + j];
                dst = block_beta == T(0) ? tile[i * NR + j] : tile[i * NR + j] + block_beta * dst;
              }
          }
        }
      }
    }
  }
}

// Matrix-vector shapes (one row or one column of C) do not benefit from packing: they are
// bound by reading A or B once.
template <typename T>
void gemm_thin(const Problem& pr, T alpha, const T* a, size_t lda, const T* b, size_t ldb, T beta,
               T* c, size_t ldc, const ParallelFor& parallel) {
  auto opa = [&](size_t i, size_t p) { return pr.trans_a ? a[p * lda + i] : a[i * lda + p]; };
  auto opb = [&](size_t p, size_t j) { return pr.trans_b ? b[j * ldb + p] : b[p * ldb + j]; };
  auto finish = [&](T& dst, T sum) { dst = beta == T(0) ? alpha * sum : alpha * sum + beta * dst; };
  if (pr.m == 1 && !pr.trans_b) {
    // c[j] = sum_p a[p] * B[p][j]: stream B row by row, vectorised over j.
    auto run = [&](size_t j_begin, size_t j_end) {
      std::vector<T> acc(j_end - j_begin, T(0));
      for (size_t p = 0; p < pr.k; ++p) {
        const T av = opa(0, p);
        const T* brow = b + p * ldb;
        for (size_t j = j_begin; j < j_end; ++j) acc[j - j_begin] += av * brow[j];
      }
      for (size_t j = j_begin; j < j_end; ++j) finish(c[j], acc[j - j_begin]);
    };
    if (parallel)
      parallel(pr.n, 256, run);
    else
      run(0, pr.n);
    return;
  }
  // One dot product per output element. The vector (op(A)'s row or op(B)'s column) and the
  // other operand's rows are contiguous in the common layouts: dots of the vector with them.
  if (pr.m == 1 && pr.trans_b && (!pr.trans_a || lda == 1))
    return dots_split<T>(a, b, ldb, pr.n, pr.k, alpha, beta, c, 1, parallel);
  if (pr.n == 1 && !pr.trans_a && (pr.trans_b || ldb == 1))
    return dots_split<T>(b, a, lda, pr.m, pr.k, alpha, beta, c, ldc, parallel);
  auto run = [&](size_t begin, size_t end) {
    for (size_t idx = begin; idx < end; ++idx) {
      const size_t i = pr.m == 1 ? 0 : idx, j = pr.m == 1 ? idx : 0;
      T sum = T(0);
      for (size_t p = 0; p < pr.k; ++p) sum += opa(i, p) * opb(p, j);
      finish(c[i * ldc + j], sum);
    }
  };
  const size_t count = pr.m == 1 ? pr.n : pr.m;
  if (parallel)
    parallel(count, task_grain(pr.k), run);
  else
    run(0, count);
}

template <typename T, size_t MR, size_t NR>
void gemm_blocked(const Problem& pr, T alpha, const T* a, size_t lda, const T* b, size_t ldb,
                  T beta, T* c, size_t ldc, const ParallelFor& parallel, MicroKernel<T> micro) {
  // Split the larger of M and N into independent tasks; each task packs its own panels.
  // Tasks are whole multiples of the register tile so only true edges take the edge path.
  const bool split_n = pr.n >= pr.m;
  const size_t extent = split_n ? pr.n : pr.m;
  const size_t unit = split_n ? NR : MR;
  const size_t units = (extent + unit - 1) / unit;
  // Enough work per task to amortise packing: about 64K multiply-adds at least.
  const size_t other = split_n ? pr.m : pr.n;
  const size_t per_unit = std::max<size_t>(1, unit * other * pr.k);
  const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / per_unit);
  const bool tasks = parallel && units > grain;
  // Tasks over N share one packing of A (read-only); a single task packs as it goes.
  std::unique_ptr<T[]> a_packed;
  if (tasks && split_n) a_packed = pack_all_a<T, MR>(pr, a, lda, alpha);
  auto run = [&](size_t u_begin, size_t u_end) {
    const size_t lo = u_begin * unit, hi = std::min(extent, u_end * unit);
    if (split_n)
      gemm_block<T, MR, NR>(pr, alpha, a, lda, b, ldb, beta, c, ldc, 0, pr.m, lo, hi, micro,
                            a_packed.get());
    else
      gemm_block<T, MR, NR>(pr, alpha, a, lda, b, ldb, beta, c, ldc, lo, hi, 0, pr.n, micro,
                            nullptr);
  };
  if (tasks)
    parallel(units, grain, run);
  else
    run(0, units);
}

// Few columns of C (a strided 1-D convolution's handful of output positions, against hundreds
// of filters) or few rows (a recurrent cell's batch against its gate weights): packing and
// padding the micro-kernel's register tile would cost more than the product. Each C element is
// one dot product of a row of A with a column of op(B), that is a row of op(B)^T (copied
// contiguous when B is not transposed: n * k values).
constexpr size_t kDotMaxN = 8;
constexpr size_t kDotMaxM = 4;

template <typename T>
void gemm_dots(const Problem& pr, T alpha, const T* a, size_t lda, const T* b, size_t ldb, T beta,
               T* c, size_t ldc, const ParallelFor& parallel) {
  if (pr.trans_b && pr.m <= kDotMaxM) {  // each row of A against every row of B
    for (size_t i = 0; i < pr.m; ++i)
      dots_split<T>(a + i * lda, b, ldb, pr.n, pr.k, alpha, beta, c + i * ldc, 1, parallel);
    return;
  }
  std::vector<T> columns;
  const T* bt = b;
  size_t ldbt = ldb;
  if (!pr.trans_b) {
    columns.resize(pr.n * pr.k);
    for (size_t p = 0; p < pr.k; ++p)
      for (size_t j = 0; j < pr.n; ++j) columns[j * pr.k + p] = b[p * ldb + j];
    bt = columns.data();
    ldbt = pr.k;
  }
  // Each row of A against the few columns (rows of op(B)^T, which stay in L1), the rows split
  // into tasks: A, the large operand, is streamed once.
  const DotsKernel<T> dots = dots_kernel<T>();
  auto run = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      dots(a + i * lda, bt, ldbt, pr.n, pr.k, alpha, beta, c + i * ldc, 1);
  };
  const size_t grain = task_grain(pr.n * pr.k);
  if (parallel && pr.m > grain)
    parallel(pr.m, grain, run);
  else
    run(0, pr.m);
}

template <typename T>
void gemm_any(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, T alpha, const T* a,
              size_t lda, const T* b, size_t ldb, T beta, T* c, size_t ldc,
              const ParallelFor& parallel) {
  if (m == 0 || n == 0) return;
  const Problem pr{trans_a, trans_b, m, n, k};
  if (k == 0 || alpha == T(0)) {
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j) {
        T& dst = c[i * ldc + j];
        dst = beta == T(0) ? T(0) : beta * dst;
      }
    return;
  }
  if (m == 1 || n == 1) return gemm_thin<T>(pr, alpha, a, lda, b, ldb, beta, c, ldc, parallel);
  if (!trans_a && (n < kDotMaxN || (trans_b && m <= kDotMaxM)))
    return gemm_dots<T>(pr, alpha, a, lda, b, ldb, beta, c, ldc, parallel);
#ifdef LOOM_GEMM_HAVE_AVX2
  if (cpu_has_avx2_fma())
    return gemm_blocked<T, kAvx2MR, kAvx2NR<T>>(pr, alpha, a, lda, b, ldb, beta, c, ldc, parallel,
                                                &micro_avx2<T>);
#endif
  gemm_blocked<T, kPortableMR, kPortableNR<T>>(pr, alpha, a, lda, b, ldb, beta, c, ldc, parallel,
                                               &micro_portable<T>);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float* a,
          size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc,
          const ParallelFor& parallel) {
  gemm_any<float>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, parallel);
}

void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, double alpha, const double* a,
          size_t lda, const double* b, size_t ldb, double beta, double* c, size_t ldc,
          const ParallelFor& parallel) {
  gemm_any<double>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, parallel);
}

}  // namespace loom::cpu
