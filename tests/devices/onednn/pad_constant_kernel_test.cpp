// The onednn device's constant-mode Pad kernel (plugins/devices/onednn/pad_constant.hpp), each
// variant this CPU runs, against an index-by-index reference: ranks 1 to 5, pads of 0 to 70
// elements on either side of each axis (rows shorter and longer than a 64-byte vector, the
// source starting mid-vector), 1-, 2- and 4-byte elements with fill patterns that show a
// misplaced byte, empty sources and destinations, and sizes that wake the OpenMP team.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <random>
#include <vector>

#include "pad_constant.hpp"

namespace loom::onednn {
namespace {

std::vector<unsigned char> reference(const PadConstantShape& s,
                                     const std::vector<unsigned char>& src) {
  const size_t rank = s.dst_dims.size(), e = s.element_size;
  size_t total = 1;
  for (int64_t d : s.dst_dims) total *= static_cast<size_t>(d);
  std::vector<unsigned char> dst(total * e);
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < total; ++flat) {
    size_t r = flat;
    for (size_t d = rank; d-- > 0;) {
      index[d] = static_cast<int64_t>(r % static_cast<size_t>(s.dst_dims[d]));
      r /= static_cast<size_t>(s.dst_dims[d]);
    }
    bool inside = true;
    size_t from = 0;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t i = index[d] - s.before[d];
      inside = inside && i >= 0 && i < s.src_dims[d];
      from = from * static_cast<size_t>(s.src_dims[d]) + static_cast<size_t>(inside ? i : 0);
    }
    std::memcpy(dst.data() + flat * e, inside ? src.data() + from * e : s.value, e);
  }
  return dst;
}

void check(const PadConstantShape& s, PadConstantKernel kernel, std::mt19937& rng) {
  size_t count = 1, out = 1;
  for (size_t d = 0; d < s.src_dims.size(); ++d) {
    count *= static_cast<size_t>(s.src_dims[d]);
    out *= static_cast<size_t>(s.dst_dims[d]);
  }
  std::vector<unsigned char> src(count * s.element_size + 1);
  for (unsigned char& b : src) b = static_cast<unsigned char>(rng());
  // A guard byte after the destination catches a store past its end.
  std::vector<unsigned char> dst(out * s.element_size + 1, 0x5A);
  pad_constant(s, src.data(), dst.data(), kernel);
  const std::vector<unsigned char> want = reference(s, src);
  ASSERT_EQ(dst.back(), 0x5A) << "wrote past the destination";
  dst.pop_back();
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(dst[i], want[i]) << "byte " << i;
}

PadConstantShape shape(std::vector<int64_t> src, std::vector<int64_t> before,
                       std::vector<int64_t> after, size_t element_size) {
  PadConstantShape s;
  s.src_dims = src;
  s.before = before;
  for (size_t d = 0; d < src.size(); ++d) s.dst_dims.push_back(before[d] + src[d] + after[d]);
  s.element_size = element_size;
  const unsigned char value[4] = {0xA1, 0xB2, 0xC3, 0xD4};  // each byte tells its position
  std::memcpy(s.value, value, sizeof value);
  return s;
}

TEST(PadConstantKernel, MatchesTheReference) {
  std::mt19937 rng(11);
  for (PadConstantKernel kernel : {PadConstantKernel::kAvx512, PadConstantKernel::kPortable}) {
    if (!pad_constant_kernel_runs_here(kernel)) continue;
    SCOPED_TRACE(kernel == PadConstantKernel::kAvx512 ? "avx512" : "portable");
    for (size_t e : {1u, 2u, 4u}) {
      SCOPED_TRACE(e);
      // TFLite's channel pad of a channels-last shortcut: 24 -> 28 channels, 42 -> 48.
      check(shape({1, 32, 32, 24}, {0, 0, 0, 0}, {0, 0, 0, 4}, e), kernel, rng);
      check(shape({1, 16, 16, 42}, {0, 0, 0, 0}, {0, 0, 0, 6}, e), kernel, rng);
      // Pads before the source too; rows across several vectors; a source row starting
      // mid-vector and ending in the next one.
      check(shape({2, 3, 5, 70}, {0, 1, 2, 61}, {1, 0, 3, 2}, e), kernel, rng);
      check(shape({130}, {3}, {70}, e), kernel, rng);
      check(shape({3, 4, 5, 6, 7}, {1, 0, 2, 0, 1}, {0, 2, 0, 1, 3}, e), kernel, rng);
      check(shape({7, 9}, {0, 0}, {0, 0}, e), kernel, rng);  // nothing to pad
      check(shape({0, 9}, {2, 1}, {1, 1}, e), kernel, rng);  // an empty source: all fill
      check(shape({4, 0}, {1, 3}, {0, 2}, e), kernel, rng);  // empty rows
      check(shape({5, 6}, {0, 0}, {0, 0}, e), kernel, rng);
      check(shape({0, 6}, {0, 0}, {0, 0}, e), kernel, rng);  // an empty destination
      for (int i = 0; i < 40; ++i) {                         // random ranks, extents and pads
        const size_t rank = 1 + rng() % 4;
        std::vector<int64_t> src, before, after;
        for (size_t d = 0; d < rank; ++d) {
          src.push_back(static_cast<int64_t>(rng() % 9));
          before.push_back(static_cast<int64_t>(rng() % 4));
          after.push_back(static_cast<int64_t>(rng() % 4));
        }
        check(shape(src, before, after, e), kernel, rng);
      }
    }
    // Large enough for the team (256 KiB), with 1, 2 and 3 threads.
    const int team = omp_get_max_threads();
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(threads);
      omp_set_num_threads(threads);
      check(shape({1, 3, 300, 300}, {0, 0, 4, 1}, {0, 0, 3, 5}, 4), kernel, rng);
      check(shape({1, 64, 64, 60}, {0, 1, 0, 0}, {0, 0, 1, 4}, 1), kernel, rng);
    }
    omp_set_num_threads(team);
  }
}

}  // namespace
}  // namespace loom::onednn
