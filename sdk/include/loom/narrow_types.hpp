// The narrow element types of ONNX 1.14-1.23 (plugin ABI 1.6): float8 (e4m3fn, e4m3fnuz,
// e5m2, e5m2fnuz), float8e8m0, float4e2m1, float6 (e2m3, e3m2) and the 4- and 2-bit integers.
//
// In Loom's memory every one of them takes ONE BYTE PER ELEMENT (like numpy's ml_dtypes): a
// float type holds its bit pattern in the low bits of the byte, int4/int2 are sign-extended to
// the whole byte and uint4/uint2 are zero-extended. ONNX files pack the sub-byte types (two
// 4-bit values per byte, four 2-bit values, four 6-bit values in three bytes, low bits first);
// pack()/unpack() convert between the two.
//
// The conversions follow the ONNX reference implementation (onnx/reference/ops/op_cast.py,
// onnx.numpy_helper): round to nearest even, Cast-19's `saturate` for the float8 types, and
// Cast-24's `round_mode` for float8e8m0. Header-only so that every plugin (and the apps)
// decode these types the same way.
#pragma once

#include <loom/plugin.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace loom::sdk::narrow {

// ---- classification ---------------------------------------------------------------------

constexpr bool is_narrow_float(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT8E4M3FN:
    case LOOM_DTYPE_FLOAT8E4M3FNUZ:
    case LOOM_DTYPE_FLOAT8E5M2:
    case LOOM_DTYPE_FLOAT8E5M2FNUZ:
    case LOOM_DTYPE_FLOAT4E2M1:
    case LOOM_DTYPE_FLOAT8E8M0:
    case LOOM_DTYPE_FLOAT6E2M3:
    case LOOM_DTYPE_FLOAT6E3M2:
      return true;
    default:
      return false;
  }
}

constexpr bool is_narrow_int(loom_dtype_t t) {
  return t == LOOM_DTYPE_INT4 || t == LOOM_DTYPE_UINT4 || t == LOOM_DTYPE_INT2 ||
         t == LOOM_DTYPE_UINT2;
}

// One of the twelve dtypes of ABI 1.6 (all one byte per element in memory).
constexpr bool is_narrow(loom_dtype_t t) {
  return is_narrow_float(t) || is_narrow_int(t);
}

// Bits per element in an ONNX file (raw_data); 0 for a dtype that is not narrow.
constexpr int packed_bits(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT8E4M3FN:
    case LOOM_DTYPE_FLOAT8E4M3FNUZ:
    case LOOM_DTYPE_FLOAT8E5M2:
    case LOOM_DTYPE_FLOAT8E5M2FNUZ:
    case LOOM_DTYPE_FLOAT8E8M0:
      return 8;
    case LOOM_DTYPE_FLOAT6E2M3:
    case LOOM_DTYPE_FLOAT6E3M2:
      return 6;
    case LOOM_DTYPE_UINT4:
    case LOOM_DTYPE_INT4:
    case LOOM_DTYPE_FLOAT4E2M1:
      return 4;
    case LOOM_DTYPE_UINT2:
    case LOOM_DTYPE_INT2:
      return 2;
    default:
      return 0;
  }
}

// Bits of one element as ONNX counts them (BitCast's "same width"): the packed width for the
// narrow types, 8 x the storage size otherwise (bool 8, complex64 64); 0 for string/undefined.
constexpr int element_bits(loom_dtype_t t) {
  if (int bits = packed_bits(t)) return bits;
  switch (t) {
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_BOOL:
      return 8;
    case LOOM_DTYPE_UINT16:
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return 16;
    case LOOM_DTYPE_UINT32:
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_FLOAT32:
      return 32;
    case LOOM_DTYPE_UINT64:
    case LOOM_DTYPE_INT64:
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_COMPLEX64:
      return 64;
    case LOOM_DTYPE_COMPLEX128:
      return 128;
    default:
      return 0;
  }
}

