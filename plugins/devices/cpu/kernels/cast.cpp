// Cast, CastLike and Identity.
//
// Conversions follow numpy's astype where C++ leaves behaviour undefined: floats to integers
// truncate toward zero and saturate at the target's range (NaN becomes 0) instead of invoking
// undefined behaviour; integers to narrower integers wrap (two's complement); anything to bool
// is "!= 0"; float16/bfloat16 convert through float with round-to-nearest-even. Strings parse
// with strtod/strtoll (accepting "inf", "-INF", "NaN" in any case) and numbers print in the
// shortest form that reads back exactly (std::to_chars), like numpy's str().
//
// The narrow types of ABI 1.6 (float8, float4, float6, e8m0, int4, int2; a byte per element)
// convert through their exact value (loom/narrow_types.hpp): to the float8 types with Cast-19's
// `saturate`, to float8e8m0 with Cast-24's `round_mode`; to int4/int2 like numpy/ml_dtypes
// (truncate toward zero, then wrap modulo 2^bits, as the ONNX reference does).
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <loom/narrow_types.hpp>
#include <string>
#include <type_traits>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

template <typename To, typename From>
To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return convert<compute_t<From>>(v) != compute_t<From>(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return convert<To>(static_cast<uint8_t>(v ? 1 : 0));
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
    double d = convert<double>(v);
    if (std::isnan(d)) return To(0);
    // Both limits as doubles: max() of 64-bit types rounds up to 2^63 / 2^64, hence >=.
    constexpr double kMax = static_cast<double>(std::numeric_limits<To>::max());
    constexpr double kMin = static_cast<double>(std::numeric_limits<To>::lowest());
    if (d >= kMax) return std::numeric_limits<To>::max();
    if (d <= kMin) return std::numeric_limits<To>::lowest();
    return static_cast<To>(d);
  } else if constexpr (is_half_like_v<To> && std::is_same_v<From, double>) {
    return To(static_cast<float>(v));
  } else {
    return convert<To>(v);
  }
}

template <typename From>
std::string to_text(From v) {
  if constexpr (std::is_same_v<From, bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_integral_v<From>) {
    return std::to_string(v);
  } else {
    auto c = convert<compute_t<From>>(v);
    if (std::isnan(c)) return "NaN";
    if (std::isinf(c)) return c > 0 ? "INF" : "-INF";
    char buffer[64];
    auto result = std::to_chars(buffer, buffer + sizeof buffer, c);
    return std::string(buffer, result.ptr);
  }
}

template <typename To>
To from_text(const KernelContext& ctx, const loom_string_t& s) {
  std::string text(s.data ? s.data : "", s.size);
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  To value{};
  if constexpr (std::is_same_v<To, bool>) {
    double d = std::strtod(begin, &end);
    value = d != 0.0;
  } else if constexpr (std::is_integral_v<To> && std::is_signed_v<To>) {
    long long n = std::strtoll(begin, &end, 10);
    value = static_cast<To>(n);
  } else if constexpr (std::is_integral_v<To>) {
    unsigned long long n = std::strtoull(begin, &end, 10);
    value = static_cast<To>(n);
  } else {
    double d = std::strtod(begin, &end);  // accepts inf/INF/nan/NaN
    value = cast_value<To>(d);
  }
  while (end && *end == ' ') ++end;
  if (end == begin || (end && *end != '\0'))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot convert the string '" + text +
                                          "' to " + sdk::dtype_name(dtype_of<To>()));
  return value;
}

namespace nt = sdk::narrow;

// How a conversion to a narrow type rounds (Cast-19 saturate, Cast-24 round_mode).
struct NarrowOptions {
  bool saturate = true;
  nt::E8M0Rounding rounding = nt::E8M0Rounding::kUp;
};

