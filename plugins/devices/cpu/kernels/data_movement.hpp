// Shared helpers of the data-movement kernels (shape ops, Slice, Gather, Pad, Tile, Resize...).
// These ops are type-agnostic: they move elements by their byte size. STRING tensors move
// their loom_string_t views and then take ownership of the bytes (own_strings), so an output
// never points into an input that may be freed after the node ran.
#pragma once

#include <cstdint>
#include <cstring>
#include <loom/op_semantics.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../kernel.hpp"
#include "../types.hpp"

namespace loom::cpu {

inline std::vector<int64_t> dims_of(const loom_tensor_t& t) {
  return std::vector<int64_t>(t.dims, t.dims + t.rank);
}

inline int64_t product(std::span<const int64_t> dims, size_t begin = 0,
                       size_t end = static_cast<size_t>(-1)) {
  int64_t n = 1;
  for (size_t i = begin; i < dims.size() && i < end; ++i) n *= dims[i];
  return n;
}

// Row-major strides (in elements) of a contiguous tensor.
inline std::vector<int64_t> strides_of(std::span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::string shape_string(std::span<const int64_t> dims);

// Element size in bytes; throws for dtypes without a host layout.
size_t element_size(const KernelContext& ctx, loom_dtype_t dtype);

// Reads an int32/int64 tensor (e.g. axes, pads, shape, repeats) as int64 values.
std::vector<int64_t> read_int_values(const KernelContext& ctx, const loom_tensor_t& t,
                                     const char* what);
// Reads a scalar (or one-element tensor) of any numeric type as double.
double read_scalar_as_double(const KernelContext& ctx, const loom_tensor_t& t, const char* what);
// Reads a float/double/float16 tensor as float values (Resize scales and roi).
std::vector<float> read_float_values(const KernelContext& ctx, const loom_tensor_t& t,
                                     const char* what);

// sdk::normalize_axis / normalize_axes (loom/op_semantics.hpp) naming the node; the node's name
// is built only when an axis is refused.
inline int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (std::optional<int64_t> a = sdk::try_normalize_axis(axis, rank)) return *a;
  return sdk::normalize_axis(axis, rank, ctx.where());
}
inline std::vector<int64_t> normalize_axes(const KernelContext& ctx, std::span<const int64_t> axes,
                                           int64_t rank) {
  return sdk::normalize_axes(axes, rank, ctx.where());
}

// Makes a STRING tensor own its bytes: copies what each loom_string_t points to into
// t.strings (allocating it if needed) and re-points the views. No-op for other dtypes.
void own_strings(Tensor& t);

// An output being filled. Numeric outputs go straight into the interpreter's memory
// (allocate_output); STRING outputs are built as an owned Tensor and handed over by commit().
// Always call commit() once the data is written.
class OutputBuffer {
 public:
  OutputBuffer(KernelContext& ctx, size_t index, loom_dtype_t dtype, std::span<const int64_t> dims);
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;
  loom_tensor_t& view() { return *view_; }
  void* data() { return view_->data; }
  template <typename T>
  T* data_as() {
    return static_cast<T*>(view_->data);
  }
  void commit();

 private:
  KernelContext& ctx_;
  size_t index_;
  Tensor owned_;
  loom_tensor_t* view_ = nullptr;
  bool committed_ = false;
};

// Returns a tensor that shares the memory of input `index` with new dims (element count must
// match): the zero-copy path of Reshape/Flatten/Squeeze/Unsqueeze.
void forward_input_with_shape(KernelContext& ctx, size_t index, std::span<const int64_t> dims);

// True when a shape has a zero extent. Its index maps are not built: with a hostile extent on
// another axis (Pad [2^40, 0]) they would be terabytes for a tensor of no elements.
inline bool empty_output(std::span<const int64_t> dims) {
  for (int64_t d : dims)
    if (d == 0) return true;
  return false;
}

// Copies `esize`-byte elements from `src` (contiguous, dims in_dims) to `dst` (contiguous,
// dims out_dims). The element at output coordinate (o_0, ..., o_n) comes from input coordinate
// (maps[0][o_0], ..., maps[n][o_n]); an entry of -1 writes the `fill` element instead (fill may
// be null only if no entry is -1). One engine for Slice, Pad, Tile, Expand and nearest Resize.
void copy_by_axis_maps(const KernelContext& ctx, const void* src, std::span<const int64_t> in_dims,
                       void* dst, std::span<const int64_t> out_dims,
                       const std::vector<std::vector<int64_t>>& maps, size_t esize,
                       const void* fill);

// Transposes `esize`-byte elements of a contiguous tensor: output axis i is input axis perm[i].
// Collapses axes that stay adjacent, uses a blocked 2-D path for the common case.
void transpose_elements(const KernelContext& ctx, const void* src, std::span<const int64_t> in_dims,
                        std::span<const int64_t> perm, void* dst, size_t esize);

}  // namespace loom::cpu
