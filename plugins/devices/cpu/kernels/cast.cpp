// Cast, CastLike and Identity.
//
// Conversions follow numpy's astype where C++ leaves behaviour undefined: floats to integers
// truncate toward zero and saturate at the target's range (NaN becomes 0) instead of invoking
// undefined behaviour; integers to narrower integers wrap (two's complement); anything to bool
// is "!= 0"; float16/bfloat16 convert through float with round-to-nearest-even. Strings parse
// with strtod/strtoll (accepting "inf", "-INF", "NaN" in any case) and numbers print in the
// shortest form that reads back exactly (std::to_chars), like numpy's str().
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
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

// Converts `in` to `to` and sets it as output 0.
void cast_to(KernelContext& ctx, const loom_tensor_t& in, loom_dtype_t to) {
  if (in.dtype == to) {  // nothing to convert: share the input
    ctx.set_output(0, *ctx.input_tensor(0));
    return;
  }
  if (to == LOOM_DTYPE_STRING) {
    Tensor result = make_tensor(LOOM_DTYPE_STRING, sdk::shape_of(in));
    auto* views = static_cast<loom_string_t*>(result.view.data);
    size_t n = static_cast<size_t>(sdk::element_count(in));
    dispatch<kNumeric | kBool>(in.dtype, ctx.where(), [&]<typename From>() {
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
    dispatch<kNumeric | kBool>(to, ctx.where(), [&]<typename To>() {
      const auto* src = static_cast<const loom_string_t*>(in.data);
      To* dst = static_cast<To*>(out.data);
      size_t n = static_cast<size_t>(sdk::element_count(in));
      for (size_t i = 0; i < n; ++i) dst[i] = from_text<To>(ctx, src[i]);
    });
    return;
  }
  dispatch<kNumeric | kBool>(in.dtype, ctx.where(), [&]<typename From>() {
    dispatch<kNumeric | kBool>(to, ctx.where(), [&]<typename To>() {
      map_unary<From, To>(ctx, in, out, [](From v) { return cast_value<To, From>(v); });
    });
  });
}

void cast_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  if (!ctx.attrs().has("to"))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'to' is missing");
  auto to = static_cast<loom_dtype_t>(ctx.attrs().get_int("to", 0));
  if (sdk::dtype_size(to) == 0 || to == LOOM_DTYPE_COMPLEX64 || to == LOOM_DTYPE_COMPLEX128)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": cannot cast to " + sdk::dtype_name(to) +
                                     " (type " + std::to_string(static_cast<int>(to)) + ")");
  cast_to(ctx, in, to);
}

void cast_like_kernel(KernelContext& ctx) {
  cast_to(ctx, ctx.required_input(0), ctx.required_input(1).dtype);
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
