// IEEE binary16 from float on the host, for constants stored as fp16 (precision=f16): round to
// nearest even like the kernels' vstore_half_rte; beyond the half range gives +-inf, NaN stays
// NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace loom::opencl {

inline uint16_t float_to_half(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t exponent = (bits >> 23) & 0xffu;
  const uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xffu)  // inf, or NaN (kept quiet, with a payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    // Subnormal half: the mantissa with its implicit bit, shifted into place, rounded.
    const uint32_t m = mantissa | 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa bumps the exponent, up to inf: still the right answer.
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

}  // namespace loom::opencl
