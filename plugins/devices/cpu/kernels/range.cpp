// Range: start + i * delta for i in [0, max(ceil((limit - start) / delta), 0)).
#include <cmath>
#include <cstdio>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void range_kernel(KernelContext& ctx) {
  const loom_tensor_t& start_t = ctx.required_input(0);
  const loom_tensor_t& limit_t = ctx.required_input(1);
  const loom_tensor_t& delta_t = ctx.required_input(2);
  if (start_t.dtype != limit_t.dtype || start_t.dtype != delta_t.dtype)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": start, limit and delta must share a type");
  for (const loom_tensor_t* t : {&start_t, &limit_t, &delta_t})
    if (sdk::element_count(*t) != 1)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": start, limit and delta must be scalars");
  dispatch<kFloats | kSignedInts>(start_t.dtype, ctx, [&]<typename T>() {
    const T start = *static_cast<const T*>(start_t.data);
    const T limit = *static_cast<const T*>(limit_t.data);
    const T delta = *static_cast<const T*>(delta_t.data);
    const double d = convert<double>(delta);
    if (d == 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": delta must not be 0");
    const double n = std::ceil((convert<double>(limit) - convert<double>(start)) / d);
    // Past 2^62 no tensor can hold it (and the cast below would be undefined); below, the
    // output allocation checks the count against the run's tensor limit.
    if (n >= 0x1p62) {
      char count[32];
      std::snprintf(count, sizeof count, "%.3g", n);
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": start, limit and delta make " + count +
                                            " elements, more than int64 can count");
    }
    int64_t dims[1] = {n > 0 ? static_cast<int64_t>(n) : 0};
    loom_tensor_t& out = ctx.allocate_output(0, start_t.dtype, dims);
    T* o = sdk::data_of<T>(out);
    if constexpr (is_half_like_v<T>) {
      float v = static_cast<float>(start);
      for (int64_t i = 0; i < dims[0]; ++i, v += static_cast<float>(delta)) o[i] = T(v);
    } else {
      // Accumulate like the reference (numpy arange / repeated addition of delta).
      T v = start;
      for (int64_t i = 0; i < dims[0]; ++i, v = static_cast<T>(v + delta)) o[i] = v;
    }
  });
}

}  // namespace

LOOM_CPU_KERNEL("Range", 11, range_kernel, nullptr);

}  // namespace loom::cpu
