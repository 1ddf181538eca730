#include "pad_constant.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <loom/vector_math.hpp>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace loom::onednn {
namespace {

// Destination rows (the innermost axis), in bytes: `before` bytes of the fill value, a source
// row's `count` bytes, then the fill value up to `total`. Consecutive rows are `total` bytes
// apart in the destination and `count` bytes apart in the source.
struct RowGeometry {
  size_t before = 0, count = 0, total = 0;
};

// `rows` consecutive rows, from consecutive source rows (`src` NULL: rows wholly in the
// padding). `pattern` is 64 bytes of the fill value repeated; a row starts on an element
// boundary, so byte i of a row is pattern[i % 64].
void rows_portable(unsigned char* dst, const unsigned char* src, int64_t rows, const RowGeometry& g,
                   const unsigned char* pattern) {
  auto fill = [&](unsigned char* row, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) row[i] = pattern[i % 64];
  };
  for (int64_t r = 0; r < rows; ++r, dst += g.total) {
    if (!src) {
      fill(dst, 0, g.total);
      continue;
    }
    fill(dst, 0, g.before);
    if (g.count) std::memcpy(dst + g.before, src, g.count);
    fill(dst, g.before + g.count, g.total);
    src += g.count;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
LOOM_AVX512_WARNINGS_OFF
// Lanes [lo, hi) of a 64-byte vector; lo < hi <= 64.
inline __mmask64 lanes(size_t lo, size_t hi) {
  const __mmask64 below_hi = hi >= 64 ? ~__mmask64{0} : (__mmask64{1} << hi) - 1;
  return below_hi & ~((__mmask64{1} << lo) - 1);
}

// Each 64-byte chunk of a row is the fill value with the source bytes it covers loaded over
// it: one masked load and one masked store. The load's address is the source row's shifted by
// the row's `before` bytes, so it can point before the row; the lanes outside [before, before +
// count) are masked off, and a masked-off lane is never read (nor faults). The address is formed
// as an integer for that reason. A row of at most 64 bytes (a channel pad) is two instructions.
__attribute__((target("avx512bw"))) void rows_avx512(unsigned char* dst, const unsigned char* src,
                                                     int64_t rows, const RowGeometry& g,
                                                     const unsigned char* pattern) {
  const __m512i fill = _mm512_loadu_si512(pattern);
  const size_t end = g.before + g.count;
  if (g.total <= 64) {
    const __mmask64 store = lanes(0, g.total);
    if (!src || g.count == 0) {
      for (int64_t r = 0; r < rows; ++r, dst += g.total) _mm512_mask_storeu_epi8(dst, store, fill);
      return;
    }
    const __mmask64 data = lanes(g.before, end);
    uintptr_t from = reinterpret_cast<uintptr_t>(src) - g.before;
    for (int64_t r = 0; r < rows; ++r, dst += g.total, from += g.count)
      _mm512_mask_storeu_epi8(
          dst, store, _mm512_mask_loadu_epi8(fill, data, reinterpret_cast<const void*>(from)));
    return;
  }
  for (int64_t r = 0; r < rows; ++r, dst += g.total) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(src) - g.before;
    for (size_t c0 = 0; c0 < g.total; c0 += 64) {
      const size_t width = std::min<size_t>(64, g.total - c0);
      __m512i v = fill;
      if (src) {
        const size_t lo = g.before > c0 ? g.before - c0 : 0;
        const size_t hi = end > c0 ? std::min<size_t>(64, end - c0) : 0;
        if (hi > lo)
          v = _mm512_mask_loadu_epi8(fill, lanes(lo, hi), reinterpret_cast<const void*>(base + c0));
      }
      _mm512_mask_storeu_epi8(dst + c0, lanes(0, width), v);
    }
    if (src) src += g.count;
  }
}
LOOM_AVX512_WARNINGS_ON
#endif

using Rows = void (*)(unsigned char*, const unsigned char*, int64_t, const RowGeometry&,
                      const unsigned char*);

Rows rows_kernel(PadConstantKernel kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kernel == PadConstantKernel::kAvx512 && __builtin_cpu_supports("avx512bw"))
    return &rows_avx512;
#endif
  (void)kernel;
  return &rows_portable;
}

