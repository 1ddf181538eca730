#include "data_movement.hpp"

#include <algorithm>

namespace loom::cpu {

std::string shape_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

size_t element_size(const KernelContext& ctx, loom_dtype_t dtype) {
  size_t size = sdk::dtype_size(dtype);
  if (size == 0)
    fail(LOOM_ERROR_UNSUPPORTED,
         ctx.where() + ": element type " + sdk::dtype_name(dtype) + " is not supported");
  return size;
}

std::vector<int64_t> read_int_values(const KernelContext& ctx, const loom_tensor_t& t,
                                     const char* what) {
  size_t n = static_cast<size_t>(sdk::element_count(t));
  std::vector<int64_t> v(n);
  if (t.dtype == LOOM_DTYPE_INT64) {
    if (n) std::memcpy(v.data(), t.data, n * sizeof(int64_t));
  } else if (t.dtype == LOOM_DTYPE_INT32) {
    const int32_t* p = static_cast<const int32_t*>(t.data);
    for (size_t i = 0; i < n; ++i) v[i] = p[i];
  } else {
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input '" + what +
                                          "' must be int32 or int64, got " +
                                          sdk::dtype_name(t.dtype));
  }
  return v;
}

double read_scalar_as_double(const KernelContext& ctx, const loom_tensor_t& t, const char* what) {
  if (sdk::element_count(t) != 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input '" + what +
                                          "' must hold exactly one value, got shape " +
                                          shape_string(sdk::shape_of(t)));
  return dispatch<kNumeric | kBool>(
      t.dtype, ctx, [&]<typename T>() { return convert<double>(*static_cast<const T*>(t.data)); });
}

std::vector<float> read_float_values(const KernelContext& ctx, const loom_tensor_t& t,
                                     const char* what) {
  size_t n = static_cast<size_t>(sdk::element_count(t));
  std::vector<float> v(n);
  if (t.dtype != LOOM_DTYPE_FLOAT32 && t.dtype != LOOM_DTYPE_FLOAT64 &&
      t.dtype != LOOM_DTYPE_FLOAT16 && t.dtype != LOOM_DTYPE_BFLOAT16)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input '" + what +
                                          "' must be a floating-point tensor, got " +
                                          sdk::dtype_name(t.dtype));
  dispatch<kFloats>(t.dtype, ctx, [&]<typename T>() {
    const T* p = static_cast<const T*>(t.data);
    for (size_t i = 0; i < n; ++i) v[i] = convert<float>(p[i]);
  });
  return v;
}

void own_strings(Tensor& t) {
  if (t.view.dtype != LOOM_DTYPE_STRING) return;
  size_t n = static_cast<size_t>(sdk::element_count(t.view));
  auto* views = static_cast<loom_string_t*>(t.view.data);
  // Copy first, then re-point: a view may point into the old t.strings.
  auto owned = std::make_shared<std::vector<std::string>>(n);
  for (size_t i = 0; i < n; ++i)
    if (views[i].size) (*owned)[i].assign(views[i].data, views[i].size);
  for (size_t i = 0; i < n; ++i) views[i] = loom_string_t{(*owned)[i].data(), (*owned)[i].size()};
  t.strings = std::move(owned);
}

OutputBuffer::OutputBuffer(KernelContext& ctx, size_t index, loom_dtype_t dtype,
                           std::span<const int64_t> dims)
    : ctx_(ctx), index_(index) {
  for (int64_t d : dims)
    if (d < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": computed output shape " + shape_string(dims) + " is negative");
  if (dtype == LOOM_DTYPE_STRING) {
    owned_ = make_tensor(dtype, dims);
    view_ = &owned_.view;
  } else {
    view_ = &ctx.allocate_output(index, dtype, dims);
  }
}

void OutputBuffer::commit() {
  if (committed_) return;
  committed_ = true;
  if (owned_.view.dtype == LOOM_DTYPE_STRING) {
    own_strings(owned_);
    ctx_.set_output(index_, std::move(owned_));
  }
}

