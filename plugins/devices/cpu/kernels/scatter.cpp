// Scatter (opset 9, deprecated: same as ScatterElements), ScatterElements and ScatterND, with
// the reductions add/mul (opset 16) and max/min (opset 18). The output starts as a copy of
// data; updates are applied in index order, so duplicate indices reduce deterministically.
#include <algorithm>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const KernelContext& ctx) {
  std::string r = ctx.attrs().get_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max" && ctx.opset() >= 18) return Reduction::kMax;
  if (r == "min" && ctx.opset() >= 18) return Reduction::kMin;
  fail(LOOM_ERROR_INVALID_MODEL,
       ctx.where() + ": unknown reduction '" + r + "' for opset " + std::to_string(ctx.opset()));
}

template <typename T>
T reduce(Reduction r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    // Logical forms: add/max = or, mul/min = and.
    return (r == Reduction::kAdd || r == Reduction::kMax) ? (a || b) : (a && b);
  } else if constexpr (is_half_like_v<T>) {
    return T(reduce<float>(r, static_cast<float>(a), static_cast<float>(b)));
  } else {
    switch (r) {
      case Reduction::kAdd:
        return static_cast<T>(a + b);
      case Reduction::kMul:
        return static_cast<T>(a * b);
      case Reduction::kMax:
        return std::max(a, b);
      case Reduction::kMin:
        return std::min(a, b);
      default:
        return b;
    }
  }
}

// Applies `count` elements of updates at element offsets `dst_offsets[i] + j` (j < run).
// Offsets are in elements of the output.
void apply_updates(const KernelContext& ctx, Reduction r, loom_dtype_t dtype, void* out,
                   const void* updates, const std::vector<int64_t>& dst_offsets, size_t run) {
  if (r == Reduction::kNone) {
    const size_t esize = element_size(ctx, dtype);
    auto* o = static_cast<unsigned char*>(out);
    const auto* u = static_cast<const unsigned char*>(updates);
    for (size_t i = 0; i < dst_offsets.size(); ++i)
      std::memcpy(o + static_cast<size_t>(dst_offsets[i]) * esize, u + i * run * esize,
                  run * esize);
    return;
  }
  dispatch<kNumeric | kBool>(dtype, ctx, [&]<typename T>() {
    T* o = static_cast<T*>(out);
    const T* u = static_cast<const T*>(updates);
    for (size_t i = 0; i < dst_offsets.size(); ++i)
      for (size_t j = 0; j < run; ++j) {
        T& dst = o[dst_offsets[i] + static_cast<int64_t>(j)];
        dst = reduce<T>(r, dst, u[i * run + j]);
      }
  });
}

void copy_data_into(OutputBuffer& out, const loom_tensor_t& data) {
  if (data.byte_size) std::memcpy(out.data(), data.data, data.byte_size);
}

void scatter_elements_kernel(KernelContext& ctx) {
  const loom_tensor_t& data = ctx.required_input(0);
  const loom_tensor_t& indices = ctx.required_input(1);
  const loom_tensor_t& updates = ctx.required_input(2);
  const int64_t rank = data.rank;
  const Reduction r =
      std::string_view(ctx.node().op_type) == "Scatter" ? Reduction::kNone : reduction_of(ctx);
  if (rank == 0 || indices.rank != rank || updates.rank != rank ||
      sdk::shape_of(indices).size() != sdk::shape_of(updates).size() ||
      !std::equal(indices.dims, indices.dims + rank, updates.dims) || updates.dtype != data.dtype)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": indices " + shape_string(sdk::shape_of(indices)) + " and updates " +
             shape_string(sdk::shape_of(updates)) +
             " must have the same shape and the rank of data " + shape_string(sdk::shape_of(data)));
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dims[d] > data.dims[d])
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": indices " + shape_string(sdk::shape_of(indices)) + " exceed data " +
               shape_string(sdk::shape_of(data)) + " on axis " + std::to_string(d));
  const std::vector<int64_t> idx = read_int_values(ctx, indices, "indices");
  const std::vector<int64_t> strides = strides_of(sdk::shape_of(data));
  const int64_t n = data.dims[axis];
  std::vector<int64_t> offsets(idx.size());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t v = idx[i];
    if (v < -n || v >= n)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": index " + std::to_string(v) +
                                            " is out of range for axis " + std::to_string(axis) +
                                            " of size " + std::to_string(n));
    if (v < 0) v += n;
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += (d == axis ? v : coord[d]) * strides[d];
    offsets[i] = offset;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coord[d] < indices.dims[d]) break;
      coord[d] = 0;
    }
  }
  OutputBuffer out(ctx, 0, data.dtype, sdk::shape_of(data));
  copy_data_into(out, data);
  apply_updates(ctx, r, data.dtype, out.data(), updates.data, offsets, 1);
  out.commit();
}

void scatter_nd_kernel(KernelContext& ctx) {
  const loom_tensor_t& data = ctx.required_input(0);
  const loom_tensor_t& indices = ctx.required_input(1);
  const loom_tensor_t& updates = ctx.required_input(2);
  const Reduction r = reduction_of(ctx);
  const int64_t q = indices.rank, rank = data.rank;
  const int64_t k = q >= 1 ? indices.dims[q - 1] : -1;
  if (q < 1 || k < 0 || k > rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": indices " +
                                          shape_string(sdk::shape_of(indices)) +
                                          " do not fit data " + shape_string(sdk::shape_of(data)));
  // updates.shape must be indices.shape[:-1] + data.shape[k:].
  std::vector<int64_t> expected(indices.dims, indices.dims + q - 1);
  expected.insert(expected.end(), data.dims + k, data.dims + rank);
  if (updates.dtype != data.dtype ||
      !std::equal(expected.begin(), expected.end(), updates.dims, updates.dims + updates.rank))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": updates " +
                                          shape_string(sdk::shape_of(updates)) + " should be " +
                                          shape_string(expected));
  const std::vector<int64_t> strides = strides_of(sdk::shape_of(data));
  const std::vector<int64_t> idx = read_int_values(ctx, indices, "indices");
  const size_t rows =
      static_cast<size_t>(product(sdk::shape_of(indices), 0, static_cast<size_t>(q - 1)));
  const size_t run = static_cast<size_t>(product(sdk::shape_of(data), static_cast<size_t>(k)));
  std::vector<int64_t> offsets(rows);
  for (size_t row = 0; row < rows; ++row) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = idx[row * static_cast<size_t>(k) + j];
      const int64_t n = data.dims[j];
      if (v < -n || v >= n)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": index " + std::to_string(v) +
                                              " is out of range for data axis " +
                                              std::to_string(j) + " of size " + std::to_string(n));
      if (v < 0) v += n;
      offset += v * strides[j];
    }
    offsets[row] = offset;
  }
  OutputBuffer out(ctx, 0, data.dtype, sdk::shape_of(data));
  copy_data_into(out, data);
  apply_updates(ctx, r, data.dtype, out.data(), updates.data, offsets, run);
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Scatter", 9, scatter_elements_kernel, nullptr);
LOOM_CPU_KERNEL("ScatterElements", 11, scatter_elements_kernel, nullptr);
LOOM_CPU_KERNEL("ScatterND", 11, scatter_nd_kernel, nullptr);

}  // namespace loom::cpu
