// Activation functions: Relu LeakyRelu Elu Selu Celu Sigmoid HardSigmoid HardSwish Tanh Softplus
// Softsign ThresholdedRelu Mish Gelu Shrink Clip PRelu. Float types compute in float (float16,
// bfloat16, float32) or double; Relu, Shrink, Clip and PRelu also take integers as the spec allows.
#include <cmath>
#include <limits>
#include <type_traits>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

// out = f(x, attrs) over the float types; f receives float or double.
template <typename F>
void float_activation(KernelContext& ctx, F f) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    map_unary<T, T>(ctx, x, out, [&](T v) { return convert<T>(static_cast<C>(f(convert<C>(v)))); });
  });
}

// log(1 + exp(x)) without overflow for large x.
template <typename C>
C softplus(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <typename C>
C sigmoid(C x) {
  // Two branches keep exp() from overflowing for large |x|.
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

void relu_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats | kSignedInts>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    map_unary<T, T>(ctx, x, out, [](T v) {
      C c = convert<C>(v);
      return convert<T>(c > C(0) ? c : C(0));
    });
  });
}

void leaky_relu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 0.01f);
  float_activation(ctx, [alpha](auto x) { return x >= 0 ? x : x * alpha; });
}

void elu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  float_activation(ctx, [alpha](auto x) { return x >= 0 ? x : alpha * std::expm1(x); });
}

void selu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 1.67326319217681884765625f);
  const float gamma = ctx.attrs().get_float("gamma", 1.05070102214813232421875f);
  float_activation(ctx, [alpha, gamma](auto x) {
    using C = decltype(x);
    return x > 0 ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha));
  });
}

void celu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  if (alpha == 0.0f) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": alpha must not be 0");
  float_activation(ctx, [alpha](auto x) {
    using C = decltype(x);
    return std::max(C(0), x) + std::min(C(0), C(alpha) * std::expm1(x / C(alpha)));
  });
}

void sigmoid_kernel(KernelContext& ctx) {
  float_activation(ctx, [](auto x) { return sigmoid(x); });
}

void hard_sigmoid_kernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 0.2f);
  const float beta = ctx.attrs().get_float("beta", 0.5f);
  float_activation(ctx, [alpha, beta](auto x) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  });
}

void hard_swish_kernel(KernelContext& ctx) {
  float_activation(ctx, [](auto x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  });
}

void tanh_kernel(KernelContext& ctx) {
  float_activation(ctx, [](auto x) { return std::tanh(x); });
}

void softplus_kernel(KernelContext& ctx) {
  float_activation(ctx, [](auto x) { return softplus(x); });
}

void softsign_kernel(KernelContext& ctx) {
  float_activation(ctx, [](auto x) { return x / (decltype(x)(1) + std::fabs(x)); });
}

void thresholded_relu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  float_activation(ctx, [alpha](auto x) { return x > alpha ? x : decltype(x)(0); });
}

void mish_kernel(KernelContext& ctx) {
  float_activation(ctx, [](auto x) { return x * std::tanh(softplus(x)); });
}

void gelu_kernel(KernelContext& ctx) {
  const std::string approximate = ctx.attrs().get_string("approximate", "none");
  if (approximate == "none") {
    float_activation(ctx, [](auto x) {
      using C = decltype(x);
      return C(0.5) * x * (C(1) + std::erf(x / std::sqrt(C(2))));
    });
  } else if (approximate == "tanh") {
    float_activation(ctx, [](auto x) {
      using C = decltype(x);
      const C k = std::sqrt(C(2) / C(M_PI));
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  } else {
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": approximate='" + approximate + "' is not one of none, tanh");
  }
}

// ---- numeric activations ------------------------------------------------------------------

void shrink_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const float lambd = ctx.attrs().get_float("lambd", 0.5f);
  const float bias = ctx.attrs().get_float("bias", 0.0f);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kNumeric>(x.dtype, ctx, [&]<typename T>() {
    map_unary<T, T>(ctx, x, out, [=](T v) {
      // Integers too: compute in double, as the spec defines the op on real numbers.
      double c = convert<double>(v);
      double r = c < -lambd ? c + bias : (c > lambd ? c - bias : 0.0);
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(r);
      else
        return convert<T>(static_cast<compute_t<T>>(r));
    });
  });
}