// A float value to a narrow integer: truncated toward zero then wrapped, NaN and infinities 0
// (what ml_dtypes, the ONNX reference, gives).
uint8_t float_to_narrow_int(loom_dtype_t to, double d) {
  if (!std::isfinite(d)) return 0;
  d = std::trunc(d);
  // Only the value modulo 2^bits matters; fmod keeps it exact for any magnitude.
  return nt::int_wrap(to, static_cast<int64_t>(std::fmod(d, 256.0)));
}

// A value of any non-narrow type to the narrow type `to`.
template <typename From>
uint8_t to_narrow(From v, loom_dtype_t to, const NarrowOptions& o) {
  if constexpr (std::is_same_v<From, bool>) {
    return to_narrow<uint8_t>(v ? 1 : 0, to, o);
  } else if constexpr (std::is_integral_v<From>) {
    if (nt::is_narrow_int(to)) return nt::int_wrap(to, static_cast<int64_t>(v));
    return nt::from_double(to, static_cast<double>(v), o.saturate, o.rounding);
  } else {
    const double d = convert<double>(v);
    if (nt::is_narrow_int(to)) return float_to_narrow_int(to, d);
    return nt::from_double(to, d, o.saturate, o.rounding);
  }
}

// Casts where the input, the output or both are narrow.
void cast_narrow(KernelContext& ctx, const loom_tensor_t& in, loom_dtype_t to,
                 const NarrowOptions& o) {
  const size_t n = static_cast<size_t>(sdk::element_count(in));
  if (to == LOOM_DTYPE_STRING) {  // the value's text, like any float or integer
    Tensor result = make_tensor(LOOM_DTYPE_STRING, sdk::shape_of(in));
    auto* views = static_cast<loom_string_t*>(result.view.data);
    const auto* src = static_cast<const uint8_t*>(in.data);
    for (size_t i = 0; i < n; ++i) {
      if (nt::is_narrow_int(in.dtype))
        (*result.strings)[i] = std::to_string(nt::int_value(in.dtype, src[i]));
      else
        (*result.strings)[i] = to_text(nt::to_float(in.dtype, src[i]));
      views[i] = {(*result.strings)[i].data(), (*result.strings)[i].size()};
    }
    ctx.set_output(0, std::move(result));
    return;
  }
  loom_tensor_t& out = ctx.allocate_output(0, to, sdk::shape_of(in));
  if (in.dtype == LOOM_DTYPE_STRING) {
    const auto* src = static_cast<const loom_string_t*>(in.data);
    auto* dst = static_cast<uint8_t*>(out.data);
    for (size_t i = 0; i < n; ++i) dst[i] = to_narrow(from_text<double>(ctx, src[i]), to, o);
    return;
  }
  if (nt::is_narrow(in.dtype)) {
    const nt::DecodeTable table(in.dtype);  // exact values: float for floats, small integers
    const auto* src = static_cast<const uint8_t*>(in.data);
    if (nt::is_narrow(to)) {
      auto* dst = static_cast<uint8_t*>(out.data);
      uint8_t map[256];  // one input byte gives one output byte: convert each pattern once
      for (unsigned b = 0; b < 256; ++b)
        map[b] = nt::is_narrow_int(in.dtype)
                     ? to_narrow<int32_t>(nt::int_value(in.dtype, static_cast<uint8_t>(b)), to, o)
                     : to_narrow<float>(table(static_cast<uint8_t>(b)), to, o);
      for (size_t i = 0; i < n; ++i) dst[i] = map[src[i]];
      return;
    }
    dispatch<kNumeric | kBool>(to, ctx, [&]<typename To>() {
      To* dst = static_cast<To*>(out.data);
      if (nt::is_narrow_int(in.dtype)) {
        for (size_t i = 0; i < n; ++i)
          dst[i] = cast_value<To, int32_t>(nt::int_value(in.dtype, src[i]));
      } else {
        for (size_t i = 0; i < n; ++i) dst[i] = cast_value<To, float>(table(src[i]));
      }
    });
    return;
  }
  dispatch<kNumeric | kBool>(in.dtype, ctx, [&]<typename From>() {
    map_unary<From, uint8_t>(ctx, in, out, [&](From v) { return to_narrow<From>(v, to, o); });
  });
}

