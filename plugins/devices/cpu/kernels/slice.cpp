// Slice: attributes starts/ends/axes before opset 10, inputs starts/ends/axes/steps from 10.
// Starts and ends are clamped as the spec says, with one exception taken from numpy (which the
// spec names as the model and the ONNX reference uses): with a negative step, a start before
// the first element selects nothing (clamps to -1), where the spec text would clamp it to 0
// and take the first element.
#include <algorithm>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

std::vector<int64_t> int_list(const KernelContext& ctx, size_t input, const char* attr) {
  if (ctx.opset() < 10) {
    auto a = ctx.attrs().get_ints(attr);
    if (!a) return {};
    return {a->begin(), a->end()};
  }
  const loom_tensor_t* t = ctx.input(input);
  if (!t) return {};
  return read_int_values(ctx, *t, attr);
}

void slice_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const int64_t rank = in.rank;
  if (ctx.opset() >= 10) {
    ctx.required_input(1);
    ctx.required_input(2);
  }
  const std::vector<int64_t> starts = int_list(ctx, 1, "starts");
  const std::vector<int64_t> ends = int_list(ctx, 2, "ends");
  std::vector<int64_t> axes = int_list(ctx, 3, "axes");
  std::vector<int64_t> steps =
      ctx.opset() >= 10 ? int_list(ctx, 4, "steps") : std::vector<int64_t>{};
  if (starts.size() != ends.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": starts " + shape_string(starts) +
                                          " and ends " + shape_string(ends) + " differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": starts, ends, axes and steps must have " + "the same length");
  axes = normalize_axes(ctx, axes, rank);

  std::vector<int64_t> out_dims = dims_of(in);
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], dim = in.dims[a];
    const int64_t s = std::max<int64_t>(steps[i], -INT64_MAX);  // keeps -s representable
    if (s == 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": step 0 on axis " + std::to_string(a));
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (dim == 0) {
      b = 0;
      count = 0;
    } else if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = b > e ? (b - e - 1) / -s + 1 : 0;
    }
    out_dims[a] = count;
    first[a] = b;
    step[a] = s;
  }
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    maps[d].resize(static_cast<size_t>(out_dims[d]));
    for (int64_t j = 0; j < out_dims[d]; ++j) maps[d][j] = first[d] + j * step[d];
  }
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  copy_by_axis_maps(ctx, in.data, sdk::shape_of(in), out.data(), out_dims, maps,
                    element_size(ctx, in.dtype), nullptr);
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Slice", 1, slice_kernel, nullptr);

}  // namespace loom::cpu
