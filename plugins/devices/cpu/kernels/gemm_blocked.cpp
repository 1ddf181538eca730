// The blocked GEMM behind gemm.hpp. Classic three-level blocking (Goto/BLIS):
//   - op(B) is packed per (KC x NC) block into NR-wide column panels,
//   - op(A) is packed per (MC x KC) block into MR-tall row panels (alpha folded in),
//   - a micro-kernel multiplies one MR x KC panel by one KC x NR panel into an MR x NR
//     register tile, which the compiler keeps in vector registers and vectorises along NR.
// Packing makes the micro-kernel read contiguous memory whatever the transposes and strides
// are, and zero-pads partial panels so the micro-kernel never branches on edges.
//
// The micro-kernel is plain C++. On x86-64 copies are compiled for AVX-512 and AVX2+FMA and
// picked at run time, because the baseline ABI (SSE2) leaves most of a modern core unused; every
// other target gets the portable copy, tuned for 128-bit vectors. Products with few columns or
// few rows take dot-product tiles instead (gemm_dots below).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <loom/vector_math.hpp>
#include <memory>
#include <type_traits>
#include <utility>
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

// AVX-512: 12 x (2 x 512-bit) accumulators, 24 of the 32 zmm registers.
constexpr size_t kAvx512MR = 12;
template <typename T>
constexpr size_t kAvx512NR = 64 / sizeof(T) * 2;

template <typename T>
__attribute__((target("avx512f"))) void micro_avx512(size_t kc, const T* ap, const T* bp, T* c,
                                                     size_t ldc, T beta) {
  micro_kernel_body<T, kAvx512MR, kAvx512NR<T>, true>(kc, ap, bp, c, ldc, beta);
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

// Dot products of `mx` vectors (x_i = x + i * ldx) with `count` rows:
//   out[i * xo + j * ro] = alpha * x_i.row_j + beta * out[i * xo + j * ro]   (beta 0: not read).
template <typename T>
using DotsKernel = void (*)(const T* x, size_t ldx, size_t mx, const T* rows, size_t ldr,
                            size_t count, size_t k, T alpha, T beta, T* out, size_t xo, size_t ro);

template <typename T, bool Fma>
void dots_each(const T* x, size_t ldx, size_t mx, const T* rows, size_t ldr, size_t count, size_t k,
               T alpha, T beta, T* out, size_t xo, size_t ro) {
  for (size_t i = 0; i < mx; ++i)
    dots_body<T, Fma>(x + i * ldx, rows, ldr, count, k, alpha, beta, out + i * xo, ro);
}

template <typename T>
void dots_portable(const T* x, size_t ldx, size_t mx, const T* rows, size_t ldr, size_t count,
                   size_t k, T alpha, T beta, T* out, size_t xo, size_t ro) {
  dots_each<T, false>(x, ldx, mx, rows, ldr, count, k, alpha, beta, out, xo, ro);
}

#ifdef LOOM_GEMM_HAVE_AVX2
template <typename T>
__attribute__((target("avx2,fma"))) void dots_avx2(const T* x, size_t ldx, size_t mx, const T* rows,
                                                   size_t ldr, size_t count, size_t k, T alpha,
                                                   T beta, T* out, size_t xo, size_t ro) {
  dots_each<T, true>(x, ldx, mx, rows, ldr, count, k, alpha, beta, out, xo, ro);
}

// AVX-512, floats: a register tile of MX vectors by R rows (at most 16 products), written with
// intrinsics because the compiler's vectorisation of the plain body above is fragile (a small
// change to it turned it scalar). Each step loads MX + R vectors for MX * R multiply-adds, so
// few-column products (a strided convolution's positions) and few-row ones (a recurrent cell's
// batch) both reuse every load. Products accumulate in float lanes for at most 64 elements;
// each block's sixteen accumulators are then summed across lanes at once (a transposing tree)
// and added in double: a lane's float sum has four terms, far from the thousands-long chains
// that drifted by more than the other devices' tolerance against the reference.
LOOM_AVX512_WARNINGS_OFF

// Lane t of the result = the sum of v[t]'s sixteen lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512 sum_lanes16(const __m512* v) {
  __m512 b[8], c[4], d[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)  // per 128-bit lane: v2i(0+2), v2i+1(0+2), v2i(1+3), v2i+1(1+3)
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                         _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: the four vectors 4i..4i+3, summed
    const __m512d lo = _mm512_castps_pd(b[2 * i]), hi = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi)));
  }
  constexpr int kEven = 0 | 2 << 2 | 0 << 4 | 2 << 6, kOdd = 1 | 3 << 2 | 1 << 4 | 3 << 6;
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)  // 128-bit lanes paired: (L0+L1, L2+L3) of c[2i], then c[2i+1]
    d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], kEven),
                         _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], kOdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], kEven),
                       _mm512_shuffle_f32x4(d[0], d[1], kOdd));
}

