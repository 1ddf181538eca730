// Comparisons (Equal Less Greater LessOrEqual GreaterOrEqual), logical And/Or/Xor on bool, and
// Where, all with multidirectional broadcasting. float16/bfloat16 compare as float.
#include <cstring>
#include <type_traits>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

enum class Cmp { kEq, kLt, kGt, kLe, kGe };

template <Cmp Op>
void compare_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t b = legacy_broadcast_view(ctx, a, ctx.required_input(1));
  require_same_dtype(ctx, {&a, &b});
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_BOOL, shape);
  if (a.dtype == LOOM_DTYPE_STRING) {
    if constexpr (Op != Cmp::kEq) {
      fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": strings can only be compared for equality");
    } else {
      broadcast_binary<loom_string_t, loom_string_t, bool>(
          ctx, a, b, out, [](loom_string_t x, loom_string_t y) {
            return x.size == y.size && (x.size == 0 || std::memcmp(x.data, y.data, x.size) == 0);
          });
    }
    return;
  }
  dispatch<kNumeric | kBool>(a.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    broadcast_binary<T, T, bool>(ctx, a, b, out, [](T x, T y) {
      C cx = convert<C>(x), cy = convert<C>(y);
      if constexpr (Op == Cmp::kEq)
        return cx == cy;
      else if constexpr (Op == Cmp::kLt)
        return cx < cy;
      else if constexpr (Op == Cmp::kGt)
        return cx > cy;
      else if constexpr (Op == Cmp::kLe)
        return cx <= cy;
      else
        return cx >= cy;
    });
  });
}

enum class Logic { kAnd, kOr, kXor };

template <Logic Op>
void logical_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t b = legacy_broadcast_view(ctx, a, ctx.required_input(1));
  if (a.dtype != LOOM_DTYPE_BOOL || b.dtype != LOOM_DTYPE_BOOL)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": inputs must be bool");
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_BOOL, shape);
  // Bools are bytes holding 0 or 1: bitwise operations on uint8 vectorise.
  broadcast_binary<uint8_t, uint8_t, uint8_t>(ctx, a, b, out, [](uint8_t x, uint8_t y) {
    if constexpr (Op == Logic::kAnd)
      return static_cast<uint8_t>(x & y);
    else if constexpr (Op == Logic::kOr)
      return static_cast<uint8_t>(x | y);
    else
      return static_cast<uint8_t>(x ^ y);
  });
}

enum class Bitwise { kAnd, kOr, kXor };

template <Bitwise Op>
void bitwise_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  require_same_dtype(ctx, {&a, &b});
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, a.dtype, shape);
  dispatch<kSignedInts | kUnsignedInts>(a.dtype, ctx, [&]<typename T>() {
    broadcast_binary<T, T, T>(ctx, a, b, out, [](T x, T y) {
      if constexpr (Op == Bitwise::kAnd)
        return static_cast<T>(x & y);
      else if constexpr (Op == Bitwise::kOr)
        return static_cast<T>(x | y);
      else
        return static_cast<T>(x ^ y);
    });
  });
}

// BitShift on unsigned integers, and from opset 28 on signed ones: a right shift of a signed
// value is arithmetic; a left shift works on the two's-complement bits (what passes the sign bit
// is lost). A shift by a negative amount or by the bit width or more leaves only the sign
// fill: -1 for a right shift of a negative value, 0 otherwise.
void bit_shift_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  require_same_dtype(ctx, {&a, &b});
  const std::string direction = ctx.attrs().get_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": direction must be LEFT or RIGHT, not '" + direction + "'");
  const bool left = direction == "LEFT";
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&a, &b});
  loom_tensor_t& out = ctx.allocate_output(0, a.dtype, shape);
  const auto shift = [&]<typename T>() {
    using U = std::make_unsigned_t<T>;
    broadcast_binary<T, T, T>(ctx, a, b, out, [left](T x, T y) {
      bool out_of_range = static_cast<U>(y) >= sizeof(T) * 8;
      bool negative = false;
      if constexpr (std::is_signed_v<T>) {
        out_of_range = out_of_range || y < 0;
        negative = x < 0;
      }
      if (out_of_range) return !left && negative ? static_cast<T>(-1) : T(0);
      if (left) return static_cast<T>(static_cast<U>(static_cast<U>(x) << y));
      // >> of a negative signed value is arithmetic in C++20.
      return static_cast<T>(x >> y);
    });
  };
  if (ctx.opset() >= 28)
    dispatch<kUnsignedInts | kSignedInts>(a.dtype, ctx, shift);
  else
    dispatch<kUnsignedInts>(a.dtype, ctx, shift);
}

