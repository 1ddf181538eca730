#include "depthwise3x3.hpp"

#include <omp.h>

#include <algorithm>

#if defined(__x86_64__)
// GCC 12's AVX-512 min/max intrinsics start from _mm512_undefined_ps() and, inlined, warn
// that it "may be used uninitialized" (GCC bug 105593): a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace loom::onednn {

void pack_depthwise3x3_weights(const float* weights, int64_t channels, float* packed) {
  const int64_t blocks = (channels + kDepthwiseBlock - 1) / kDepthwiseBlock;
  std::fill(packed, packed + blocks * 9 * kDepthwiseBlock, 0.f);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t tap = 0; tap < 9; ++tap)
      packed[(c / kDepthwiseBlock) * 9 * kDepthwiseBlock + tap * kDepthwiseBlock +
             c % kDepthwiseBlock] = weights[c * 9 + tap];
}

namespace {

#if defined(__x86_64__)

// What a row of one channel block needs: the nine tap vectors, bias, clamp bounds and the
// three input rows (with whether each lies inside the image; outside ones are zero padding).
struct RowContext {
  __m512 taps[9];
  __m512 bias, lo, hi;
  bool row_inside[3];
  const float* rows[3];
};

// T consecutive outputs of a row, kept in T accumulators; each input vector is loaded once per
// kernel row and feeds the (up to three) outputs it touches. `first_col` is the input column
// of the tile's first tap, -1 when the tile starts in the left padding (SkipFirst); SkipLast:
// the tile's last tap column lies in the right padding. Everything is unrolled at compile
// time, so the accumulators stay in registers (T <= 16: 16 + 9 taps + 3 constants).
template <int S, int T, bool SkipFirst, bool SkipLast>
__attribute__((target("avx512f"), always_inline)) inline void tile(const RowContext& c,
                                                                   int64_t first_col, float* out) {
  constexpr int kInputs = (T - 1) * S + 3;
  __m512 acc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) acc[t] = c.bias;
#pragma GCC unroll 3
  for (int kh = 0; kh < 3; ++kh) {
    if (!c.row_inside[kh]) continue;
    const float* row = c.rows[kh] + first_col * kDepthwiseBlock;
#pragma GCC unroll 64
    for (int i = 0; i < kInputs; ++i) {
      if ((SkipFirst && i == 0) || (SkipLast && i == kInputs - 1)) continue;
      __m512 x = _mm512_loadu_ps(row + i * kDepthwiseBlock);
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
        const int d = i - kw;  // S * (output index) when this input meets tap kw
        if (d >= 0 && d % S == 0 && d / S < T)
          acc[d / S] = _mm512_fmadd_ps(x, c.taps[kh * 3 + kw], acc[d / S]);
      }
    }
  }
  // max/min return their second operand when one is NaN: NaN passes through.
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
    _mm512_storeu_ps(out + t * kDepthwiseBlock, _mm512_min_ps(c.hi, _mm512_max_ps(c.lo, acc[t])));
}

// A tile of `count` (1..T) outputs: the widths are template parameters, so one instance per
// width.
template <int S, bool SkipFirst, bool SkipLast, int T = 16>
__attribute__((target("avx512f"))) void tile_of(const RowContext& c, int64_t first_col, float* out,
                                                int64_t count) {
  if constexpr (T > 0) {
    if (count == T)
      tile<S, T, SkipFirst, SkipLast>(c, first_col, out);
    else
      tile_of<S, SkipFirst, SkipLast, T - 1>(c, first_col, out, count);
  }
}

// Output rows [row_begin, row_end) of one channel block. A row is cut into tiles of at most
// 16 outputs of near-equal width (MobileNet's 56 = 4 x 14, 112 = 7 x 16).
template <int S>
__attribute__((target("avx512f"))) void block_rows(const Depthwise3x3Shape& s, const float* src,
                                                   const float* taps, const float* bias, float lo,
                                                   float hi, float* dst, int64_t row_begin,
                                                   int64_t row_end) {
  RowContext c;
  for (int k = 0; k < 9; ++k) c.taps[k] = _mm512_loadu_ps(taps + k * kDepthwiseBlock);
  c.bias = _mm512_loadu_ps(bias);
  c.lo = _mm512_set1_ps(lo);
  c.hi = _mm512_set1_ps(hi);
  const int64_t tiles = (s.out_width + 15) / 16;
  for (int64_t oh = row_begin; oh < row_end; ++oh) {
    for (int kh = 0; kh < 3; ++kh) {
      int64_t ih = oh * S - s.pad_top + kh;
      c.row_inside[kh] = ih >= 0 && ih < s.height;
      c.rows[kh] = src + (c.row_inside[kh] ? ih : 0) * s.width * kDepthwiseBlock;
    }
    float* out_row = dst + oh * s.out_width * kDepthwiseBlock;
    for (int64_t t = 0; t < tiles; ++t) {
      int64_t begin = s.out_width * t / tiles, end = s.out_width * (t + 1) / tiles;
      int64_t first_col = begin * S - s.pad_left, last_col = (end - 1) * S - s.pad_left + 2;
      bool skip_first = first_col < 0, skip_last = last_col >= s.width;
      float* out = out_row + begin * kDepthwiseBlock;
      if (skip_first && skip_last)
        tile_of<S, true, true>(c, first_col, out, end - begin);
      else if (skip_first)
        tile_of<S, true, false>(c, first_col, out, end - begin);
      else if (skip_last)
        tile_of<S, false, true>(c, first_col, out, end - begin);
      else
        tile_of<S, false, false>(c, first_col, out, end - begin);
    }
  }
}

