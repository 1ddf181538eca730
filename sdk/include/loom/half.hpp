// IEEE binary16 (float16) and bfloat16 conversions on the host, once for the whole project: the
// cpu kernels' Half/BFloat16 types, the GPU devices' fp16 constant storage (precision=f16), the
// formats that store fp16 weights and the apps' .npy/TensorProto readers all use these.
//
// float -> 16 bits rounds to nearest even, as vstore_half_rte in OpenCL and float16_t() in GLSL
// do; beyond the half range gives +-inf; a NaN stays a (quiet) NaN. 16 bits -> float is exact.
// Header-only, no dependencies beyond the standard library.
#pragma once

#include <bit>
#include <cstdint>

namespace loom::sdk {

constexpr float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f)  // inf or NaN, payload kept
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalize the mantissa into a float's (every half subnormal is a normal
  // float), counting the shifts into the exponent.
  uint32_t e = 113;  // the exponent of 2^-14 in float, the half subnormals' scale
  while (!(mantissa & 0x400u)) {
    mantissa <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

constexpr uint16_t float_to_half(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf, or NaN (made quiet)
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520
  const uint32_t exponent = abs >> 23;
  const uint32_t mantissa = abs & 0x7fffffu;
  if (exponent < 113) {  // below the smallest normal half: subnormal or zero
    if (exponent < 102) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t m = mantissa | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24 bits
    uint32_t half = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((exponent - 112) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa bumps the exponent, up to inf: still the right answer.
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

constexpr float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

constexpr uint16_t float_to_bfloat16(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it a quiet NaN (rounding could make it inf)
    return static_cast<uint16_t>((f >> 16) | 0x40u);
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);  // nearest even
}

}  // namespace loom::sdk
