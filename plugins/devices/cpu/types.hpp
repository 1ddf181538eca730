// Element types of the cpu device: 16-bit floats stored as bits, conversions, and dispatch of a
// templated functor over the dtype of a tensor. Kernels compute float16/bfloat16 in float.
#pragma once

#include <cstdint>
#include <cstring>
#include <loom/half.hpp>
#include <loom/plugin.hpp>
#include <string>
#include <type_traits>

namespace loom::cpu {

// IEEE 754 binary16 and bfloat16, stored as bits. The conversions (round to nearest even, inf on
// overflow, NaN kept a quiet NaN, subnormals) are loom/half.hpp's, shared with the other devices.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(sdk::float_to_half(f)) {}
  explicit operator float() const { return sdk::half_to_float(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(sdk::float_to_bfloat16(f)) {}
  explicit operator float() const { return sdk::bfloat16_to_float(bits); }
};

// C++ type of a dtype.
template <loom_dtype_t D>
struct DTypeTraits;
template <>
struct DTypeTraits<LOOM_DTYPE_FLOAT32> {
  using type = float;
};
template <>
struct DTypeTraits<LOOM_DTYPE_FLOAT64> {
  using type = double;
};
template <>
struct DTypeTraits<LOOM_DTYPE_FLOAT16> {
  using type = Half;
};
template <>
struct DTypeTraits<LOOM_DTYPE_BFLOAT16> {
  using type = BFloat16;
};
template <>
struct DTypeTraits<LOOM_DTYPE_INT8> {
  using type = int8_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_INT16> {
  using type = int16_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_INT32> {
  using type = int32_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_INT64> {
  using type = int64_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_UINT8> {
  using type = uint8_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_UINT16> {
  using type = uint16_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_UINT32> {
  using type = uint32_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_UINT64> {
  using type = uint64_t;
};
template <>
struct DTypeTraits<LOOM_DTYPE_BOOL> {
  using type = bool;
};
template <>
struct DTypeTraits<LOOM_DTYPE_STRING> {
  using type = loom_string_t;
};

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
//   dispatch<kNumeric>(t.dtype, ctx, [&]<typename T>() { ... });
// Other dtypes throw LOOM_ERROR_UNSUPPORTED naming `what`: a string, or an object with where()
// (a kernel context), asked only then: building the node's name on every call cost more than
// the small kernels it named.
enum DTypeGroup : unsigned {
  kFloats = 1u,        // float32, float64, float16, bfloat16
  kSignedInts = 2u,    // int8..int64
  kUnsignedInts = 4u,  // uint8..uint64
  kBool = 8u,
  kString = 16u,
  kNumeric = kFloats | kSignedInts | kUnsignedInts,
  kAll = kNumeric | kBool | kString,
};

// Throws LOOM_ERROR_UNSUPPORTED: "<what>: element type <dtype> is not supported". Out of line:
// every instantiation of dispatch ends in it (kernel_registry.cpp).
[[noreturn]] void fail_unsupported_dtype(const std::string& what, loom_dtype_t dtype);

template <typename What>
std::string what_text(const What& what) {
  if constexpr (requires { what.where(); })
    return what.where();
  else
    return std::string(what);
}

template <unsigned Groups, typename What, typename Fn>
decltype(auto) dispatch(loom_dtype_t dtype, const What& what, Fn&& fn) {
  switch (dtype) {
#define LOOM_CPU_CASE(D, G)                                           \
  case D:                                                             \
    if constexpr ((Groups & (G)) != 0) {                              \
      return fn.template operator()<typename DTypeTraits<D>::type>(); \
    }                                                                 \
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
  fail_unsupported_dtype(what_text(what), dtype);
}

}  // namespace loom::cpu