void forward_input_with_shape(KernelContext& ctx, size_t index, std::span<const int64_t> dims) {
  const loom_tensor_t& in = ctx.required_input(index);
  if (dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": output rank " + std::to_string(dims.size()) +
                                     " exceeds the maximum of " + std::to_string(LOOM_MAX_RANK));
  if (product(dims) != sdk::element_count(in))
    fail(LOOM_ERROR_INTERNAL, ctx.where() + ": output shape " + shape_string(dims) +
                                  " does not hold the input's elements");
  const Tensor* src = ctx.input_tensor(index);
  if (src) {
    Tensor out = *src;  // shares the owner (and the strings) of the input
    out.view.rank = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) out.view.dims[i] = dims[i];
    ctx.set_output(0, std::move(out));
    return;
  }
  // No owning tensor available: copy.
  OutputBuffer out(ctx, 0, in.dtype, dims);
  if (in.byte_size) std::memcpy(out.data(), in.data, in.byte_size);
  out.commit();
}

namespace {

template <size_t N>
struct Element {
  unsigned char bytes[N];
};

template <typename Fn>
void with_element_type(size_t esize, Fn&& fn) {
  switch (esize) {
    case 1:
      return fn.template operator()<Element<1>>();
    case 2:
      return fn.template operator()<Element<2>>();
    case 4:
      return fn.template operator()<Element<4>>();
    case 8:
      return fn.template operator()<Element<8>>();
    case 16:
      return fn.template operator()<Element<16>>();
    default:
      fail(LOOM_ERROR_INTERNAL, "unsupported element size " + std::to_string(esize));
  }
}

}  // namespace

void copy_by_axis_maps(const KernelContext& ctx, const void* src, std::span<const int64_t> in_dims,
                       void* dst, std::span<const int64_t> out_dims,
                       const std::vector<std::vector<int64_t>>& maps, size_t esize,
                       const void* fill) {
  const size_t rank = out_dims.size();
  if (product(out_dims) == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, esize);
    return;
  }
  const std::vector<int64_t> in_strides = strides_of(in_dims);
  const int64_t inner = out_dims[rank - 1];
  const size_t rows = static_cast<size_t>(product(out_dims, 0, rank - 1));
  const std::vector<int64_t>& inner_map = maps[rank - 1];
  bool inner_contiguous = inner_map[0] >= 0;
  bool inner_has_fill = false;
  for (int64_t j = 0; j < inner; ++j) {
    if (inner_map[j] < 0) inner_has_fill = true;
    if (inner_map[j] != inner_map[0] + j) inner_contiguous = false;
  }
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);

  with_element_type(esize, [&]<typename E>() {
    const E fill_value = fill ? *static_cast<const E*>(fill) : E{};
    const E* in_e = reinterpret_cast<const E*>(in);
    ctx.parallel_for(rows, std::max<size_t>(1, 16384 / static_cast<size_t>(inner) / esize + 1),
                     [&](size_t begin, size_t end) {
                       std::vector<int64_t> coord(rank, 0);
                       size_t r = begin;
                       for (size_t d = rank - 1; d-- > 0;) {
                         coord[d] = static_cast<int64_t>(r % static_cast<size_t>(out_dims[d]));
                         r /= static_cast<size_t>(out_dims[d]);
                       }
                       for (size_t row = begin; row < end; ++row) {
                         E* o = reinterpret_cast<E*>(out) + row * static_cast<size_t>(inner);
                         int64_t base = 0;
                         bool filled = false;
                         for (size_t d = 0; d + 1 < rank; ++d) {
                           int64_t m = maps[d][coord[d]];
                           if (m < 0) {
                             filled = true;
                             break;
                           }
                           base += m * in_strides[d];
                         }
                         if (filled) {
                           std::fill(o, o + inner, fill_value);
                         } else if (inner_contiguous) {
                           std::memcpy(o, in_e + base + inner_map[0],
                                       static_cast<size_t>(inner) * sizeof(E));
                         } else if (inner_has_fill) {
                           for (int64_t j = 0; j < inner; ++j)
                             o[j] = inner_map[j] < 0 ? fill_value : in_e[base + inner_map[j]];
                         } else {
                           for (int64_t j = 0; j < inner; ++j) o[j] = in_e[base + inner_map[j]];
                         }
                         for (size_t d = rank - 1; d-- > 0;) {
                           if (++coord[d] < out_dims[d]) break;
                           coord[d] = 0;
                         }
                       }
                     });
  });
}

