// CumSum (11, 14): running sums along the axis given as a scalar input, optionally
// exclusive (each output excludes its own element) and/or reversed (sums run from the end).
#include <type_traits>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

void cumsum_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& axis_t = ctx.required_input(1);
  if (axis_t.rank > 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": axis must be a scalar");
  if (x.rank < 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": input must have rank >= 1");
  const int64_t axis =
      misc::normalize_axis(misc::read_scalar_int(axis_t, where + " axis"), x.rank, where);
  const bool exclusive = ctx.attrs().get_int("exclusive", 0) != 0;
  const bool reverse = ctx.attrs().get_int("reverse", 0) != 0;
  const int64_t n = x.dims[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (int64_t i = axis + 1; i < x.rank; ++i) inner *= x.dims[i];
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, misc::dims_of(x));
  dispatch<kNumeric>(x.dtype, where, [&]<typename T>() {
    // float16/bfloat16 accumulate in float, other floats in themselves; integers in their
    // unsigned counterpart, so overflow wraps (two's complement) instead of being undefined.
    using Acc =
        typename std::conditional_t<is_half_like_v<T>, std::type_identity<float>,
                                    std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                                       std::type_identity<T>>>::type;
    const T* in = sdk::data_of<const T>(x);
    T* out = sdk::data_of<T>(y);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Acc sum{};
        for (int64_t s = 0; s < n; ++s) {
          const int64_t j = reverse ? n - 1 - s : s;
          const int64_t at = (o * n + j) * inner + i;
          const Acc v = convert<Acc>(in[at]);
          if (!exclusive) sum = static_cast<Acc>(sum + v);
          out[at] = convert<T>(sum);
          if (exclusive) sum = static_cast<Acc>(sum + v);
        }
      }
  });
}

}  // namespace

LOOM_CPU_KERNEL("CumSum", 11, cumsum_kernel, nullptr);
LOOM_CPU_KERNEL("CumSum", 14, cumsum_kernel, nullptr);

}  // namespace loom::cpu
