// GlobalAveragePool, GlobalMaxPool and GlobalLpPool (opsets 1, 2): one value per (n, c) plane
// of [N, C, spatial...]; the output keeps the rank with every spatial extent 1.
#include <cmath>
#include <limits>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

enum class GlobalPool { kAverage, kMax, kLp };

template <GlobalPool kind>
void global_pool_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input must be [N, C, spatial...], got " + nn::shape_string(x));
  std::vector<int64_t> out_dims(static_cast<size_t>(x.rank), 1);
  out_dims[0] = x.dims[0];
  out_dims[1] = x.dims[1];
  size_t plane = 1;
  for (int32_t d = 2; d < x.rank; ++d) plane *= static_cast<size_t>(x.dims[d]);
  const size_t planes = static_cast<size_t>(x.dims[0] * x.dims[1]);
  double p = 2.0;
  if constexpr (kind == GlobalPool::kLp) {
    p = ctx.opset() < 2 ? ctx.attrs().get_float("p", 2.0f)
                        : static_cast<double>(ctx.attrs().get_int("p", 2));
    if (!(p > 0)) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": p must be positive");
  }
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  if (planes == 0) return;
  if (plane == 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot pool over an empty spatial extent");

  constexpr unsigned groups =
      kind == GlobalPool::kMax ? (kFloats | kSignedInts | kUnsignedInts) : unsigned{kFloats};
  dispatch<groups>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    nn::parallel_range(ctx, planes, 1, [&](size_t p0, size_t p1) {
      for (size_t i = p0; i < p1; ++i) {
        const C* src = xv.data() + i * plane;
        if constexpr (kind == GlobalPool::kMax) {
          C best = src[0];
          for (size_t j = 1; j < plane; ++j) best = src[j] > best ? src[j] : best;
          out.data()[i] = best;
        } else if constexpr (kind == GlobalPool::kAverage) {
          double sum = 0;
          for (size_t j = 0; j < plane; ++j) sum += static_cast<double>(src[j]);
          out.data()[i] = static_cast<C>(sum / static_cast<double>(plane));
        } else {
          double sum = 0;
          for (size_t j = 0; j < plane; ++j)
            sum += std::pow(std::abs(static_cast<double>(src[j])), p);
          out.data()[i] = static_cast<C>(std::pow(sum, 1.0 / p));
        }
      }
    });
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("GlobalAveragePool", 1, global_pool_kernel<GlobalPool::kAverage>, nullptr);
LOOM_CPU_KERNEL("GlobalMaxPool", 1, global_pool_kernel<GlobalPool::kMax>, nullptr);
LOOM_CPU_KERNEL("GlobalLpPool", 1, global_pool_kernel<GlobalPool::kLp>, nullptr);

}  // namespace loom::cpu
