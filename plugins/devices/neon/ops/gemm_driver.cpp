#include "ops/gemm_driver.hpp"

#include <algorithm>

#include "kernels/gemm_fp16.hpp"

namespace loom::neon {
namespace {

void tile(const float* pa, const float* pb, size_t m, size_t n, size_t k, const float* bias,
          float* c, size_t ldc, size_t mp, size_t np) {
  gemm_tile(m, n, k, pa, pb, bias, c, ldc, mp, np);
}
void tile(const uint16_t* pa, const uint16_t* pb, size_t m, size_t n, size_t k, const float* bias,
          float* c, size_t ldc, size_t mp, size_t np) {
  gemm_tile_f16(m, n, k, pa, pb, bias, c, ldc, mp, np);
}

template <typename T>
void run_tiles(const Runtime& rt, size_t m, size_t n, size_t k, const T* pa, const T* pb,
               const float* row_bias, float* c, size_t ldc) {
  const size_t mpanels = gemm_panels(m, kGemmMR), npanels = gemm_panels(n, kGemmNR);
  // ~32k multiply-adds per chunk at least, so tiny GEMMs stay on one thread.
  const size_t grain = std::max<size_t>(1, 32768 / (kGemmMR * kGemmNR * std::max<size_t>(k, 1)));
  rt.parallel_for(mpanels * npanels, grain, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t)
      tile(pa, pb, m, n, k, row_bias, c, ldc, t % mpanels, t / mpanels);
  });
}

size_t pack_grain(size_t panel, size_t k) {
  return std::max<size_t>(1, 4096 / (panel * std::max<size_t>(k, 1)));
}

}  // namespace

template <>
void pack_a_as<float>(const float* a, size_t rs, size_t cs, size_t m, size_t k, float* packed,
                      size_t pb, size_t pe) {
  pack_a(a, rs, cs, m, k, packed, pb, pe);
}
template <>
void pack_a_as<uint16_t>(const float* a, size_t rs, size_t cs, size_t m, size_t k, uint16_t* packed,
                         size_t pb, size_t pe) {
  pack_a_f16(a, rs, cs, m, k, packed, pb, pe);
}
template <>
void pack_b_as<float>(const float* b, size_t rs, size_t cs, size_t k, size_t n, float* packed,
                      size_t pb, size_t pe) {
  pack_b(b, rs, cs, k, n, packed, pb, pe);
}
template <>
void pack_b_as<uint16_t>(const float* b, size_t rs, size_t cs, size_t k, size_t n, uint16_t* packed,
                         size_t pb, size_t pe) {
  pack_b_f16(b, rs, cs, k, n, packed, pb, pe);
}

template <typename T>
void gemm_with_packed_a(const Runtime& rt, size_t m, size_t n, size_t k, const T* packed_a,
                        const float* b, size_t b_rs, size_t b_cs, const float* row_bias, float* c,
                        size_t ldc) {
  if (m == 0 || n == 0) return;
  auto pb = scratch<T>(packed_b_floats(k, n));
  rt.parallel_for(gemm_panels(n, kGemmNR), pack_grain(kGemmNR, k), [&](size_t begin, size_t end) {
    pack_b_as<T>(b, b_rs, b_cs, k, n, pb.get(), begin, end);
  });
  run_tiles<T>(rt, m, n, k, packed_a, pb.get(), row_bias, c, ldc);
}

void gemm_with_packed_a_pack4_b(const Runtime& rt, size_t m, size_t plane, size_t k,
                                const float* packed_a, const float* b_pack4, const float* row_bias,
                                float* c_pack4) {
  if (m == 0 || plane == 0) return;
  auto pb = scratch<float>(packed_b_floats(k, plane));
  rt.parallel_for(
      gemm_panels(plane, kGemmNR), pack_grain(kGemmNR, k),
      [&](size_t begin, size_t end) { pack_b_pack4(b_pack4, k, plane, pb.get(), begin, end); });
  const size_t mpanels = gemm_panels(m, kGemmMR), npanels = gemm_panels(plane, kGemmNR);
  const size_t grain = std::max<size_t>(1, 32768 / (kGemmMR * kGemmNR * std::max<size_t>(k, 1)));
  rt.parallel_for(mpanels * npanels, grain, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t)
      gemm_tile_pack4(m, plane, k, packed_a, pb.get(), row_bias, c_pack4, t % mpanels, t / mpanels);
  });
}

template <typename T>
void gemm_with_packed_b(const Runtime& rt, size_t m, size_t n, size_t k, const float* a,
                        size_t a_rs, size_t a_cs, const T* packed_b, float* c, size_t ldc) {
  if (m == 0 || n == 0) return;
  auto pa = scratch<T>(packed_a_floats(m, k));
  rt.parallel_for(gemm_panels(m, kGemmMR), pack_grain(kGemmMR, k), [&](size_t begin, size_t end) {
    pack_a_as<T>(a, a_rs, a_cs, m, k, pa.get(), begin, end);
  });
  run_tiles<T>(rt, m, n, k, pa.get(), packed_b, nullptr, c, ldc);
}

template void gemm_with_packed_a<float>(const Runtime&, size_t, size_t, size_t, const float*,
                                        const float*, size_t, size_t, const float*, float*, size_t);
template void gemm_with_packed_a<uint16_t>(const Runtime&, size_t, size_t, size_t, const uint16_t*,
                                           const float*, size_t, size_t, const float*, float*,
                                           size_t);
template void gemm_with_packed_b<float>(const Runtime&, size_t, size_t, size_t, const float*,
                                        size_t, size_t, const float*, float*, size_t);
template void gemm_with_packed_b<uint16_t>(const Runtime&, size_t, size_t, size_t, const float*,
                                           size_t, size_t, const uint16_t*, float*, size_t);

}  // namespace loom::neon