// Where(condition, X, Y): three-way broadcast.
void where_kernel(KernelContext& ctx) {
  const loom_tensor_t& c = ctx.required_input(0);
  const loom_tensor_t& x = ctx.required_input(1);
  const loom_tensor_t& y = ctx.required_input(2);
  if (c.dtype != LOOM_DTYPE_BOOL)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": condition must be bool");
  require_same_dtype(ctx, {&x, &y});
  std::vector<int64_t> shape = broadcast_shapes(ctx, {&c, &x, &y});
  if (x.dtype == LOOM_DTYPE_STRING) {
    // Pick the views first, then copy the bytes so the output owns its strings.
    Tensor result = make_tensor(LOOM_DTYPE_STRING, shape);
    std::vector<loom_string_t> picked(static_cast<size_t>(sdk::element_count(result.view)));
    loom_tensor_t picked_view = result.view;
    picked_view.data = picked.data();
    broadcast_ternary<bool, loom_string_t, loom_string_t, loom_string_t>(
        ctx, c, x, y, picked_view,
        [](bool k, loom_string_t p, loom_string_t q) { return k ? p : q; });
    auto* views = static_cast<loom_string_t*>(result.view.data);
    for (size_t i = 0; i < picked.size(); ++i) {
      (*result.strings)[i].assign(picked[i].data ? picked[i].data : "", picked[i].size);
      views[i] = {(*result.strings)[i].data(), (*result.strings)[i].size()};
    }
    ctx.set_output(0, std::move(result));
    return;
  }
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, shape);
  dispatch<kNumeric | kBool>(x.dtype, ctx, [&]<typename T>() {
    broadcast_ternary<bool, T, T, T>(ctx, c, x, y, out, [](bool k, T p, T q) { return k ? p : q; });
  });
}

// Opsets 1-6 use the legacy `broadcast`/`axis` attributes (legacy_broadcast_view).
LOOM_CPU_KERNEL("Equal", 1, compare_kernel<Cmp::kEq>, nullptr);
LOOM_CPU_KERNEL("Less", 1, compare_kernel<Cmp::kLt>, nullptr);
LOOM_CPU_KERNEL("Greater", 1, compare_kernel<Cmp::kGt>, nullptr);
LOOM_CPU_KERNEL("LessOrEqual", 12, compare_kernel<Cmp::kLe>, nullptr);
LOOM_CPU_KERNEL("GreaterOrEqual", 12, compare_kernel<Cmp::kGe>, nullptr);
LOOM_CPU_KERNEL("And", 1, logical_kernel<Logic::kAnd>, nullptr);
LOOM_CPU_KERNEL("Or", 1, logical_kernel<Logic::kOr>, nullptr);
LOOM_CPU_KERNEL("Xor", 1, logical_kernel<Logic::kXor>, nullptr);
LOOM_CPU_KERNEL("BitwiseAnd", 18, bitwise_kernel<Bitwise::kAnd>, nullptr);
LOOM_CPU_KERNEL("BitwiseOr", 18, bitwise_kernel<Bitwise::kOr>, nullptr);
LOOM_CPU_KERNEL("BitwiseXor", 18, bitwise_kernel<Bitwise::kXor>, nullptr);
LOOM_CPU_KERNEL("BitShift", 11, bit_shift_kernel, nullptr);
LOOM_CPU_KERNEL("Where", 9, where_kernel, nullptr);

}  // namespace
}  // namespace loom::cpu
