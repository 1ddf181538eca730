// CumSum (11, 14) and CumProd (26): running sums or products along the axis given as a scalar
// input, optionally exclusive (each output excludes its own element; the first is 0 or 1)
// and/or reversed (they run from the end).
#include <type_traits>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

template <bool kProduct>
void cumulative_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& axis_t = ctx.required_input(1);
  if (axis_t.rank > 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": axis must be a scalar");
  if (x.rank < 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": input must have rank >= 1");
  const int64_t axis =
      sdk::normalize_axis(misc::read_scalar_int(axis_t, where + " axis"), x.rank, where);
  const bool exclusive = ctx.attrs().get_int("exclusive", 0) != 0;
  const bool reverse = ctx.attrs().get_int("reverse", 0) != 0;
  const int64_t n = x.dims[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (int64_t i = axis + 1; i < x.rank; ++i) inner *= x.dims[i];
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, misc::dims_of(x));
  dispatch<kNumeric>(x.dtype, where, [&]<typename T>() {
    // float16/bfloat16 accumulate in float, other floats in themselves; integers in uint64,
    // so overflow wraps (two's complement, modulo the type's width once truncated) instead of
    // being undefined, products of narrow types included.
    using Acc = typename std::conditional_t<
        is_half_like_v<T>, std::type_identity<float>,
        std::conditional_t<std::is_integral_v<T>, std::type_identity<uint64_t>,
                           std::type_identity<T>>>::type;
    const auto to_acc = [](T v) {
      if constexpr (std::is_integral_v<T>)
        return static_cast<Acc>(v);
      else
        return convert<Acc>(v);
    };
    const auto from_acc = [](Acc v) {
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(v);
      else
        return convert<T>(v);
    };
    const T* in = sdk::data_of<const T>(x);
    T* out = sdk::data_of<T>(y);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Acc acc = kProduct ? Acc(1) : Acc(0);
        const auto step = [&acc](Acc v) {
          acc = kProduct ? static_cast<Acc>(acc * v) : static_cast<Acc>(acc + v);
        };
        for (int64_t s = 0; s < n; ++s) {
          const int64_t j = reverse ? n - 1 - s : s;
          const int64_t at = (o * n + j) * inner + i;
          const Acc v = to_acc(in[at]);
          if (!exclusive) step(v);
          out[at] = from_acc(acc);
          if (exclusive) step(v);
        }
      }
  });
}

}  // namespace

LOOM_CPU_KERNEL("CumSum", 11, cumulative_kernel<false>, nullptr);
LOOM_CPU_KERNEL("CumSum", 14, cumulative_kernel<false>, nullptr);
LOOM_CPU_KERNEL("CumProd", 26, cumulative_kernel<true>, nullptr);

}  // namespace loom::cpu