// Lane i * R + j = x_i . row_j (summed in double, rounded to float once), for the rows at
// rowp[0..R).
template <int MX, int R>
__attribute__((target("avx512f"))) __m512 dot_tile(const float* x, size_t ldx,
                                                   const float* const* rowp, size_t k) {
  static_assert(MX * R <= 16);
  constexpr size_t kBlock = 64;
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (size_t p0 = 0; p0 < k; p0 += kBlock) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
    const size_t p1 = std::min(k, p0 + kBlock);
    for (size_t p = p0; p < p1; p += 16) {
      // The tail of k is a masked load: masked-off elements are not read.
      const __mmask16 m =
          p + 16 <= k ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (k - p)) - 1);
      __m512 xv[MX];
#pragma GCC unroll 8
      for (int i = 0; i < MX; ++i) xv[i] = _mm512_maskz_loadu_ps(m, x + i * ldx + p);
#pragma GCC unroll 16
      for (int j = 0; j < R; ++j) {
        const __m512 rv = _mm512_maskz_loadu_ps(m, rowp[j] + p);
#pragma GCC unroll 8
        for (int i = 0; i < MX; ++i) acc[i * R + j] = _mm512_fmadd_ps(xv[i], rv, acc[i * R + j]);
      }
    }
    const __m512 s = sum_lanes16(acc);
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(s)));
    hi = _mm512_add_pd(
        hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1))));
  }
  const __m256 lo_f = _mm512_cvtpd_ps(lo), hi_f = _mm512_cvtpd_ps(hi);
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo_f)),
                                             _mm256_castps_pd(hi_f), 1));
}

// Rows per tile for MX vectors: as many as keep MX * R accumulators within sixteen.
template <int MX>
constexpr int kTileRows = 16 / MX;

template <int MX>
__attribute__((target("avx512f"))) void dots_tiles_avx512(const float* x, size_t ldx,
                                                          const float* rows, size_t ldr,
                                                          size_t count, size_t k, float alpha,
                                                          float beta, float* out, size_t xo,
                                                          size_t ro) {
  constexpr int R = kTileRows<MX>;
  const bool accumulate = beta != 0.f;
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
  for (size_t j0 = 0; j0 < count; j0 += R) {
    // A partial tile repeats the last row; its extra results are dropped.
    const float* rowp[R];
    for (int j = 0; j < R; ++j) rowp[j] = rows + std::min(j0 + j, count - 1) * ldr;
    const __m512 v = _mm512_mul_ps(alpha_v, dot_tile<MX, R>(x, ldx, rowp, k));
    const size_t valid = std::min<size_t>(R, count - j0);
    if (MX == 1 && ro == 1 && valid == R) {  // sixteen contiguous results (a GEMV)
      float* dst = out + j0;
      _mm512_storeu_ps(dst, accumulate ? _mm512_fmadd_ps(beta_v, _mm512_loadu_ps(dst), v) : v);
      continue;
    }
    alignas(64) float vals[16];
    _mm512_store_ps(vals, v);
    for (int i = 0; i < MX; ++i)
      for (size_t j = 0; j < valid; ++j) {
        float& dst = out[i * xo + (j0 + j) * ro];
        dst = accumulate ? vals[i * R + j] + beta * dst : vals[i * R + j];
      }
  }
}

// dots_tiles_avx512<1..8>, indexed by the pass's vector count - 1.
using DotsTiles = void (*)(const float*, size_t, const float*, size_t, size_t, size_t, float, float,
                           float*, size_t, size_t);
