// Tile (repeat the whole tensor along each axis) and Expand (numpy broadcast to a shape).
#include <algorithm>
#include <optional>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void tile_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const std::vector<int64_t> repeats = read_int_values(ctx, ctx.required_input(1), "repeats");
  if (static_cast<int64_t>(repeats.size()) != in.rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": repeats " + shape_string(repeats) +
                                          " must have one entry per input axis (rank " +
                                          std::to_string(in.rank) + ")");
  std::vector<int64_t> out_dims(repeats.size());
  std::vector<std::vector<int64_t>> maps(repeats.size());
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": repeats " + shape_string(repeats) + " has a negative entry");
    const std::optional<int64_t> extent = sdk::checked_mul(in.dims[d], repeats[d]);
    if (!extent)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": repeats " + shape_string(repeats) +
                                            " make axis " + std::to_string(d) +
                                            " longer than int64 can count");
    out_dims[d] = *extent;
  }
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  if (empty_output(out_dims)) return out.commit();
  for (size_t d = 0; d < repeats.size(); ++d) {
    maps[d].resize(static_cast<size_t>(out_dims[d]));
    for (int64_t j = 0; j < out_dims[d]; ++j) maps[d][j] = j % in.dims[d];
  }
  copy_by_axis_maps(ctx, in.data, sdk::shape_of(in), out.data(), out_dims, maps,
                    element_size(ctx, in.dtype), nullptr);
  out.commit();
}

void expand_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const std::vector<int64_t> shape = read_int_values(ctx, ctx.required_input(1), "shape");
  const size_t rank = std::max(shape.size(), static_cast<size_t>(in.rank));
  if (rank > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": output rank " + std::to_string(rank) +
                                     " exceeds the maximum of " + std::to_string(LOOM_MAX_RANK));
  // Right-align both shapes; a 1 on either side broadcasts.
  std::vector<int64_t> in_dims(rank, 1), out_dims(rank, 1);
  for (int32_t i = 0; i < in.rank; ++i) in_dims[rank - in.rank + i] = in.dims[i];
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    int64_t d = in_dims[rank - shape.size() + i];
    if (s < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": shape " + shape_string(shape) + " has a negative dimension");
    if (s != d && s != 1 && d != 1)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input shape " +
                                            shape_string(sdk::shape_of(in)) +
                                            " cannot be broadcast to " + shape_string(shape));
    out_dims[rank - shape.size() + i] = d == 1 ? s : d;
  }
  for (size_t i = 0; i + shape.size() < rank; ++i) out_dims[i] = in_dims[i];
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  if (empty_output(out_dims)) return out.commit();
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    maps[d].resize(static_cast<size_t>(out_dims[d]));
    for (int64_t j = 0; j < out_dims[d]; ++j) maps[d][j] = in_dims[d] == 1 ? 0 : j;
  }
  copy_by_axis_maps(ctx, in.data, in_dims, out.data(), out_dims, maps, element_size(ctx, in.dtype),
                    nullptr);
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Tile", 6, tile_kernel, nullptr);
LOOM_CPU_KERNEL("Expand", 8, expand_kernel, nullptr);

}  // namespace loom::cpu