// The bits of a byte that an element of `t` uses (0xFF for the 8-bit types).
constexpr uint8_t value_mask(loom_dtype_t t) {
  int bits = packed_bits(t);
  return bits >= 8 ? uint8_t{0xFF} : static_cast<uint8_t>((1u << bits) - 1u);
}

// ---- integers ---------------------------------------------------------------------------

constexpr bool is_signed_int(loom_dtype_t t) {
  return t == LOOM_DTYPE_INT4 || t == LOOM_DTYPE_INT2;
}
constexpr int int_min(loom_dtype_t t) {
  return t == LOOM_DTYPE_INT4 ? -8 : t == LOOM_DTYPE_INT2 ? -2 : 0;
}
constexpr int int_max(loom_dtype_t t) {
  return t == LOOM_DTYPE_INT4 ? 7 : t == LOOM_DTYPE_UINT4 ? 15 : t == LOOM_DTYPE_INT2 ? 1 : 3;
}

// The in-memory byte of a narrow integer from its low bits (sign-extending int4/int2).
constexpr uint8_t int_from_bits(loom_dtype_t t, uint8_t bits) {
  const int width = packed_bits(t);
  const unsigned mask = (1u << width) - 1u;
  unsigned v = bits & mask;
  if (is_signed_int(t) && (v >> (width - 1)) != 0) v |= ~mask;  // sign-extend to the byte
  return static_cast<uint8_t>(v);
}

// The value of an in-memory narrow integer byte (tolerates a byte that is not normalized).
constexpr int int_value(loom_dtype_t t, uint8_t byte) {
  uint8_t b = int_from_bits(t, byte);
  return is_signed_int(t) ? static_cast<int>(static_cast<int8_t>(b)) : static_cast<int>(b);
}

// An integer wrapped modulo 2^bits, as numpy's astype(int4) does (two's complement).
constexpr uint8_t int_wrap(loom_dtype_t t, int64_t v) {
  return int_from_bits(t, static_cast<uint8_t>(static_cast<uint64_t>(v) & 0xFFu));
}

// An integer clamped to the type's range (QuantizeLinear, saturating casts).
constexpr uint8_t int_saturate(loom_dtype_t t, int64_t v) {
  if (v < int_min(t)) v = int_min(t);
  if (v > int_max(t)) v = int_max(t);
  return int_wrap(t, v);
}

// ---- floats -----------------------------------------------------------------------------

// Layout of a small float format with a sign bit (all but e8m0).
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  enum Special { kNone, kIeee, kAllOnesNan, kNegZeroNan } special;
  // kNone: every pattern is finite (float4, float6), overflow saturates.
  // kIeee: exponent all ones is inf (mantissa 0) or NaN (e5m2).
  // kAllOnesNan: exponent and mantissa all ones is NaN, no inf (e4m3fn).
  // kNegZeroNan: the pattern of -0 is the one NaN, no inf and no -0 (the fnuz types).
  uint8_t max_code;  // largest finite magnitude pattern (without the sign bit)
};

constexpr std::optional<MiniFloat> minifloat(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT8E4M3FN:
      return MiniFloat{4, 3, 7, MiniFloat::kAllOnesNan, 0x7E};  // 448
    case LOOM_DTYPE_FLOAT8E4M3FNUZ:
      return MiniFloat{4, 3, 8, MiniFloat::kNegZeroNan, 0x7F};  // 240
    case LOOM_DTYPE_FLOAT8E5M2:
      return MiniFloat{5, 2, 15, MiniFloat::kIeee, 0x7B};  // 57344
    case LOOM_DTYPE_FLOAT8E5M2FNUZ:
      return MiniFloat{5, 2, 16, MiniFloat::kNegZeroNan, 0x7F};  // 57344
    case LOOM_DTYPE_FLOAT4E2M1:
      return MiniFloat{2, 1, 1, MiniFloat::kNone, 0x7};  // 6
    case LOOM_DTYPE_FLOAT6E2M3:
      return MiniFloat{2, 3, 1, MiniFloat::kNone, 0x1F};  // 7.5
    case LOOM_DTYPE_FLOAT6E3M2:
      return MiniFloat{3, 2, 3, MiniFloat::kNone, 0x1F};  // 28
    default:
      return std::nullopt;
  }
}