// Clip: bounds are attributes before opset 11, optional scalar inputs from 11 on.
void clip_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kNumeric>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    if (ctx.opset() < 11) {
      lo = static_cast<C>(ctx.attrs().get_float("min", -std::numeric_limits<float>::infinity()));
      hi = static_cast<C>(ctx.attrs().get_float("max", std::numeric_limits<float>::infinity()));
    } else {
      auto bound = [&](size_t i, C& value) {
        const loom_tensor_t* t = ctx.input(i);
        if (!t) return;
        if (t->dtype != x.dtype || sdk::element_count(*t) != 1)
          fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + (i == 1 ? "min" : "max") +
                                                " must be a scalar of the input's type");
        value = convert<C>(*static_cast<const T*>(t->data));
      };
      bound(1, lo);
      bound(2, hi);
    }
    map_unary<T, T>(ctx, x, out, [=](T v) {
      C c = convert<C>(v);
      if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(c)) return v;
      }
      // min is applied first, then max, so max wins when min > max (as numpy.clip does).
      c = c < lo ? lo : c;
      c = c > hi ? hi : c;
      return convert<T>(c);
    });
  });
}

// PRelu: the slope broadcasts to the shape of X (unidirectionally).
// Before opset 7 a 1-D slope of C values is per channel (dim 1), as PyTorch exports it.
void prelu_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t slope = ctx.required_input(1);
  if (ctx.opset() < 7 && slope.rank == 1 && x.rank >= 2 && slope.dims[0] == x.dims[1] &&
      slope.dims[0] != 1) {
    slope.rank = x.rank - 1;
    for (int32_t d = 1; d < slope.rank; ++d) slope.dims[d] = 1;
  }
  require_same_dtype(ctx, {&x, &slope});
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&x, &slope});
  if (shape != std::vector<int64_t>(sdk::shape_of(x).begin(), sdk::shape_of(x).end()))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": slope does not broadcast to the shape of X");
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, shape);
  dispatch<kFloats | kSignedInts | kUnsignedInts>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    broadcast_binary<T, T, T>(ctx, x, slope, out, [](T v, T s) {
      C c = convert<C>(v);
      return c < C(0) ? convert<T>(static_cast<C>(c * convert<C>(s))) : v;
    });
  });
}

LOOM_CPU_KERNEL("Relu", 1, relu_kernel, nullptr);
LOOM_CPU_KERNEL("LeakyRelu", 1, leaky_relu_kernel, nullptr);
LOOM_CPU_KERNEL("Elu", 1, elu_kernel, nullptr);
LOOM_CPU_KERNEL("Selu", 1, selu_kernel, nullptr);
LOOM_CPU_KERNEL("Celu", 12, celu_kernel, nullptr);
LOOM_CPU_KERNEL("Sigmoid", 1, sigmoid_kernel, nullptr);
LOOM_CPU_KERNEL("HardSigmoid", 1, hard_sigmoid_kernel, nullptr);
LOOM_CPU_KERNEL("HardSwish", 14, hard_swish_kernel, nullptr);
LOOM_CPU_KERNEL("Tanh", 1, tanh_kernel, nullptr);
LOOM_CPU_KERNEL("Softplus", 1, softplus_kernel, nullptr);
LOOM_CPU_KERNEL("Softsign", 1, softsign_kernel, nullptr);
LOOM_CPU_KERNEL("ThresholdedRelu", 10, thresholded_relu_kernel, nullptr);
LOOM_CPU_KERNEL("Mish", 18, mish_kernel, nullptr);
LOOM_CPU_KERNEL("Gelu", 20, gelu_kernel, nullptr);
LOOM_CPU_KERNEL("Shrink", 9, shrink_kernel, nullptr);
LOOM_CPU_KERNEL("Clip", 1, clip_kernel, nullptr);  // opset 1 adds only consumed_inputs
LOOM_CPU_KERNEL("PRelu", 1, prelu_kernel, nullptr);

}  // namespace
}  // namespace loom::cpu
