// Binary arithmetic with multidirectional broadcasting: Add Sub Mul Div Pow Mod.
// float16/bfloat16 compute in float. Integer Add/Sub/Mul wrap around (two's complement, computed
// unsigned so overflow is defined); integer Div truncates toward zero like C; a zero integer
// divisor is reported as an error rather than crashing the process.
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

template <typename T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
T wrap_mul(T a, T b) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

enum class Arith { kAdd, kSub, kMul, kDiv };

template <Arith Op>
void arith_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t b = legacy_broadcast_view(ctx, a, ctx.required_input(1));
  require_same_dtype(ctx, {&a, &b});
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, a.dtype, shape);
  dispatch<kNumeric>(a.dtype, ctx, [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T> || is_half_like_v<T>) {
      broadcast_binary<T, T, T>(ctx, a, b, out, [](T x, T y) {
        using C = compute_t<T>;
        C cx = convert<C>(x), cy = convert<C>(y);
        if constexpr (Op == Arith::kAdd)
          return convert<T>(cx + cy);
        else if constexpr (Op == Arith::kSub)
          return convert<T>(cx - cy);
        else if constexpr (Op == Arith::kMul)
          return convert<T>(cx * cy);
        else
          return convert<T>(cx / cy);
      });
    } else if constexpr (Op == Arith::kDiv) {
      std::atomic<bool> zero{false};
      broadcast_binary<T, T, T>(ctx, a, b, out, [&](T x, T y) -> T {
        if (y == 0) {
          zero.store(true, std::memory_order_relaxed);
          return T(0);
        }
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return wrap_sub<T>(T(0), x);  // INT_MIN / -1 would trap
        }
        return static_cast<T>(x / y);
      });
      if (zero.load())
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": integer division by zero");
    } else {
      broadcast_binary<T, T, T>(ctx, a, b, out, [](T x, T y) {
        if constexpr (Op == Arith::kAdd)
          return wrap_add<T>(x, y);
        else if constexpr (Op == Arith::kSub)
          return wrap_sub<T>(x, y);
        else
          return wrap_mul<T>(x, y);
      });
    }
  });
}

// ---- Mod ----------------------------------------------------------------------------------

void mod_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  require_same_dtype(ctx, {&a, &b});
  const bool fmod = ctx.attrs().get_int("fmod", 0) != 0;
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, a.dtype, shape);
  dispatch<kNumeric>(a.dtype, ctx, [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T> || is_half_like_v<T>) {
      // fmod=1: C fmod, the sign of the dividend. fmod=0 (the spec requires 1 for floats; we
      // follow numpy.mod rather than refuse): the sign of the divisor.
      broadcast_binary<T, T, T>(ctx, a, b, out, [fmod](T x, T y) {
        using C = compute_t<T>;
        C cx = convert<C>(x), cy = convert<C>(y);
        C r = std::fmod(cx, cy);
        if (!fmod && r != 0 && ((r < 0) != (cy < 0))) r += cy;
        return convert<T>(r);
      });
    } else {
      std::atomic<bool> zero{false};
      broadcast_binary<T, T, T>(ctx, a, b, out, [&](T x, T y) -> T {
        if (y == 0) {
          zero.store(true, std::memory_order_relaxed);
          return T(0);
        }
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return T(0);  // avoids the INT_MIN % -1 trap; the result is 0 anyway
        }
        T r = static_cast<T>(x % y);  // C: sign of the dividend (fmod=1)
        if constexpr (std::is_signed_v<T>) {
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);  // Python
        }
        return r;
      });
      if (zero.load()) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": integer modulo by zero");
    }
  });
}

// ---- Pow ----------------------------------------------------------------------------------

template <typename T, typename E>
T int_pow(T base, E exponent) {
  if (exponent < 0) {
    // Only |base| == 1 has a non-zero integer result for negative powers.
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (static_cast<int64_t>(exponent) % 2 == 0) ? T(1) : T(-1);
    }
    return 0;
  }
  using U = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;
  U result = 1, b = static_cast<U>(base);
  auto e = static_cast<uint64_t>(exponent);
  while (e) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<T>(result);
}

