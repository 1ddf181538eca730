// IEEE binary16 conversion on the host, for constants uploaded to fp16 storage
// (precision=f16): round to nearest even, as the kernels' float16_t() conversions do; values
// beyond the half range become +-inf, NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace loom::vulkan {

inline uint16_t float_to_half(float value) {
  uint32_t f;
  std::memcpy(&f, &value, sizeof f);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t exponent = (f >> 23) & 0xffu;
  uint32_t mantissa = f & 0x7fffffu;
  if (exponent == 0xffu)  // inf or NaN (keeps a quiet NaN's payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit bit into place.
    if (e < -10) return static_cast<uint16_t>(sign);
    uint32_t m = mantissa | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline std::vector<uint16_t> floats_to_halves(std::span<const float> values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = float_to_half(values[i]);
  return out;
}

}  // namespace loom::vulkan
