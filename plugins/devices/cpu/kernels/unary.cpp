// Elementwise unary math: Abs Neg Reciprocal Floor Ceil Round Sqrt Exp Log, the trigonometric
// and hyperbolic functions, Erf Sign IsNaN IsInf Not BitwiseNot. float16/bfloat16 compute in
// float; float32 and float64 in their own precision.
#include <cmath>
#include <type_traits>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

// out = f(x) over the float types; f receives and returns float or double.
template <typename F>
void float_unary(KernelContext& ctx, F f) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    map_unary<T, T>(ctx, x, out, [&](T v) { return convert<T>(static_cast<C>(f(convert<C>(v)))); });
  });
}

// Defines and registers a float-only unary kernel from an expression in `x`.
#define LOOM_CPU_FLOAT_UNARY(op, since, expr)      \
  void op##_kernel(KernelContext& ctx) {           \
    float_unary(ctx, [](auto x) { return expr; }); \
  }                                                \
  LOOM_CPU_KERNEL(#op, since, op##_kernel, nullptr)

// Opset 1 versions differ only by the ignored legacy `consumed_inputs` attribute.
LOOM_CPU_FLOAT_UNARY(Reciprocal, 1, decltype(x)(1) / x);
LOOM_CPU_FLOAT_UNARY(Floor, 1, std::floor(x));
LOOM_CPU_FLOAT_UNARY(Ceil, 1, std::ceil(x));
LOOM_CPU_FLOAT_UNARY(Round, 11, std::nearbyint(x));  // halves to even (default rounding mode)
LOOM_CPU_FLOAT_UNARY(Sqrt, 1, std::sqrt(x));
LOOM_CPU_FLOAT_UNARY(Exp, 1, std::exp(x));
LOOM_CPU_FLOAT_UNARY(Log, 1, std::log(x));
LOOM_CPU_FLOAT_UNARY(Sin, 7, std::sin(x));
LOOM_CPU_FLOAT_UNARY(Cos, 7, std::cos(x));
LOOM_CPU_FLOAT_UNARY(Tan, 7, std::tan(x));
LOOM_CPU_FLOAT_UNARY(Asin, 7, std::asin(x));
LOOM_CPU_FLOAT_UNARY(Acos, 7, std::acos(x));
LOOM_CPU_FLOAT_UNARY(Atan, 7, std::atan(x));
LOOM_CPU_FLOAT_UNARY(Sinh, 9, std::sinh(x));
LOOM_CPU_FLOAT_UNARY(Cosh, 9, std::cosh(x));
LOOM_CPU_FLOAT_UNARY(Asinh, 9, std::asinh(x));
LOOM_CPU_FLOAT_UNARY(Acosh, 9, std::acosh(x));
LOOM_CPU_FLOAT_UNARY(Atanh, 9, std::atanh(x));

#undef LOOM_CPU_FLOAT_UNARY

// ---- ops over all numeric types -----------------------------------------------------------

// |x| and -x of integers wrap at the minimum like two's complement hardware does.
template <typename T>
T negate(T v) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(v)));
  } else {
    return -v;
  }
}

void abs_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kNumeric>(x.dtype, ctx, [&]<typename T>() {
    map_unary<T, T>(ctx, x, out, [](T v) {
      if constexpr (std::is_unsigned_v<T>)
        return v;
      else if constexpr (is_half_like_v<T>)
        return convert<T>(std::fabs(convert<float>(v)));
      else
        return v < T(0) ? negate(v) : v;
    });
  });
}

void neg_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats | kSignedInts>(x.dtype, ctx, [&]<typename T>() {
    map_unary<T, T>(ctx, x, out, [](T v) {
      if constexpr (is_half_like_v<T>)
        return convert<T>(-convert<float>(v));
      else
        return negate(v);
    });
  });
}

void sign_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kNumeric>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    map_unary<T, T>(ctx, x, out, [](T v) {
      C c = convert<C>(v);
      if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(c)) return v;  // sign(NaN) is NaN
      }
      return convert<T>(static_cast<C>(c > C(0) ? 1 : (c < C(0) ? -1 : 0)));
    });
  });
}

// Erf accepts every numeric type since opset 13; integers go through double.
void erf_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kNumeric>(x.dtype, ctx, [&]<typename T>() {
    using C = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;
    map_unary<T, T>(ctx, x, out, [](T v) {
      C r = std::erf(convert<C>(v));
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(std::nearbyint(r));
      else
        return convert<T>(r);
    });
  });
}

// ---- predicates ---------------------------------------------------------------------------

void isnan_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_BOOL, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    map_unary<T, bool>(ctx, x, out, [](T v) { return std::isnan(convert<compute_t<T>>(v)); });
  });
}

void isinf_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const bool positive = ctx.attrs().get_int("detect_positive", 1) != 0;
  const bool negative = ctx.attrs().get_int("detect_negative", 1) != 0;
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_BOOL, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    map_unary<T, bool>(ctx, x, out, [=](T v) {
      auto c = convert<compute_t<T>>(v);
      return std::isinf(c) && (c > 0 ? positive : negative);
    });
  });
}

// ---- logical and bitwise not --------------------------------------------------------------

void not_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.dtype != LOOM_DTYPE_BOOL)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input must be bool, not " + sdk::dtype_name(x.dtype));
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_BOOL, sdk::shape_of(x));
  map_unary<uint8_t, uint8_t>(ctx, x, out, [](uint8_t v) { return static_cast<uint8_t>(v == 0); });
}

void bitwise_not_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kSignedInts | kUnsignedInts>(x.dtype, ctx, [&]<typename T>() {
    map_unary<T, T>(ctx, x, out, [](T v) { return static_cast<T>(~v); });
  });
}

LOOM_CPU_KERNEL("Abs", 1, abs_kernel, nullptr);
LOOM_CPU_KERNEL("Neg", 1, neg_kernel, nullptr);
LOOM_CPU_KERNEL("Sign", 9, sign_kernel, nullptr);
LOOM_CPU_KERNEL("Erf", 9, erf_kernel, nullptr);
LOOM_CPU_KERNEL("IsNaN", 9, isnan_kernel, nullptr);
LOOM_CPU_KERNEL("IsInf", 10, isinf_kernel, nullptr);
LOOM_CPU_KERNEL("Not", 1, not_kernel, nullptr);
LOOM_CPU_KERNEL("BitwiseNot", 18, bitwise_not_kernel, nullptr);

}  // namespace
}  // namespace loom::cpu