// x^y in the type of the base: integer powers exactly, the rest through std::pow.
template <typename T, typename E>
T pow_element(T x, E y) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) {
    return int_pow<T>(x, y);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::pow(static_cast<double>(x), convert<double>(y)));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::pow(x, convert<double>(y));
  } else {
    using C = compute_t<T>;
    return convert<T>(static_cast<C>(std::pow(convert<C>(x), convert<C>(y))));
  }
}

// An exponent of another type than the base is widened to int64 (integers up to 32 bits and
// int64), uint64 or double (every float type), so that Pow is compiled for each base type
// against the same type and those three rather than against all twelve exponent types (the
// pairs were most of this file's compile time, in every build). Each widening is exact and
// pow_element reads the exponent only through its value, so no result changes.
loom_tensor_t widen_exponent(const KernelContext& ctx, const loom_tensor_t& b,
                             std::vector<uint64_t>& storage) {
  loom_tensor_t wide = b;
  const size_t n = static_cast<size_t>(sdk::element_count(b));
  storage.resize(n);
  wide.data = storage.data();
  wide.byte_size = n * sizeof(uint64_t);
  dispatch<kNumeric>(b.dtype, ctx, [&]<typename E>() {
    const E* y = static_cast<const E*>(b.data);
    if constexpr (std::is_same_v<E, uint64_t>) {
      wide.dtype = LOOM_DTYPE_UINT64;
      std::memcpy(storage.data(), y, n * sizeof(uint64_t));
    } else if constexpr (std::is_integral_v<E>) {
      wide.dtype = LOOM_DTYPE_INT64;
      for (size_t i = 0; i < n; ++i) storage[i] = static_cast<uint64_t>(static_cast<int64_t>(y[i]));
    } else {
      wide.dtype = LOOM_DTYPE_FLOAT64;
      for (size_t i = 0; i < n; ++i) {
        const double v = convert<double>(y[i]);
        std::memcpy(&storage[i], &v, sizeof v);
      }
    }
  });
  return wide;
}

template <typename T, typename E>
void pow_apply(const KernelContext& ctx, const loom_tensor_t& a, const loom_tensor_t& b,
               loom_tensor_t& out) {
  broadcast_binary<T, E, T>(ctx, a, b, out, [](T x, E y) { return pow_element<T, E>(x, y); });
}

void pow_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t b = legacy_broadcast_view(ctx, a, ctx.required_input(1));
  if (ctx.opset() < 12) require_same_dtype(ctx, {&a, &b});
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, a.dtype, shape);
  dispatch<kFloats | kSignedInts | kUnsignedInts>(a.dtype, ctx, [&]<typename T>() {
    if (b.dtype == a.dtype) return pow_apply<T, T>(ctx, a, b, out);
    std::vector<uint64_t> storage;
    const loom_tensor_t wide = widen_exponent(ctx, b, storage);
    if (wide.dtype == LOOM_DTYPE_INT64) return pow_apply<T, int64_t>(ctx, a, wide, out);
    if (wide.dtype == LOOM_DTYPE_UINT64) return pow_apply<T, uint64_t>(ctx, a, wide, out);
    pow_apply<T, double>(ctx, a, wide, out);
  });
}

// Opsets 1-6 use the legacy `broadcast`/`axis` attributes (legacy_broadcast_view).
LOOM_CPU_KERNEL("Add", 1, arith_kernel<Arith::kAdd>, nullptr);
LOOM_CPU_KERNEL("Sub", 1, arith_kernel<Arith::kSub>, nullptr);
LOOM_CPU_KERNEL("Mul", 1, arith_kernel<Arith::kMul>, nullptr);
LOOM_CPU_KERNEL("Div", 1, arith_kernel<Arith::kDiv>, nullptr);
LOOM_CPU_KERNEL("Mod", 10, mod_kernel, nullptr);
LOOM_CPU_KERNEL("Pow", 1, pow_kernel, nullptr);

}  // namespace
}  // namespace loom::cpu