#endif

// The same computation for one channel block, one lane at a time.
void block_rows_generic(const Depthwise3x3Shape& s, const float* in, const float* taps,
                        const float* bias, float lo, float hi, float* out, int64_t row_begin,
                        int64_t row_end) {
  for (int64_t oh = row_begin; oh < row_end; ++oh)
    for (int64_t ow = 0; ow < s.out_width; ++ow)
      for (int64_t lane = 0; lane < kDepthwiseBlock; ++lane) {
        float acc = bias[lane];
        for (int64_t kh = 0; kh < 3; ++kh)
          for (int64_t kw = 0; kw < 3; ++kw) {
            int64_t ih = oh * s.stride - s.pad_top + kh, iw = ow * s.stride - s.pad_left + kw;
            if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) continue;
            acc += in[(ih * s.width + iw) * kDepthwiseBlock + lane] *
                   taps[(kh * 3 + kw) * kDepthwiseBlock + lane];
          }
        out[(oh * s.out_width + ow) * kDepthwiseBlock + lane] =
            acc != acc ? acc : std::min(hi, std::max(lo, acc));
      }
}

// Output rows [row_begin, row_end) of the s.blocks channel blocks `src`/`dst` start at (one
// image).
void rows(const Depthwise3x3Shape& s, const float* src, const float* packed, const float* bias,
          float lo, float hi, float* dst, int64_t row_begin, int64_t row_end,
          [[maybe_unused]] Depthwise3x3Kernel kernel) {
  for (int64_t b = 0; b < s.blocks; ++b) {
    const float* in = src + b * s.height * s.width * kDepthwiseBlock;
    float* out = dst + b * s.out_height * s.out_width * kDepthwiseBlock;
    const float* taps = packed + b * 9 * kDepthwiseBlock;
    const float* block_bias = bias + b * kDepthwiseBlock;
#if defined(__x86_64__)
    if (kernel == Depthwise3x3Kernel::kAvx512) {
      if (s.stride == 1)
        block_rows<1>(s, in, taps, block_bias, lo, hi, out, row_begin, row_end);
      else
        block_rows<2>(s, in, taps, block_bias, lo, hi, out, row_begin, row_end);
      continue;
    }
#endif
    block_rows_generic(s, in, taps, block_bias, lo, hi, out, row_begin, row_end);
  }
}

}  // namespace

bool depthwise3x3_kernel_runs_here(Depthwise3x3Kernel kernel) {
  if (kernel == Depthwise3x3Kernel::kGeneric) return true;
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

void depthwise3x3(const Depthwise3x3Shape& shape, const float* src, const float* packed_weights,
                  const float* bias, float lo, float hi, float* dst, Depthwise3x3Kernel kernel) {
  // Rows [row_begin, row_end) of `blocks` channel blocks of `image` from `first_block` on.
  auto run = [&](int64_t image, int64_t first_block, int64_t blocks, int64_t row_begin,
                 int64_t row_end) {
    Depthwise3x3Shape part = shape;
    part.blocks = blocks;
    const int64_t block = image * shape.blocks + first_block;
    const float* in = src + block * shape.height * shape.width * kDepthwiseBlock;
    float* out = dst + block * shape.out_height * shape.out_width * kDepthwiseBlock;
    const float* taps = packed_weights + first_block * 9 * kDepthwiseBlock;
    const float* block_bias = bias + first_block * kDepthwiseBlock;
    rows(part, in, taps, block_bias, lo, hi, out, row_begin, row_end, kernel);
  };
  // Each thread works where the convolution before it (oneDNN's 1x1) left its share of the
  // input in that core's cache: oneDNN splits a 1x1's rows between threads on large images
  // and its output channels on small ones (14x14 and below in MobileNetV2), so this kernel
  // splits rows from 512 input pixels on and channel blocks below (per layer at 2 threads:
  // 56x56 rows 95 us, blocks 138; 14x14 rows 27-48 us, blocks 21-29), and rows wherever
  // there are too few blocks to go round.
  const bool by_rows = shape.height * shape.width >= 512 ||
                       shape.batch * shape.blocks < 2 * int64_t{omp_get_max_threads()};
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    const int64_t units = by_rows ? shape.batch * shape.out_height : shape.batch * shape.blocks;
    const int64_t first = units * thread / threads, last = units * (thread + 1) / threads;
    for (int64_t unit = first; unit < last;) {
      if (by_rows) {
        // Rows of one image: all channel blocks.
        int64_t image = unit / shape.out_height, row = unit % shape.out_height;
        int64_t count = std::min(shape.out_height - row, last - unit);
        unit += count;
        run(image, 0, shape.blocks, row, row + count);
      } else {
        // Channel blocks of one image: all rows.
        int64_t image = unit / shape.blocks, block = unit % shape.blocks;
        int64_t count = std::min(shape.blocks - block, last - unit);
        unit += count;
        run(image, block, count, 0, shape.out_height);
      }
    }
  }
}

}  // namespace loom::onednn