// Converts `in` to `to` and sets it as output 0.
void cast_to(KernelContext& ctx, const loom_tensor_t& in, loom_dtype_t to,
             const NarrowOptions& narrow = {}) {
  if (in.dtype == to) {  // nothing to convert: share the input
    ctx.set_output(0, *ctx.input_tensor(0));
    return;
  }
  if (nt::is_narrow(in.dtype) || nt::is_narrow(to)) return cast_narrow(ctx, in, to, narrow);
  if (to == LOOM_DTYPE_STRING) {
    Tensor result = make_tensor(LOOM_DTYPE_STRING, sdk::shape_of(in));
    auto* views = static_cast<loom_string_t*>(result.view.data);
    size_t n = static_cast<size_t>(sdk::element_count(in));
    dispatch<kNumeric | kBool>(in.dtype, ctx, [&]<typename From>() {
      const From* src = static_cast<const From*>(in.data);
      for (size_t i = 0; i < n; ++i) (*result.strings)[i] = to_text(src[i]);
    });
    for (size_t i = 0; i < n; ++i)
      views[i] = {(*result.strings)[i].data(), (*result.strings)[i].size()};
    ctx.set_output(0, std::move(result));
    return;
  }
  loom_tensor_t& out = ctx.allocate_output(0, to, sdk::shape_of(in));
  if (in.dtype == LOOM_DTYPE_STRING) {
    dispatch<kNumeric | kBool>(to, ctx, [&]<typename To>() {
      const auto* src = static_cast<const loom_string_t*>(in.data);
      To* dst = static_cast<To*>(out.data);
      size_t n = static_cast<size_t>(sdk::element_count(in));
      for (size_t i = 0; i < n; ++i) dst[i] = from_text<To>(ctx, src[i]);
    });
    return;
  }
  dispatch<kNumeric | kBool>(in.dtype, ctx, [&]<typename From>() {
    dispatch<kNumeric | kBool>(to, ctx, [&]<typename To>() {
      map_unary<From, To>(ctx, in, out, [](From v) { return cast_value<To, From>(v); });
    });
  });
}

// `saturate` (opset 19, default 1) and `round_mode` (opset 24, default "up").
NarrowOptions narrow_options(const KernelContext& ctx) {
  NarrowOptions o;
  o.saturate = ctx.attrs().get_int("saturate", 1) != 0;
  const std::string mode = ctx.attrs().get_string("round_mode", "up");
  auto rounding = nt::parse_e8m0_rounding(mode);
  if (!rounding)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": attribute round_mode = '" + mode + "' is not one of up, down, nearest");
  o.rounding = *rounding;
  return o;
}

void cast_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  if (!ctx.attrs().has("to"))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'to' is missing");
  auto to = static_cast<loom_dtype_t>(ctx.attrs().get_int("to", 0));
  if (sdk::dtype_size(to) == 0 || to == LOOM_DTYPE_COMPLEX64 || to == LOOM_DTYPE_COMPLEX128)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": cannot cast to " + sdk::dtype_name(to) +
                                     " (type " + std::to_string(static_cast<int>(to)) + ")");
  cast_to(ctx, in, to, narrow_options(ctx));
}

void cast_like_kernel(KernelContext& ctx) {
  cast_to(ctx, ctx.required_input(0), ctx.required_input(1).dtype, narrow_options(ctx));
}

// Identity shares its input's memory; nothing is copied.
void identity_kernel(KernelContext& ctx) {
  ctx.required_input(0);
  ctx.set_output(0, *ctx.input_tensor(0));
}

LOOM_CPU_KERNEL("Cast", 6, cast_kernel, nullptr);
LOOM_CPU_KERNEL("CastLike", 15, cast_like_kernel, nullptr);
LOOM_CPU_KERNEL("Identity", 1, identity_kernel, nullptr);

}  // namespace
}  // namespace loom::cpu