inline float decode_minifloat(const MiniFloat& f, uint8_t byte) {
  const unsigned width = 1u + static_cast<unsigned>(f.exp_bits + f.man_bits);
  const unsigned bits = byte & ((1u << width) - 1u);
  const unsigned sign_bit = 1u << (width - 1);
  const unsigned mag = bits & (sign_bit - 1u);
  const bool negative = (bits & sign_bit) != 0;
  const unsigned exp_all = (1u << f.exp_bits) - 1u;
  const unsigned man_all = (1u << f.man_bits) - 1u;
  const unsigned e = mag >> f.man_bits;
  const unsigned m = mag & man_all;
  switch (f.special) {
    case MiniFloat::kIeee:
      if (e == exp_all)
        return m == 0 ? (negative ? -std::numeric_limits<float>::infinity()
                                  : std::numeric_limits<float>::infinity())
                      : std::numeric_limits<float>::quiet_NaN();
      break;
    case MiniFloat::kAllOnesNan:
      if (e == exp_all && m == man_all) return std::numeric_limits<float>::quiet_NaN();
      break;
    case MiniFloat::kNegZeroNan:
      if (bits == sign_bit) return std::numeric_limits<float>::quiet_NaN();
      break;
    case MiniFloat::kNone:
      break;
  }
  // Exact in float: at most 4 significant bits and exponents well inside float's range.
  float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.man_bits)
                   : std::ldexp(static_cast<float>(m | (man_all + 1u)),
                                static_cast<int>(e) - f.bias - f.man_bits);
  return negative ? -v : v;
}

// The pattern of a NaN (sign kept where the format has signed NaNs, as ml_dtypes does).
inline uint8_t minifloat_nan(const MiniFloat& f, bool negative) {
  const unsigned sign_bit = 1u << (f.exp_bits + f.man_bits);
  switch (f.special) {
    case MiniFloat::kIeee:  // quiet NaN: exponent all ones, top mantissa bit set
      return static_cast<uint8_t>((negative ? sign_bit : 0u) |
                                  (((1u << f.exp_bits) - 1u) << f.man_bits) |
                                  (1u << (f.man_bits - 1)));
    case MiniFloat::kAllOnesNan:
      return static_cast<uint8_t>((negative ? sign_bit : 0u) | (sign_bit - 1u));
    case MiniFloat::kNegZeroNan:
      return static_cast<uint8_t>(sign_bit);
    case MiniFloat::kNone:
      break;
  }
  // No NaN to give: ml_dtypes (the ONNX reference) yields the pattern of the opposite sign's
  // zero; kept so that results match the reference bit for bit.
  return static_cast<uint8_t>(negative ? 0u : sign_bit);
}

