// ArgMax and ArgMin: the index (int64) of the extreme value along `axis`, with keepdims and
// select_last_index (opset 12). The tensor is viewed as [outer, axis, inner]; each outer block
// scans the axis once while tracking all `inner` lanes, so memory is read contiguously.
#include <algorithm>
#include <vector>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

template <bool Max>
void arg_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  int64_t axis = ctx.attrs().get_int("axis", 0);
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  const bool last = ctx.attrs().get_int("select_last_index", 0) != 0;
  if (axis < -x.rank || axis >= std::max(x.rank, 1))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": axis " + std::to_string(axis) +
                                          " is out of range for rank " + std::to_string(x.rank));
  if (axis < 0) axis += x.rank;
  if (x.rank == 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": the input is a scalar");
  const auto len = static_cast<size_t>(x.dims[axis]);
  size_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(x.dims[d]);
  for (int64_t d = axis + 1; d < x.rank; ++d) inner *= static_cast<size_t>(x.dims[d]);
  std::vector<int64_t> out_shape;
  for (int64_t d = 0; d < x.rank; ++d) {
    if (d != axis)
      out_shape.push_back(x.dims[d]);
    else if (keepdims)
      out_shape.push_back(1);
  }
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_INT64, out_shape);
  if (outer * inner == 0) return;
  if (len == 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": the reduced axis is empty");
  dispatch<kNumeric>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = static_cast<const T*>(x.data);
    auto* dst = static_cast<int64_t*>(out.data);
    size_t grain = std::max<size_t>(1, kElementwiseGrain / std::max<size_t>(1, len * inner));
    ctx.parallel_for(outer, grain, [&](size_t begin, size_t end) {
      std::vector<C> best(inner);
      for (size_t o = begin; o < end; ++o) {
        const T* block = in + o * len * inner;
        int64_t* index = dst + o * inner;
        for (size_t t = 0; t < inner; ++t) {
          best[t] = convert<C>(block[t]);
          index[t] = 0;
        }
        for (size_t j = 1; j < len; ++j) {
          const T* row = block + j * inner;
          for (size_t t = 0; t < inner; ++t) {
            C v = convert<C>(row[t]);
            bool better =
                Max ? (last ? v >= best[t] : v > best[t]) : (last ? v <= best[t] : v < best[t]);
            if (better) {
              best[t] = v;
              index[t] = static_cast<int64_t>(j);
            }
          }
        }
      }
    });
  });
}

LOOM_CPU_KERNEL("ArgMax", 1, arg_kernel<true>, nullptr);
LOOM_CPU_KERNEL("ArgMin", 1, arg_kernel<false>, nullptr);

}  // namespace
}  // namespace loom::cpu