void transpose_elements(const KernelContext& ctx, const void* src, std::span<const int64_t> in_dims,
                        std::span<const int64_t> perm, void* dst, size_t esize) {
  const size_t total = static_cast<size_t>(product(in_dims));
  if (total == 0) return;
  // Drop size-1 axes, then merge runs of output axes that are adjacent and in order in the
  // input: such a run moves as one bigger axis.
  std::vector<int64_t> kept;  // input axes of size > 1 in output order
  for (int64_t p : perm)
    if (in_dims[p] != 1) kept.push_back(p);
  std::vector<int64_t> sorted = kept;
  std::sort(sorted.begin(), sorted.end());
  // Renumber kept input axes to 0..k-1.
  std::vector<int64_t> rank_of(in_dims.size(), -1);
  for (size_t i = 0; i < sorted.size(); ++i) rank_of[sorted[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> merged_perm;          // over merged input axes
  std::vector<std::vector<int64_t>> groups;  // input axes (renumbered) of each output group
  for (int64_t p : kept) {
    int64_t r = rank_of[p];
    if (!groups.empty() && groups.back().back() + 1 == r) {
      groups.back().push_back(r);
    } else {
      groups.push_back({r});
    }
  }
  // Merged input axes are the groups ordered by their first input axis.
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return groups[a].front() < groups[b].front(); });
  std::vector<int64_t> mdims(groups.size());
  std::vector<int64_t> input_pos(groups.size());
  for (size_t i = 0; i < order.size(); ++i) {
    input_pos[order[i]] = static_cast<int64_t>(i);
    int64_t n = 1;
    for (int64_t r : groups[order[i]]) n *= in_dims[sorted[r]];
    mdims[i] = n;
  }
  for (size_t g = 0; g < groups.size(); ++g) merged_perm.push_back(input_pos[g]);

  const size_t rank = mdims.size();
  bool identity = true;
  for (size_t i = 0; i < rank; ++i)
    identity = identity && merged_perm[i] == static_cast<int64_t>(i);
  if (identity) {
    std::memcpy(dst, src, total * esize);
    return;
  }
  const std::vector<int64_t> in_strides = strides_of(mdims);
  std::vector<int64_t> out_dims(rank), src_stride(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = mdims[merged_perm[i]];
    src_stride[i] = in_strides[merged_perm[i]];
  }

  with_element_type(esize, [&]<typename E>() {
    const E* in = static_cast<const E*>(src);
    E* out = static_cast<E*>(dst);
    if (rank == 2) {
      // out[i][j] = in[j][i]; blocked so both sides stay in cache.
      const int64_t rows = out_dims[0], cols = out_dims[1];
      constexpr int64_t kBlock = 32;
      const size_t row_blocks = static_cast<size_t>((rows + kBlock - 1) / kBlock);
      ctx.parallel_for(row_blocks, 1, [&](size_t begin, size_t end) {
        for (size_t rb = begin; rb < end; ++rb) {
          int64_t i0 = static_cast<int64_t>(rb) * kBlock, i1 = std::min(rows, i0 + kBlock);
          for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
            int64_t j1 = std::min(cols, j0 + kBlock);
            for (int64_t i = i0; i < i1; ++i)
              for (int64_t j = j0; j < j1; ++j) out[i * cols + j] = in[j * rows + i];
          }
        }
      });
      return;
    }
    // General case: walk output rows (all axes but the last), gather the last axis by stride.
    const int64_t inner = out_dims[rank - 1];
    const int64_t inner_stride = src_stride[rank - 1];
    const size_t rows = total / static_cast<size_t>(inner);
    ctx.parallel_for(rows, std::max<size_t>(1, 4096 / static_cast<size_t>(inner)),
                     [&](size_t begin, size_t end) {
                       std::vector<int64_t> coord(rank, 0);
                       size_t r = begin;
                       int64_t base = 0;
                       for (size_t d = rank - 1; d-- > 0;) {
                         coord[d] = static_cast<int64_t>(r % static_cast<size_t>(out_dims[d]));
                         r /= static_cast<size_t>(out_dims[d]);
                         base += coord[d] * src_stride[d];
                       }
                       for (size_t row = begin; row < end; ++row) {
                         E* o = out + row * static_cast<size_t>(inner);
                         const E* i = in + base;
                         for (int64_t j = 0; j < inner; ++j) o[j] = i[j * inner_stride];
                         for (size_t d = rank - 1; d-- > 0;) {
                           base += src_stride[d];
                           if (++coord[d] < out_dims[d]) break;
                           base -= coord[d] * src_stride[d];
                           coord[d] = 0;
                         }
                       }
                     });
  });
}

}  // namespace loom::cpu
