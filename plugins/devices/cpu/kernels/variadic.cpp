// Variadic elementwise ops over any number of inputs with multidirectional broadcasting:
// Sum Mean Max Min. The result accumulates in the compute type (float for float16/bfloat16,
// so half inputs are not rounded after every addition), one input at a time.
#include <cmath>
#include <type_traits>
#include <vector>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

enum class Fold { kSum, kMean, kMax, kMin };

template <Fold Op, typename C>
C fold(C acc, C v) {
  if constexpr (Op == Fold::kSum || Op == Fold::kMean) {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;  // wrap around instead of signed overflow
      return static_cast<C>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(v)));
    } else {
      return acc + v;
    }
  } else {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return v;  // NaN propagates, like numpy.maximum/minimum
    }
    if constexpr (Op == Fold::kMax)
      return v > acc ? v : acc;
    else
      return v < acc ? v : acc;
  }
}

template <Fold Op>
void variadic_kernel(KernelContext& ctx) {
  std::vector<const loom_tensor_t*> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(&ctx.required_input(i));
  if (inputs.empty()) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": needs at least one input");
  for (const loom_tensor_t* t : inputs)
    if (t->dtype != inputs[0]->dtype)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": inputs have different element types");
  std::vector<int64_t> shape = broadcast_shapes(ctx, inputs);
  loom_tensor_t& out = ctx.allocate_output(0, inputs[0]->dtype, shape);
  constexpr unsigned kTypes = (Op == Fold::kSum || Op == Fold::kMean) ? kFloats : kNumeric;
  dispatch<kTypes>(out.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const size_t n = static_cast<size_t>(sdk::element_count(out));
    // The accumulator is the output itself unless T is stored narrower than it computes.
    std::vector<C> scratch(std::is_same_v<C, T> ? 0 : n);
    C* acc = std::is_same_v<C, T> ? reinterpret_cast<C*>(out.data) : scratch.data();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const T* src = static_cast<const T*>(inputs[k]->data);
      broadcast_apply<1>(ctx, out, {inputs[k]},
                         [&](size_t o, size_t count, const size_t* off, const size_t* step) {
                           const T* x = src + off[0];
                           C* a = acc + o;
                           if (k == 0) {
                             for (size_t i = 0; i < count; ++i) a[i] = convert<C>(x[i * step[0]]);
                           } else if (step[0] == 1) {
                             for (size_t i = 0; i < count; ++i)
                               a[i] = fold<Op, C>(a[i], convert<C>(x[i]));
                           } else {
                             const C v = convert<C>(x[0]);
                             for (size_t i = 0; i < count; ++i) a[i] = fold<Op, C>(a[i], v);
                           }
                         });
    }
    if constexpr (std::is_same_v<C, T> && Op != Fold::kMean) return;  // acc is the output
    T* dst = static_cast<T*>(out.data);
    const C count = static_cast<C>(inputs.size());
    ctx.parallel_for(n, kElementwiseGrain, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        C v = acc[i];
        if constexpr (Op == Fold::kMean) v = v / count;
        dst[i] = convert<T>(v);
      }
    });
  });
}

// Versions before 8 required equal shapes (opset 1 also had the ignored consumed_inputs);
// broadcasting is a superset of that.
LOOM_CPU_KERNEL("Sum", 1, variadic_kernel<Fold::kSum>, nullptr);
LOOM_CPU_KERNEL("Mean", 1, variadic_kernel<Fold::kMean>, nullptr);
LOOM_CPU_KERNEL("Max", 1, variadic_kernel<Fold::kMax>, nullptr);
LOOM_CPU_KERNEL("Min", 1, variadic_kernel<Fold::kMin>, nullptr);

}  // namespace
}  // namespace loom::cpu