// The shape with neighbouring outer axes that are not padded merged into one (a channel pad of
// NHWC becomes one run of N*H*W rows) and at least one outer axis.
PadConstantShape merged(const PadConstantShape& s) {
  PadConstantShape m = s;
  m.src_dims.clear();
  m.dst_dims.clear();
  m.before.clear();
  const size_t rank = s.dst_dims.size();
  auto unpadded = [&](size_t d) { return s.before[d] == 0 && s.src_dims[d] == s.dst_dims[d]; };
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (d > 0 && unpadded(d) && unpadded(d - 1)) {
      m.src_dims.back() *= s.src_dims[d];
      m.dst_dims.back() *= s.dst_dims[d];
      continue;
    }
    m.src_dims.push_back(s.src_dims[d]);
    m.dst_dims.push_back(s.dst_dims[d]);
    m.before.push_back(s.before[d]);
  }
  if (m.dst_dims.empty()) {  // a rank-1 tensor: one row
    m.src_dims.push_back(1);
    m.dst_dims.push_back(1);
    m.before.push_back(0);
  }
  m.src_dims.push_back(s.src_dims[rank - 1]);
  m.dst_dims.push_back(s.dst_dims[rank - 1]);
  m.before.push_back(s.before[rank - 1]);
  return m;
}

}  // namespace

bool pad_constant_kernel_runs_here(PadConstantKernel kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kernel == PadConstantKernel::kAvx512) return __builtin_cpu_supports("avx512bw");
#endif
  return kernel == PadConstantKernel::kPortable;
}

void pad_constant(const PadConstantShape& shape, const void* src, void* dst,
                  PadConstantKernel kernel) {
  if (shape.dst_dims.empty()) {  // a scalar: nothing to pad
    std::memcpy(dst, src, shape.element_size);
    return;
  }
  const PadConstantShape s = merged(shape);
  const size_t rank = s.dst_dims.size(), outer = rank - 1, last = outer - 1;
  const size_t e = s.element_size;
  unsigned char pattern[64];
  for (size_t i = 0; i < sizeof pattern; ++i) pattern[i] = s.value[i % e];
  const RowGeometry g{static_cast<size_t>(s.before[outer]) * e,
                      static_cast<size_t>(s.src_dims[outer]) * e,
                      static_cast<size_t>(s.dst_dims[outer]) * e};
  // Source rows per step of each outer axis (row-major over the source's outer extents).
  std::vector<int64_t> src_row_stride(outer, 1);
  for (size_t d = last; d-- > 0;) src_row_stride[d] = src_row_stride[d + 1] * s.src_dims[d + 1];
  int64_t rows = 1;
  for (size_t d = 0; d < outer; ++d) rows *= s.dst_dims[d];
  if (rows == 0 || g.total == 0) return;
  const Rows write = rows_kernel(kernel);
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);

  // Rows [begin, end) in runs along the last outer axis: its leading pad rows, the rows it
  // copies (consecutive in the source), its trailing pad rows.
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(outer, 0);
    for (size_t d = outer, r = static_cast<size_t>(begin); d-- > 0;) {
      index[d] = static_cast<int64_t>(r % static_cast<size_t>(s.dst_dims[d]));
      r /= static_cast<size_t>(s.dst_dims[d]);
    }
    const int64_t first = s.before[last], stop = first + s.src_dims[last],
                  extent = s.dst_dims[last];
    for (int64_t r = begin; r < end;) {
      const unsigned char* plane = in;  // the source rows of the higher axes' indices
      for (size_t d = 0; d < last && plane; ++d) {
        const int64_t i = index[d] - s.before[d];
        plane = i < 0 || i >= s.src_dims[d]
                    ? nullptr
                    : plane + static_cast<size_t>(i * src_row_stride[d]) * g.count;
      }
      const int64_t i = index[last];
      const int64_t segment_end = i < first ? first : i < stop ? stop : extent;
      const int64_t n = std::min(segment_end - i, end - r);
      const unsigned char* from =
          plane && i >= first && i < stop
              ? plane + static_cast<size_t>((i - first) * src_row_stride[last]) * g.count
              : nullptr;
      write(out + static_cast<size_t>(r) * g.total, from, n, g, pattern);
      r += n;
      index[last] += n;
      for (size_t d = last + 1; d-- > 0 && index[d] == s.dst_dims[d];) {
        index[d] = 0;
        if (d > 0) ++index[d - 1];
      }
    }
  };
  // A team only where there is work for it: waking it costs more than a small pad.
  const bool team = static_cast<size_t>(rows) * g.total >= (size_t{1} << 18);
  if (!team) {
    run(0, rows);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = (rows + threads - 1) / threads;
    const int64_t begin = std::min(rows, t * per), end = std::min(rows, begin + per);
    if (begin < end) run(begin, end);
  }
}

}  // namespace loom::onednn
