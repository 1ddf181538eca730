// AffineGrid (20) and TensorScatter (24).
//   AffineGrid(theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W] or [N, C, D, H, W]): the
//     normalised sampling grid [N, H, W, 2] or [N, D, H, W, 3] of theta applied to the
//     homogeneous base grid (x along W, y along H, z along D), for GridSample. With
//     align_corners the base coordinates of an axis of L run from -1 to 1 (-1 alone for L = 1),
//     otherwise they are the centres of L equal cells of [-1, 1]. Computed in double.
//   TensorScatter(past_cache, update, write_indices?): the cache with each batch's update
//     written along `axis` (not 0) from write_indices[b] on; linear mode requires the update to
//     fit, circular mode wraps modulo the cache length.
#include <cstring>

#include "data_movement.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

double base_coordinate(int64_t i, int64_t len, bool align_corners) {
  const double l = static_cast<double>(len), x = static_cast<double>(i);
  if (align_corners) return len == 1 ? -1.0 : -1.0 + 2.0 * x / (l - 1);
  return -1.0 + (2.0 * x + 1.0) / l;
}

void affine_grid_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& theta = ctx.required_input(0);
  const loom_tensor_t& size_t_ = ctx.required_input(1);
  dispatch<kFloats>(theta.dtype, where + " theta", []<typename T>() {});
  if (size_t_.rank != 1)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": size must be 1-D, got rank " + std::to_string(size_t_.rank));
  const std::vector<int64_t> size = read_int_values(ctx, size_t_, "size");
  if (size.size() != 4 && size.size() != 5)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": size must be [N, C, H, W] or [N, C, D, H, W], got " +
                                       std::to_string(size.size()) + " values");
  for (int64_t v : size)
    if (v < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": size " + shape_string(size) + " is negative");
  const int64_t r = static_cast<int64_t>(size.size()) - 2;  // spatial axes: 2 or 3
  const int64_t N = size[0];
  if (theta.rank != 3 || theta.dims[0] != N || theta.dims[1] != r || theta.dims[2] != r + 1)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": theta " + shape_string(dims_of(theta)) +
                                       " must be [N, " + std::to_string(r) + ", " +
                                       std::to_string(r + 1) + "] for size " + shape_string(size));
  const bool align = ctx.attrs().get_int("align_corners", 0) != 0;
  std::vector<int64_t> out_dims = {N};
  for (int64_t k = 0; k < r; ++k) out_dims.push_back(size[2 + k]);
  out_dims.push_back(r);
  loom_tensor_t& y = ctx.allocate_output(0, theta.dtype, out_dims);
  const int64_t total = sdk::element_count(y);
  if (total == 0) return;
  const std::vector<double> t = misc::read_as<double>(theta, where + " theta");
  // Spatial extents innermost first: (W, H) or (W, H, D), matching the coordinates (x, y, z).
  int64_t ext[3] = {1, 1, 1};
  for (int64_t k = 0; k < r; ++k) ext[k] = size[size.size() - 1 - static_cast<size_t>(k)];
  const int64_t points = total / (N * r);
  std::vector<double> out(static_cast<size_t>(total));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < points; ++p) {
      double base[4];
      int64_t rest = p;
      for (int64_t k = 0; k < r; ++k) {
        base[k] = base_coordinate(rest % ext[k], ext[k], align);
        rest /= ext[k];
      }
      base[r] = 1.0;
      const double* tn = &t[static_cast<size_t>(n * r * (r + 1))];
      for (int64_t i = 0; i < r; ++i) {
        double v = 0;
        for (int64_t j = 0; j <= r; ++j) v += tn[i * (r + 1) + j] * base[j];
        out[static_cast<size_t>((n * points + p) * r + i)] = v;
      }
    }
  misc::write_as<double>(y, out, where);
}

void tensor_scatter_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& cache = ctx.required_input(0);
  const loom_tensor_t& update = ctx.required_input(1);
  if (update.dtype != cache.dtype)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": update must have the element type of past_cache");
  if (cache.rank < 2 || update.rank != cache.rank)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": past_cache " + shape_string(dims_of(cache)) +
                                       " and update " + shape_string(dims_of(update)) +
                                       " must have one rank >= 2");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", -2), cache.rank);
  if (axis == 0) fail(LOOM_ERROR_INVALID_MODEL, where + ": axis cannot be 0, the batch dimension");
  for (int32_t d = 0; d < cache.rank; ++d)
    if (d == axis ? update.dims[d] > cache.dims[d] : update.dims[d] != cache.dims[d])
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           where + ": update " + shape_string(dims_of(update)) + " does not fit past_cache " +
               shape_string(dims_of(cache)) + " along axis " + std::to_string(axis));
  const std::string mode = ctx.attrs().get_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    fail(LOOM_ERROR_INVALID_MODEL, where + ": unknown mode '" + mode + "' (linear or circular)");
  const bool circular = mode == "circular";
  const int64_t batch = cache.dims[0], max_len = cache.dims[axis], len = update.dims[axis];
  std::vector<int64_t> starts(static_cast<size_t>(batch), 0);
  if (const loom_tensor_t* w = ctx.input(2)) {
    starts = read_int_values(ctx, *w, "write_indices");
    if (w->rank != 1 || static_cast<int64_t>(starts.size()) != batch)
      fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": write_indices must be [" +
                                            std::to_string(batch) + "], got " +
                                            shape_string(dims_of(*w)));
  }
  for (int64_t s : starts)
    if (s < 0 || (!circular && s > max_len - len))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           where + ": write index " + std::to_string(s) + " with " + std::to_string(len) +
               " updates does not fit a cache of " + std::to_string(max_len) + " (linear mode)");
  const size_t esize = element_size(ctx, cache.dtype);
  OutputBuffer out(ctx, 0, cache.dtype, dims_of(cache));
  const size_t cache_bytes = static_cast<size_t>(sdk::element_count(cache)) * esize;
  if (cache_bytes) std::memcpy(out.data(), cache.data, cache_bytes);
  // Rows of `inner` elements follow the axis; `middle` counts the axes between batch and it.
  int64_t middle = 1, inner = 1;
  for (int64_t d = 1; d < axis; ++d) middle *= cache.dims[d];
  for (int64_t d = axis + 1; d < cache.rank; ++d) inner *= cache.dims[d];
  const size_t row = static_cast<size_t>(inner) * esize;
  auto* dst = static_cast<uint8_t*>(out.data());
  const auto* src = static_cast<const uint8_t*>(update.data);
  if (row && max_len > 0)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t m = 0; m < middle; ++m)
        for (int64_t s = 0; s < len; ++s) {
          const int64_t at = circular ? (starts[b] % max_len + s) % max_len : starts[b] + s;
          std::memcpy(dst + static_cast<size_t>(((b * middle + m) * max_len + at)) * row,
                      src + static_cast<size_t>(((b * middle + m) * len + s)) * row, row);
        }
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("AffineGrid", 20, affine_grid_kernel, nullptr);
LOOM_CPU_KERNEL("TensorScatter", 24, tensor_scatter_kernel, nullptr);

}  // namespace loom::cpu
