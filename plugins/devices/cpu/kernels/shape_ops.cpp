// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze. All but Shape/Size only change the
// dims: the output shares the input's memory (no copy).
#include <algorithm>
#include <optional>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void shape_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  int64_t rank = in.rank;
  // Opset 15: optional [start, end) window over the dims, clamped like Python slicing.
  int64_t start = ctx.attrs().get_int("start", 0);
  int64_t end = ctx.attrs().get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  int64_t n = std::max<int64_t>(0, end - start);
  int64_t out_dims[1] = {n};
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_INT64, out_dims);
  for (int64_t i = 0; i < n; ++i) sdk::data_of<int64_t>(out)[i] = in.dims[start + i];
}

void size_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_INT64, {});
  *sdk::data_of<int64_t>(out) = sdk::element_count(in);
}

// Output dims of Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred.
std::vector<int64_t> reshape_dims(const KernelContext& ctx, const loom_tensor_t& in,
                                  std::vector<int64_t> shape, bool allowzero) {
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == -1) {
      if (infer_at >= 0)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             ctx.where() + ": shape " + shape_string(shape) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": shape " + shape_string(shape) +
                                            " has the invalid dimension " + std::to_string(d));
    if (d == 0 && !allowzero) {
      if (static_cast<int32_t>(i) >= in.rank)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             ctx.where() + ": shape " + shape_string(shape) + " copies dimension " +
                 std::to_string(i) + " (0) but the input has rank " + std::to_string(in.rank));
      d = shape[i] = in.dims[i];
    }
    // Checked: a target such as [2^62 + 1, 4] from input data wraps around int64 to the
    // input's element count, and the readers of the result then run off its buffer.
    if (__builtin_mul_overflow(known, d, &known))
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": shape " + shape_string(shape) +
                                            " has more elements than int64 can count");
  }
  const int64_t count = sdk::element_count(in);
  if (infer_at >= 0) {
    if (known == 0 || count % known != 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": cannot reshape input of shape " + shape_string(sdk::shape_of(in)) +
               " (" + std::to_string(count) + " elements) to " + shape_string(shape));
    shape[infer_at] = count / known;
  } else if (known != count) {
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": cannot reshape input of shape " + shape_string(sdk::shape_of(in)) + " (" +
             std::to_string(count) + " elements) to " + shape_string(shape) + " (" +
             std::to_string(known) + " elements)");
  }
  return shape;
}

void reshape_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  std::vector<int64_t> shape;
  if (ctx.opset() < 5) {
    auto attr = ctx.attrs().get_ints("shape");
    if (!attr) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'shape' is missing");
    shape.assign(attr->begin(), attr->end());
  } else {
    shape = read_int_values(ctx, ctx.required_input(1), "shape");
  }
  bool allowzero = ctx.opset() >= 14 && ctx.attrs().get_int("allowzero", 0) != 0;
  forward_input_with_shape(ctx, 0, reshape_dims(ctx, in, std::move(shape), allowzero));
}

void flatten_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  int64_t axis = ctx.attrs().get_int("axis", 1);
  // axis may equal rank (everything in the first dim), so normalise against rank + 1.
  if (axis < -in.rank || axis > in.rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": axis " + std::to_string(axis) +
                                          " is out of range for rank " + std::to_string(in.rank));
  if (axis < 0) axis += in.rank;
  auto dims = sdk::shape_of(in);
  int64_t out[2] = {product(dims, 0, static_cast<size_t>(axis)),
                    product(dims, static_cast<size_t>(axis))};
  forward_input_with_shape(ctx, 0, out);
}

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an optional input from 13.
std::optional<std::vector<int64_t>> axes_argument(const KernelContext& ctx) {
  if (ctx.opset() < 13) {
    auto a = ctx.attrs().get_ints("axes");
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->begin(), a->end());
  }
  const loom_tensor_t* t = ctx.input(1);
  if (!t) return std::nullopt;
  return read_int_values(ctx, *t, "axes");
}

void squeeze_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  auto axes = axes_argument(ctx);
  std::vector<bool> drop(static_cast<size_t>(in.rank), false);
  if (!axes) {
    for (int32_t i = 0; i < in.rank; ++i) drop[i] = in.dims[i] == 1;
  } else {
    for (int64_t a : normalize_axes(ctx, *axes, in.rank)) {
      if (in.dims[a] != 1)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot squeeze axis " +
                                              std::to_string(a) + " of size " +
                                              std::to_string(in.dims[a]) + " (input shape " +
                                              shape_string(sdk::shape_of(in)) + ")");
      drop[a] = true;
    }
  }
  std::vector<int64_t> dims;
  for (int32_t i = 0; i < in.rank; ++i)
    if (!drop[i]) dims.push_back(in.dims[i]);
  forward_input_with_shape(ctx, 0, dims);
}

void unsqueeze_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  auto axes = axes_argument(ctx);
  if (!axes) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": axes are missing");
  const int64_t out_rank = in.rank + static_cast<int64_t>(axes->size());
  if (out_rank > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": output rank " + std::to_string(out_rank) +
                                     " exceeds the maximum of " + std::to_string(LOOM_MAX_RANK));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : normalize_axes(ctx, *axes, out_rank)) inserted[a] = true;
  std::vector<int64_t> dims;
  int32_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) dims.push_back(inserted[i] ? 1 : in.dims[next++]);
  forward_input_with_shape(ctx, 0, dims);
}

}  // namespace

LOOM_CPU_KERNEL("Shape", 1, shape_kernel, nullptr);
LOOM_CPU_KERNEL("Size", 1, size_kernel, nullptr);
LOOM_CPU_KERNEL("Reshape", 1, reshape_kernel, nullptr);
LOOM_CPU_KERNEL("Flatten", 1, flatten_kernel, nullptr);
LOOM_CPU_KERNEL("Squeeze", 1, squeeze_kernel, nullptr);
LOOM_CPU_KERNEL("Unsqueeze", 1, unsqueeze_kernel, nullptr);

}  // namespace loom::cpu
