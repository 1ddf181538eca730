// Concat and Split: copy contiguous runs of (outer, axis slab) between tensors.
#include <algorithm>
#include <optional>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void concat_kernel(KernelContext& ctx) {
  const size_t n = ctx.num_inputs();
  if (n == 0) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": needs at least one input");
  const loom_tensor_t& first = ctx.required_input(0);
  if (!ctx.attrs().has("axis"))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'axis' is missing");
  const int64_t rank = first.rank;
  if (rank == 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot concatenate scalars");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  std::vector<int64_t> out_dims = dims_of(first);
  out_dims[axis] = 0;
  for (size_t i = 0; i < n; ++i) {
    const loom_tensor_t& t = ctx.required_input(i);
    bool ok = t.rank == rank && t.dtype == first.dtype;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || t.dims[d] == first.dims[d];
    if (!ok)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": input " + std::to_string(i) + " (" + sdk::dtype_name(t.dtype) + " " +
               shape_string(sdk::shape_of(t)) + ") does not match input 0 (" +
               sdk::dtype_name(first.dtype) + " " + shape_string(sdk::shape_of(first)) +
               ") outside axis " + std::to_string(axis));
    out_dims[axis] += t.dims[axis];
  }
  const size_t esize = element_size(ctx, first.dtype);
  OutputBuffer out(ctx, 0, first.dtype, out_dims);
  const size_t outer = static_cast<size_t>(product(out_dims, 0, static_cast<size_t>(axis)));
  const size_t inner =
      static_cast<size_t>(product(out_dims, static_cast<size_t>(axis) + 1)) * esize;
  const size_t out_row = static_cast<size_t>(out_dims[axis]) * inner;
  auto* dst = static_cast<unsigned char*>(out.data());
  size_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const loom_tensor_t& t = ctx.required_input(i);
    const size_t row = static_cast<size_t>(t.dims[axis]) * inner;
    const auto* src = static_cast<const unsigned char*>(t.data);
    if (row > 0) {
      ctx.parallel_for(outer, std::max<size_t>(1, 65536 / row), [&](size_t b, size_t e) {
        for (size_t o = b; o < e; ++o) std::memcpy(dst + o * out_row + offset, src + o * row, row);
      });
    }
    offset += row;
  }
  out.commit();
}

// Sizes of the Split outputs along the axis.
std::vector<int64_t> split_sizes(const KernelContext& ctx, int64_t dim) {
  const size_t outputs = ctx.num_outputs();
  std::optional<std::vector<int64_t>> split;
  if (ctx.opset() < 13) {
    if (auto a = ctx.attrs().get_ints("split")) split.emplace(a->begin(), a->end());
  } else if (const loom_tensor_t* t = ctx.input(1)) {
    split = read_int_values(ctx, *t, "split");
  }
  if (split) {
    if (split->size() != outputs)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": 'split' has " +
                                            std::to_string(split->size()) + " entries for " +
                                            std::to_string(outputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             ctx.where() + ": 'split' " + shape_string(*split) + " has a negative size");
      sum += s;
    }
    if (sum != dim)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": 'split' " + shape_string(*split) +
                                            " sums to " + std::to_string(sum) +
                                            " but the axis has size " + std::to_string(dim));
    return *split;
  }
  if (outputs == 0) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": has no outputs");
  const int64_t parts = static_cast<int64_t>(outputs);
  std::vector<int64_t> sizes(outputs);
  if (ctx.opset() >= 18 && ctx.attrs().has("num_outputs")) {
    // Opset 18: ceil(dim / n) per output, the last one gets what is left.
    const int64_t num = ctx.attrs().get_int("num_outputs", parts);
    if (num != parts)
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": num_outputs " + std::to_string(num) +
                                         " differs from the node's " + std::to_string(parts) +
                                         " outputs");
    const int64_t chunk = (dim + parts - 1) / parts;
    int64_t left = dim;
    for (auto& s : sizes) {
      s = std::min(chunk, left);
      left -= s;
    }
    return sizes;
  }
  if (dim % parts != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": axis of size " + std::to_string(dim) +
                                          " cannot be split evenly into " + std::to_string(parts) +
                                          " outputs");
  std::fill(sizes.begin(), sizes.end(), dim / parts);
  return sizes;
}

void split_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), in.rank);
  const std::vector<int64_t> sizes = split_sizes(ctx, in.dims[axis]);
  const size_t esize = element_size(ctx, in.dtype);
  const auto dims = sdk::shape_of(in);
  const size_t outer = static_cast<size_t>(product(dims, 0, static_cast<size_t>(axis)));
  const size_t inner = static_cast<size_t>(product(dims, static_cast<size_t>(axis) + 1)) * esize;
  const size_t in_row = static_cast<size_t>(in.dims[axis]) * inner;
  const auto* src = static_cast<const unsigned char*>(in.data);
  size_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t row = static_cast<size_t>(sizes[i]) * inner;
    if (ctx.output_requested(i)) {
      std::vector<int64_t> out_dims = dims_of(in);
      out_dims[axis] = sizes[i];
      OutputBuffer out(ctx, i, in.dtype, out_dims);
      auto* dst = static_cast<unsigned char*>(out.data());
      if (row > 0) {
        ctx.parallel_for(outer, std::max<size_t>(1, 65536 / row), [&](size_t b, size_t e) {
          for (size_t o = b; o < e; ++o) std::memcpy(dst + o * row, src + o * in_row + offset, row);
        });
      }
      out.commit();
    }
    offset += row;
  }
}

}  // namespace

LOOM_CPU_KERNEL("Concat", 1, concat_kernel, nullptr);
LOOM_CPU_KERNEL("Split", 1, split_kernel, nullptr);

}  // namespace loom::cpu