// Rounds `x` to the nearest representable value (ties to even). Out of range: `saturate` gives
// the largest finite value of the same sign; otherwise inf where the format has it, else NaN,
// and for the formats without NaN (float4, float6) the largest finite value regardless.
// Infinite inputs follow the same rule (Cast-19's table); NaN stays NaN.
inline uint8_t encode_minifloat(const MiniFloat& f, double x, bool saturate) {
  const unsigned sign_bit = 1u << (f.exp_bits + f.man_bits);
  const bool negative = std::signbit(x);
  if (std::isnan(x)) return minifloat_nan(f, negative);
  const uint8_t sign = negative ? static_cast<uint8_t>(sign_bit) : uint8_t{0};
  const double a = std::fabs(x);
  auto overflow = [&]() -> uint8_t {
    if (saturate || f.special == MiniFloat::kNone) return static_cast<uint8_t>(sign | f.max_code);
    if (f.special == MiniFloat::kIeee)
      return static_cast<uint8_t>(sign | (((1u << f.exp_bits) - 1u) << f.man_bits));
    return minifloat_nan(f, negative);
  };
  if (std::isinf(a)) return overflow();
  if (a == 0) return f.special == MiniFloat::kNegZeroNan ? uint8_t{0} : sign;
  const int emin = 1 - f.bias;  // exponent of the smallest normal
  int e2 = 0;
  (void)std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  int exp = e2 - 1 < emin ? emin : e2 - 1;
  if (exp > 64) return overflow();  // far beyond every format; keeps the shifts below sane
  // n = a / 2^(exp - man_bits): the significand in units of the last place, < 2^(man_bits+1).
  const double n = std::ldexp(a, f.man_bits - exp);
  double r = std::floor(n);
  const double rest = n - r;  // exact: n has far fewer than 53 integer bits
  if (rest > 0.5 || (rest == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  uint64_t q = static_cast<uint64_t>(r);
  if (q == (uint64_t{2} << f.man_bits)) {  // rounded up into the next binade
    q >>= 1;
    ++exp;
  }
  uint64_t code;
  if (q < (uint64_t{1} << f.man_bits)) {  // subnormal (only when exp == emin), or zero
    code = q;
  } else {
    code = (static_cast<uint64_t>(exp + f.bias) << f.man_bits) | (q - (uint64_t{1} << f.man_bits));
  }
  if (code > f.max_code) return overflow();
  if (code == 0 && f.special == MiniFloat::kNegZeroNan) return 0;  // no -0: rounds to +0
  return static_cast<uint8_t>(sign | code);
}

// float8e8m0: 2^(byte - 127), 0xFF is NaN; there is no sign and no zero.
enum class E8M0Rounding { kUp, kDown, kNearest };

inline float decode_e8m0(uint8_t byte) {
  if (byte == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(byte) - 127);  // 2^-127 is a float subnormal
}

// Cast-24: the float32's exponent field, rounded up, down or to nearest by its mantissa. The
// sign is dropped; NaN and inf give NaN; `saturate` stops rounding at 2^127 instead of NaN.
// Matches onnx.numpy_helper.to_float8e8m0, including its tie rule for "nearest".
inline uint8_t encode_e8m0(float x, bool saturate, E8M0Rounding mode) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  unsigned exponent = (bits >> 23) & 0xFFu;
  if (exponent == 0xFFu) return 0xFF;
  bool up = false;
  if (mode == E8M0Rounding::kUp) {
    up = (bits & 0x7FFFFFu) != 0;
  } else if (mode == E8M0Rounding::kNearest) {
    const bool guard = (bits & 0x400000u) != 0;
    const bool round = (bits & 0x200000u) != 0;
    const bool sticky = (bits & 0x1FFFFFu) != 0;
    const bool lsb = exponent > 0;
    up = guard && (round || sticky || lsb);
  }
  if (up && !(saturate && exponent == 0xFEu)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

// Cast-24's round_mode attribute ("up", "down", "nearest"); nullopt for anything else.
inline std::optional<E8M0Rounding> parse_e8m0_rounding(std::string_view s) {
  if (s == "up") return E8M0Rounding::kUp;
  if (s == "down") return E8M0Rounding::kDown;
  if (s == "nearest") return E8M0Rounding::kNearest;
  return std::nullopt;
}

// ---- any narrow type --------------------------------------------------------------------

// The value of one in-memory element of a narrow dtype as float (exact for every type).
inline float to_float(loom_dtype_t t, uint8_t byte) {
  if (auto f = minifloat(t)) return decode_minifloat(*f, byte);
  if (t == LOOM_DTYPE_FLOAT8E8M0) return decode_e8m0(byte);
  if (is_narrow_int(t)) return static_cast<float>(int_value(t, byte));
  return std::numeric_limits<float>::quiet_NaN();
}

// The in-memory element of narrow float dtype `t` nearest to `x`. `saturate` and `mode` as in
// Cast-24 (mode only matters for e8m0, which sees `x` rounded to float32 first, like the
// reference). For narrow integers use int_wrap/int_saturate.
inline uint8_t from_double(loom_dtype_t t, double x, bool saturate = true,
                           E8M0Rounding mode = E8M0Rounding::kUp) {
  if (auto f = minifloat(t)) return encode_minifloat(*f, x, saturate);
  if (t == LOOM_DTYPE_FLOAT8E8M0) return encode_e8m0(static_cast<float>(x), saturate, mode);
  return 0;
}

// A 256-entry decoding table, for kernels that convert many elements.
struct DecodeTable {
  float value[256];
  explicit DecodeTable(loom_dtype_t t) {
    for (unsigned b = 0; b < 256; ++b) value[b] = to_float(t, static_cast<uint8_t>(b));
  }
  float operator()(uint8_t b) const { return value[b]; }
};

// ---- packing (ONNX raw_data) ------------------------------------------------------------

// Bytes that `count` packed elements of narrow dtype `t` take in an ONNX file:
// ceil(count * bits / 8); nullopt on overflow or for a dtype that is not narrow.
inline std::optional<size_t> packed_size(loom_dtype_t t, uint64_t count) {
  const int bits = packed_bits(t);
  if (bits == 0) return std::nullopt;
  if (count > std::numeric_limits<uint64_t>::max() / 8) return std::nullopt;
  const uint64_t bytes = (count * static_cast<uint64_t>(bits) + 7) / 8;
  if (bytes > std::numeric_limits<size_t>::max()) return std::nullopt;
  return static_cast<size_t>(bytes);
}

// The in-memory byte of an element from the `packed_bits` bits read from a file.
inline uint8_t from_packed_bits(loom_dtype_t t, uint8_t bits) {
  return is_narrow_int(t) ? int_from_bits(t, bits) : static_cast<uint8_t>(bits & value_mask(t));
}

// Unpacks `count` elements from `packed` (packed_size(t, count) bytes; the caller checks that)
// into `out` (count bytes). Low bits first; 6-bit values fill 3 bytes per 4 elements.
inline void unpack(loom_dtype_t t, const uint8_t* packed, uint64_t count, uint8_t* out) {
  const int bits = packed_bits(t);
  if (bits == 8) {
    if (count) std::memcpy(out, packed, static_cast<size_t>(count));
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t bit = i * static_cast<uint64_t>(bits);
    const uint64_t byte = bit / 8;
    const unsigned shift = static_cast<unsigned>(bit % 8);
    unsigned v = packed[byte] >> shift;
    if (shift + static_cast<unsigned>(bits) > 8)
      v |= static_cast<unsigned>(packed[byte + 1]) << (8 - shift);
    out[i] = from_packed_bits(t, static_cast<uint8_t>(v));
  }
}

// Packs `count` in-memory elements into `packed` (packed_size(t, count) bytes); unused high
// bits of the last byte are zero.
inline void pack(loom_dtype_t t, const uint8_t* in, uint64_t count, uint8_t* packed) {
  const int bits = packed_bits(t);
  if (bits == 8) {
    if (count) std::memcpy(packed, in, static_cast<size_t>(count));
    return;
  }
  const auto size = packed_size(t, count);
  if (size && *size) std::memset(packed, 0, *size);
  const unsigned mask = value_mask(t);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t bit = i * static_cast<uint64_t>(bits);
    const uint64_t byte = bit / 8;
    const unsigned shift = static_cast<unsigned>(bit % 8);
    const unsigned v = in[i] & mask;
    packed[byte] = static_cast<uint8_t>(packed[byte] | (v << shift));
    if (shift + static_cast<unsigned>(bits) > 8)
      packed[byte + 1] = static_cast<uint8_t>(packed[byte + 1] | (v >> (8 - shift)));
  }
}

}  // namespace loom::sdk::narrow