template <size_t... I>
constexpr std::array<DotsTiles, sizeof...(I)> dots_tiles(std::index_sequence<I...>) {
  return {&dots_tiles_avx512<static_cast<int>(I) + 1>...};
}
constexpr auto kDotsTiles = dots_tiles(std::make_index_sequence<8>{});

__attribute__((target("avx512f"))) void dots_avx512_f32(const float* x, size_t ldx, size_t mx,
                                                        const float* rows, size_t ldr, size_t count,
                                                        size_t k, float alpha, float beta,
                                                        float* out, size_t xo, size_t ro) {
  // Vectors in passes of at most eight (an eight-by-two tile), each pass over all rows.
  for (size_t i0 = 0; i0 < mx; i0 += 8) {
    const float* xs = x + i0 * ldx;
    float* o = out + i0 * xo;
    kDotsTiles[std::min<size_t>(8, mx - i0) - 1](xs, ldx, rows, ldr, count, k, alpha, beta, o, xo,
                                                 ro);
  }
}

LOOM_AVX512_WARNINGS_ON

#endif

template <typename T>
DotsKernel<T> dots_kernel() {
#ifdef LOOM_GEMM_HAVE_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (sdk::cpu_has_avx512()) return &dots_avx512_f32;
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

// The dots of `mx` vectors with `count` rows (see DotsKernel), the rows split into tasks.
template <typename T>
void dots_split(const T* x, size_t ldx, size_t mx, const T* rows, size_t ldr, size_t count,
                size_t k, T alpha, T beta, T* out, size_t xo, size_t ro,
                const ParallelFor& parallel) {
  const DotsKernel<T> dots = dots_kernel<T>();
  auto run = [&](size_t begin, size_t end) {
    dots(x, ldx, mx, rows + begin * ldr, ldr, end - begin, k, alpha, beta, out + begin * ro, xo,
         ro);
  };
  const size_t grain = task_grain(mx * k);
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
    return dots_split<T>(a, 0, 1, b, ldb, pr.n, pr.k, alpha, beta, c, 0, 1, parallel);
  if (pr.n == 1 && !pr.trans_a && (pr.trans_b || ldb == 1))
    return dots_split<T>(b, 0, 1, a, lda, pr.m, pr.k, alpha, beta, c, 0, ldc, parallel);
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
// With AVX-512 the dot tiles outrun the blocked path (its micro-kernel is AVX2) up to about 32
// columns, the transposed copy of B included (measured on Sapphire Rapids: m=512, n=16, k=512
// 135 us against 266; n=32 310 against 426); elsewhere up to 8.
template <typename T>
size_t dot_max_n() {
#ifdef LOOM_GEMM_HAVE_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (sdk::cpu_has_avx512()) return 32;
#endif
  return 8;
}
constexpr size_t kDotMaxM = 4;

template <typename T>
void gemm_dots(const Problem& pr, T alpha, const T* a, size_t lda, const T* b, size_t ldb, T beta,
               T* c, size_t ldc, const ParallelFor& parallel) {
  if (pr.trans_b && pr.m <= kDotMaxM)  // the rows of A against every row of B
    return dots_split<T>(a, lda, pr.m, b, ldb, pr.n, pr.k, alpha, beta, c, ldc, 1, parallel);
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
  // The few columns (rows of op(B)^T, which stay in L1) against the rows of A, which are
  // split into tasks: A, the large operand, is streamed once.
  dots_split<T>(bt, ldbt, pr.n, a, lda, pr.m, pr.k, alpha, beta, c, 1, ldc, parallel);
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
  if (!trans_a && (n < dot_max_n<T>() || (trans_b && m <= kDotMaxM)))
    return gemm_dots<T>(pr, alpha, a, lda, b, ldb, beta, c, ldc, parallel);
#ifdef LOOM_GEMM_HAVE_AVX2
  if (sdk::cpu_has_avx512())
    return gemm_blocked<T, kAvx512MR, kAvx512NR<T>>(pr, alpha, a, lda, b, ldb, beta, c, ldc,
                                                    parallel, &micro_avx512<T>);
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

size_t gemm_dot_columns() {
  return dot_max_n<float>();
}

}  // namespace loom::cpu
