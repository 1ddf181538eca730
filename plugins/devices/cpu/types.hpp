// Element types of the cpu device: 16-bit floats stored as bits, conversions, and dispatch of a
// templated functor over the dtype of a tensor. Kernels compute float16/bfloat16 in float.
#pragma once

#include <loom/plugin.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace loom::cpu {

// IEEE 754 binary16, stored as bits.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0) {
      if (mant == 0) {
        bits = sign;
      } else {  // subnormal: normalise
        exp = 127 - 15 + 1;
        while ((mant & 0x400u) == 0) {
          mant <<= 1;
          --exp;
        }
        mant &= 0x3FFu;
        bits = sign | (exp << 23) | (mant << 13);
      }
    } else if (exp == 0x1F) {
      bits = sign | 0x7F800000u | (mant << 13);
    } else {
      bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // Round to nearest even, with overflow to inf, NaN kept NaN, subnormals handled.
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520
    if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
      uint32_t exp = abs >> 23;
      uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
      uint32_t shift = 126 - exp;  // 14 - (exp - 127) + 13 - 1 ... total shift to half subnormal
      uint32_t half_mant = mant >> (shift);
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
      return static_cast<uint16_t>(sign | half_mant);
    }
    uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
};

// bfloat16: the upper half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }
  static float to_float(uint16_t b) {
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    x += 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
  }
};

// C++ type of a dtype.
template <loom_dtype_t D> struct DTypeTraits;
template <> struct DTypeTraits<LOOM_DTYPE_FLOAT32> { using type = float; };
template <> struct DTypeTraits<LOOM_DTYPE_FLOAT64> { using type = double; };
template <> struct DTypeTraits<LOOM_DTYPE_FLOAT16> { using type = Half; };
template <> struct DTypeTraits<LOOM_DTYPE_BFLOAT16> { using type = BFloat16; };
template <> struct DTypeTraits<LOOM_DTYPE_INT8> { using type = int8_t; };
template <> struct DTypeTraits<LOOM_DTYPE_INT16> { using type = int16_t; };
template <> struct DTypeTraits<LOOM_DTYPE_INT32> { using type = int32_t; };
template <> struct DTypeTraits<LOOM_DTYPE_INT64> { using type = int64_t; };
template <> struct DTypeTraits<LOOM_DTYPE_UINT8> { using type = uint8_t; };
template <> struct DTypeTraits<LOOM_DTYPE_UINT16> { using type = uint16_t; };
template <> struct DTypeTraits<LOOM_DTYPE_UINT32> { using type = uint32_t; };
template <> struct DTypeTraits<LOOM_DTYPE_UINT64> { using type = uint64_t; };
template <> struct DTypeTraits<LOOM_DTYPE_BOOL> { using type = bool; };
template <> struct DTypeTraits<LOOM_DTYPE_STRING> { using type = loom_string_t; };

template <typename T>
constexpr bool is_half_like_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Converts any element type to/from the type a kernel computes in.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_like_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_half_like_v<To>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// Calls fn.template operator()<T>() with T = the C++ type of `dtype`, for the dtype groups
// given as template argument (only those are instantiated):
//   dispatch<kNumeric>(t.dtype, ctx.where(), [&]<typename T>() { ... });
// Other dtypes throw LOOM_ERROR_UNSUPPORTED naming `what`.
enum DTypeGroup : unsigned {
  kFloats = 1u,        // float32, float64, float16, bfloat16
  kSignedInts = 2u,    // int8..int64
  kUnsignedInts = 4u,  // uint8..uint64
  kBool = 8u,
  kString = 16u,
  kNumeric = kFloats | kSignedInts | kUnsignedInts,
  kAll = kNumeric | kBool | kString,
};

template <unsigned Groups, typename Fn>
decltype(auto) dispatch(loom_dtype_t dtype, const std::string& what, Fn&& fn) {
  switch (dtype) {
#define LOOM_CPU_CASE(D, G) \
  case D:                   \
    if constexpr ((Groups & (G)) != 0) {                                                   \
      return fn.template operator()<typename DTypeTraits<D>::type>();                      \
    }                                                                                      \
    break;
    LOOM_CPU_CASE(LOOM_DTYPE_FLOAT32, kFloats)
    LOOM_CPU_CASE(LOOM_DTYPE_FLOAT64, kFloats)
    LOOM_CPU_CASE(LOOM_DTYPE_FLOAT16, kFloats)
    LOOM_CPU_CASE(LOOM_DTYPE_BFLOAT16, kFloats)
    LOOM_CPU_CASE(LOOM_DTYPE_INT8, kSignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_INT16, kSignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_INT32, kSignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_INT64, kSignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_UINT8, kUnsignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_UINT16, kUnsignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_UINT32, kUnsignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_UINT64, kUnsignedInts)
    LOOM_CPU_CASE(LOOM_DTYPE_BOOL, kBool)
    LOOM_CPU_CASE(LOOM_DTYPE_STRING, kString)
#undef LOOM_CPU_CASE
    default:
      break;
  }
  sdk::fail(LOOM_ERROR_UNSUPPORTED,
            what + ": element type " + sdk::dtype_name(dtype) + " is not supported");
}

}  // namespace loom::cpu
