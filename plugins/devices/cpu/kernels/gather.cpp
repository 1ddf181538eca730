// Gather, GatherElements and GatherND. Negative indices count from the end of the axis; an
// index outside [-n, n) is an error naming the node, the index and the axis size.
#include <algorithm>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

// Indices as int64 with negatives resolved against `n`; throws on out-of-range values.
std::vector<int64_t> checked_indices(const KernelContext& ctx, const loom_tensor_t& t, int64_t n,
                                     int64_t axis) {
  std::vector<int64_t> idx = read_int_values(ctx, t, "indices");
  for (int64_t& i : idx) {
    if (i < -n || i >= n)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": index " + std::to_string(i) +
                                            " is out of range for axis " + std::to_string(axis) +
                                            " of size " + std::to_string(n));
    if (i < 0) i += n;
  }
  return idx;
}

void gather_kernel(KernelContext& ctx) {
  const loom_tensor_t& data = ctx.required_input(0);
  const loom_tensor_t& indices = ctx.required_input(1);
  if (data.rank == 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": data must not be a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), data.rank);
  const int64_t n = data.dims[axis];
  const std::vector<int64_t> idx = checked_indices(ctx, indices, n, axis);
  std::vector<int64_t> out_dims(data.dims, data.dims + axis);
  out_dims.insert(out_dims.end(), indices.dims, indices.dims + indices.rank);
  out_dims.insert(out_dims.end(), data.dims + axis + 1, data.dims + data.rank);
  if (out_dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": output rank " + std::to_string(out_dims.size()) +
                                     " exceeds the maximum of " + std::to_string(LOOM_MAX_RANK));
  const size_t esize = element_size(ctx, data.dtype);
  const auto dims = sdk::shape_of(data);
  const size_t outer = static_cast<size_t>(product(dims, 0, static_cast<size_t>(axis)));
  const size_t inner = static_cast<size_t>(product(dims, static_cast<size_t>(axis) + 1)) * esize;
  const size_t count = idx.size();
  OutputBuffer out(ctx, 0, data.dtype, out_dims);
  const auto* src = static_cast<const unsigned char*>(data.data);
  auto* dst = static_cast<unsigned char*>(out.data());
  if (inner > 0) {
    ctx.parallel_for(outer * count, std::max<size_t>(1, 16384 / inner), [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const size_t o = r / count, k = r % count;
        std::memcpy(dst + r * inner, src + (o * static_cast<size_t>(n) + idx[k]) * inner, inner);
      }
    });
  }
  out.commit();
}

void gather_elements_kernel(KernelContext& ctx) {
  const loom_tensor_t& data = ctx.required_input(0);
  const loom_tensor_t& indices = ctx.required_input(1);
  if (indices.rank != data.rank || data.rank == 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": indices " + shape_string(sdk::shape_of(indices)) +
             " must have the rank of data " + shape_string(sdk::shape_of(data)) + " (at least 1)");
  const int64_t rank = data.rank;
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dims[d] > data.dims[d])
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": indices " + shape_string(sdk::shape_of(indices)) + " exceed data " +
               shape_string(sdk::shape_of(data)) + " on axis " + std::to_string(d));
  const std::vector<int64_t> idx = checked_indices(ctx, indices, data.dims[axis], axis);
  const size_t esize = element_size(ctx, data.dtype);
  const std::vector<int64_t> data_strides = strides_of(sdk::shape_of(data));
  OutputBuffer out(ctx, 0, data.dtype, sdk::shape_of(indices));
  const auto* src = static_cast<const unsigned char*>(data.data);
  auto* dst = static_cast<unsigned char*>(out.data());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += (d == axis ? idx[i] : coord[d]) * data_strides[d];
    std::memcpy(dst + i * esize, src + static_cast<size_t>(offset) * esize, esize);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coord[d] < indices.dims[d]) break;
      coord[d] = 0;
    }
  }
  out.commit();
}

void gather_nd_kernel(KernelContext& ctx) {
  const loom_tensor_t& data = ctx.required_input(0);
  const loom_tensor_t& indices = ctx.required_input(1);
  const int64_t b = ctx.attrs().get_int("batch_dims", 0);
  const int64_t r = data.rank, q = indices.rank;
  if (q < 1 || b < 0 || b >= std::min(r, q))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": batch_dims " + std::to_string(b) +
                                          " is invalid for data of rank " + std::to_string(r) +
                                          " and indices of rank " + std::to_string(q));
  const int64_t k = indices.dims[q - 1];
  if (k < 1 || k > r - b)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": the last indices dimension " +
                                          std::to_string(k) + " must be in [1, " +
                                          std::to_string(r - b) + "]");
  for (int64_t d = 0; d < b; ++d)
    if (data.dims[d] != indices.dims[d])
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": batch dimension " + std::to_string(d) +
                                            " differs between data " +
                                            shape_string(sdk::shape_of(data)) + " and indices " +
                                            shape_string(sdk::shape_of(indices)));
  std::vector<int64_t> out_dims(indices.dims, indices.dims + q - 1);
  out_dims.insert(out_dims.end(), data.dims + b + k, data.dims + r);
  const auto ddims = sdk::shape_of(data);
  const std::vector<int64_t> strides = strides_of(ddims);
  const size_t esize = element_size(ctx, data.dtype);
  const size_t slice = static_cast<size_t>(product(ddims, static_cast<size_t>(b + k))) * esize;
  const int64_t batches = product(ddims, 0, static_cast<size_t>(b));
  const int64_t batch_stride = product(ddims, static_cast<size_t>(b));
  const int64_t rows_per_batch =
      product(sdk::shape_of(indices), static_cast<size_t>(b), static_cast<size_t>(q - 1));
  const std::vector<int64_t> idx = read_int_values(ctx, indices, "indices");
  std::vector<int64_t> offsets(static_cast<size_t>(batches * rows_per_batch));
  for (size_t row = 0; row < offsets.size(); ++row) {
    int64_t offset =
        static_cast<int64_t>(row) / std::max<int64_t>(rows_per_batch, 1) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = idx[row * k + j];
      const int64_t n = data.dims[b + j];
      if (v < -n || v >= n)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             ctx.where() + ": index " + std::to_string(v) + " is out of range for data axis " +
                 std::to_string(b + j) + " of size " + std::to_string(n));
      if (v < 0) v += n;
      offset += v * strides[b + j];
    }
    offsets[row] = offset;
  }
  OutputBuffer out(ctx, 0, data.dtype, out_dims);
  const auto* src = static_cast<const unsigned char*>(data.data);
  auto* dst = static_cast<unsigned char*>(out.data());
  if (slice > 0)
    for (size_t row = 0; row < offsets.size(); ++row)
      std::memcpy(dst + row * slice, src + static_cast<size_t>(offsets[row]) * esize, slice);
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Gather", 1, gather_kernel, nullptr);
LOOM_CPU_KERNEL("GatherElements", 11, gather_elements_kernel, nullptr);
LOOM_CPU_KERNEL("GatherND", 11, gather_nd_kernel, nullptr);

}  // namespace loom::cpu
