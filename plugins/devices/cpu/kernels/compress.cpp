// Compress: keeps the slices along an axis (or of the flattened input) whose condition is
// true. A condition shorter than the axis drops the rest; a true entry past the axis is an
// error.
#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void compress_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const loom_tensor_t& cond = ctx.required_input(1);
  if (cond.dtype != LOOM_DTYPE_BOOL || cond.rank != 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": condition must be a 1-D bool tensor");
  std::vector<int64_t> in_dims = dims_of(in);
  int64_t axis = 0;
  if (ctx.attrs().has("axis")) {
    axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), in.rank);
  } else {
    in_dims = {sdk::element_count(in)};  // flattened
  }
  const int64_t n = in_dims[axis];
  const bool* c = static_cast<const bool*>(cond.data);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.dims[0]; ++i) {
    if (!c[i]) continue;
    if (i >= n)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": condition selects index " +
                                            std::to_string(i) + " but the axis has size " +
                                            std::to_string(n));
    keep.push_back(i);
  }
  std::vector<int64_t> out_dims = in_dims;
  out_dims[axis] = static_cast<int64_t>(keep.size());
  std::vector<std::vector<int64_t>> maps(in_dims.size());
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (static_cast<int64_t>(d) == axis) {
      maps[d] = keep;
    } else {
      for (int64_t j = 0; j < in_dims[d]; ++j) maps[d].push_back(j);
    }
  }
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  copy_by_axis_maps(ctx, in.data, in_dims, out.data(), out_dims, maps, element_size(ctx, in.dtype),
                    nullptr);
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Compress", 9, compress_kernel, nullptr);

}  // namespace loom::cpu
