// Elementwise helpers of the cpu device: numpy-style multidirectional broadcasting shared by
// every elementwise kernel (binary math, comparisons, Where, variadic Sum/Max..., PRelu...).
//
//   std::vector<int64_t> shape = broadcast_shapes(ctx, {a.view, b.view});
//   loom_tensor_t& out = ctx.allocate_output(0, dtype, shape);
//   broadcast_apply<2>(ctx, out, {&a, &b}, [&](size_t o, size_t n, const size_t* in, const size_t*
//   step) {
//     for (size_t i = 0; i < n; ++i) out_ptr[o + i] = f(a_ptr[in[0] + i * step[0]], ...);
//   });
//
// How it is fast: the shapes are aligned to the output rank and adjacent dimensions in which
// every operand behaves alike (all full, or each consistently broadcast) are merged. Same-shape
// operands collapse to one long row, a scalar operand to stride 0, so the common cases reach
// the kernel as one contiguous row per thread, which the compiler vectorises. Otherwise the
// output is walked row by row (the innermost merged dimension) with per-operand start offsets
// and a step of 0 (broadcast) or 1 (contiguous). Work is split over threads by output element.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../kernel.hpp"
#include "../types.hpp"

namespace loom::cpu {

// The type an element type is computed in: float for float16/bfloat16, itself otherwise.
template <typename T>
using compute_t = std::conditional_t<is_half_like_v<T>, float, T>;

// The dtype of a C++ element type (the inverse of DTypeTraits).
template <typename T>
constexpr loom_dtype_t dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return LOOM_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return LOOM_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, Half>)
    return LOOM_DTYPE_FLOAT16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return LOOM_DTYPE_BFLOAT16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return LOOM_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return LOOM_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return LOOM_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return LOOM_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return LOOM_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return LOOM_DTYPE_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return LOOM_DTYPE_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return LOOM_DTYPE_UINT64;
  else if constexpr (std::is_same_v<T, bool>)
    return LOOM_DTYPE_BOOL;
  else if constexpr (std::is_same_v<T, loom_string_t>)
    return LOOM_DTYPE_STRING;
  else
    return LOOM_DTYPE_UNDEFINED;
}

// Throws INVALID_ARGUMENT naming the node unless every tensor has the dtype of the first.
inline void require_same_dtype(const KernelContext& ctx,
                               std::initializer_list<const loom_tensor_t*> tensors) {
  const loom_tensor_t* first = *tensors.begin();
  for (const loom_tensor_t* t : tensors)
    if (t->dtype != first->dtype)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": inputs have different element types (" +
                                            sdk::dtype_name(first->dtype) + " and " +
                                            sdk::dtype_name(t->dtype) + ")");
}

// Output shape of broadcasting the tensors' shapes together; throws INVALID_ARGUMENT naming
// the node when they are incompatible.
inline std::vector<int64_t> broadcast_shapes(const KernelContext& ctx,
                                             std::span<const loom_tensor_t* const> tensors) {
  int32_t rank = 0;
  for (const loom_tensor_t* t : tensors) rank = std::max(rank, t->rank);
  std::vector<int64_t> out(static_cast<size_t>(rank), 1);
  for (const loom_tensor_t* t : tensors) {
    int32_t shift = rank - t->rank;
    for (int32_t d = 0; d < t->rank; ++d) {
      int64_t& o = out[static_cast<size_t>(d + shift)];
      int64_t e = t->dims[d];
      if (e == o || e == 1) continue;
      if (o == 1) {
        o = e;
        continue;
      }
      std::string shapes;
      for (const loom_tensor_t* s : tensors) {
        shapes += shapes.empty() ? "[" : " and [";
        for (int32_t k = 0; k < s->rank; ++k) shapes += (k ? "," : "") + std::to_string(s->dims[k]);
        shapes += "]";
      }
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": shapes " + shapes + " cannot be broadcast");
    }
  }
  return out;
}
inline std::vector<int64_t> broadcast_shapes(const KernelContext& ctx,
                                             std::initializer_list<const loom_tensor_t*> tensors) {
  return broadcast_shapes(ctx,
                          std::span<const loom_tensor_t* const>(tensors.begin(), tensors.size()));
}

// Before opset 7, binary elementwise ops (Add, Mul, Equal, And, Pow...) did not broadcast
// implicitly: with the attribute broadcast=1 only B broadcasts to A's shape, B's dims aligned
// at `axis` (trailing when absent); with broadcast=0 the shapes must be equal. Returns the view
// of B (same data, dims padded with 1s) that numpy-style broadcasting then handles; from opset 7
// on it returns B unchanged.
inline loom_tensor_t legacy_broadcast_view(const KernelContext& ctx, const loom_tensor_t& a,
                                           const loom_tensor_t& b) {
  loom_tensor_t v = b;
  if (ctx.opset() >= 7) return v;
  auto shape_text = [](const loom_tensor_t& t) {
    std::string s = "[";
    for (int32_t k = 0; k < t.rank; ++k) s += (k ? "," : "") + std::to_string(t.dims[k]);
    return s + "]";
  };
  auto same_shape = [](const loom_tensor_t& x, const loom_tensor_t& y) {
    if (x.rank != y.rank) return false;
    for (int32_t k = 0; k < x.rank; ++k)
      if (x.dims[k] != y.dims[k]) return false;
    return true;
  };
  if (ctx.attrs().get_int("broadcast", 0) == 0) {
    if (!same_shape(a, b))
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": shapes " + shape_text(a) + " and " +
                                            shape_text(b) + " differ and broadcast=0 (opset " +
                                            std::to_string(ctx.opset()) +
                                            " does not broadcast implicitly)");
    return v;
  }
  if (b.rank > a.rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": B " + shape_text(b) + " has more dims than A " + shape_text(a));
  int64_t axis = a.rank - b.rank;
  if (ctx.attrs().has("axis")) {
    axis = ctx.attrs().get_int("axis", 0);
    if (axis < 0) axis += a.rank;
    if (axis < 0 || axis + b.rank > a.rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": axis " + std::to_string(ctx.attrs().get_int("axis", 0)) +
               " does not fit B " + shape_text(b) + " into A " + shape_text(a));
  }
  v.rank = a.rank;
  for (int32_t k = 0; k < a.rank; ++k) {
    int64_t j = k - axis;
    v.dims[k] = (j >= 0 && j < b.rank) ? b.dims[j] : 1;
    if (v.dims[k] != 1 && v.dims[k] != a.dims[k])
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": B " + shape_text(b) +
                                            " does not broadcast to A " + shape_text(a) +
                                            " at axis " + std::to_string(axis));
  }
  return v;
}

// Iteration plan of N operands broadcast to an output shape (see the file comment).
template <size_t N>
class BroadcastPlan {
 public:
  BroadcastPlan(std::span<const int64_t> out_shape, const std::array<const loom_tensor_t*, N>& in) {
    total_ = 1;
    for (int64_t e : out_shape) total_ *= static_cast<size_t>(e);
    const size_t rank = out_shape.size();
    // Per output dim: extent and each operand's element stride (0 when broadcast).
    std::vector<size_t> extent;
    std::vector<std::array<size_t, N>> stride;
    std::array<size_t, N> running{};
    running.fill(1);
    // Walk from the innermost dim outwards so strides are known as we go.
    for (size_t r = rank; r-- > 0;) {
      size_t e = static_cast<size_t>(out_shape[r]);
      std::array<size_t, N> s{};
      for (size_t k = 0; k < N; ++k) {
        int32_t shift = static_cast<int32_t>(rank) - in[k]->rank;
        int32_t d = static_cast<int32_t>(r) - shift;
        size_t ek = d >= 0 ? static_cast<size_t>(in[k]->dims[d]) : 1;
        s[k] = (ek == 1) ? 0 : running[k];
        running[k] *= ek;
      }
      if (e == 1) continue;  // contributes nothing to the iteration
      // Merge into the previous (inner) dim when every operand continues it seamlessly.
      if (!extent.empty()) {
        bool merge = true;
        for (size_t k = 0; k < N; ++k)
          if (s[k] != stride.back()[k] * extent.back()) merge = false;
        if (merge) {
          extent.back() *= e;
          continue;
        }
      }
      extent.push_back(e);
      stride.push_back(s);
    }
    // extent/stride are innermost first.
    if (extent.empty()) {
      extent.push_back(1);
      stride.push_back({});
    }
    row_ = extent[0];
    for (size_t k = 0; k < N; ++k) step_[k] = stride[0][k];
    outer_extent_.assign(extent.begin() + 1, extent.end());
    outer_stride_.assign(stride.begin() + 1, stride.end());
  }

  size_t total() const { return total_; }
  size_t row_length() const { return row_; }

  // Calls fn(out_offset, count, in_offsets, in_steps) for the output elements [begin, end),
  // one call per (partial) row.
  template <typename Fn>
  void for_range(size_t begin, size_t end, Fn&& fn) const {
    if (begin >= end) return;
    size_t row = begin / row_, col = begin % row_;
    // Multi-index of `row` over the outer dims, and each operand's offset there.
    std::vector<size_t> index(outer_extent_.size());
    std::array<size_t, N> base{};
    size_t rest = row;
    for (size_t d = 0; d < outer_extent_.size(); ++d) {
      index[d] = rest % outer_extent_[d];
      rest /= outer_extent_[d];
      for (size_t k = 0; k < N; ++k) base[k] += index[d] * outer_stride_[d][k];
    }
    size_t pos = begin;
    while (pos < end) {
      size_t count = std::min(row_ - col, end - pos);
      std::array<size_t, N> off;
      for (size_t k = 0; k < N; ++k) off[k] = base[k] + col * step_[k];
      fn(pos, count, off.data(), step_.data());
      pos += count;
      col = 0;
      // Advance the outer multi-index by one row (odometer).
      for (size_t d = 0; d < outer_extent_.size(); ++d) {
        for (size_t k = 0; k < N; ++k) base[k] += outer_stride_[d][k];
        if (++index[d] < outer_extent_[d]) break;
        for (size_t k = 0; k < N; ++k) base[k] -= outer_stride_[d][k] * outer_extent_[d];
        index[d] = 0;
      }
    }
  }

 private:
  size_t total_ = 0;
  size_t row_ = 1;
  std::array<size_t, N> step_{};
  std::vector<size_t> outer_extent_;
  std::vector<std::array<size_t, N>> outer_stride_;
};

// Elements per thread chunk below which splitting costs more than it saves.
inline constexpr size_t kElementwiseGrain = 16384;

// Runs fn (see BroadcastPlan::for_range) over all of `out`, split over the device's threads.
template <size_t N, typename Fn>
void broadcast_apply(const KernelContext& ctx, const loom_tensor_t& out,
                     const std::array<const loom_tensor_t*, N>& in, Fn&& fn) {
  BroadcastPlan<N> plan(sdk::shape_of(out), in);
  ctx.parallel_for(plan.total(), kElementwiseGrain,
                   [&](size_t begin, size_t end) { plan.for_range(begin, end, fn); });
}

// out[i] = f(a[i], b[i]) with broadcasting. A, B, O are the element types in memory; f takes
// and returns them (or convertible values). Specialised on the two steps so the common
// contiguous/scalar rows become tight loops the compiler vectorises.
template <typename A, typename B, typename O, typename F>
void broadcast_binary(const KernelContext& ctx, const loom_tensor_t& a, const loom_tensor_t& b,
                      loom_tensor_t& out, F f) {
  const A* pa = static_cast<const A*>(a.data);
  const B* pb = static_cast<const B*>(b.data);
  O* po = static_cast<O*>(out.data);
  broadcast_apply<2>(ctx, out, {&a, &b},
                     [&](size_t o, size_t n, const size_t* off, const size_t* step) {
                       const A* x = pa + off[0];
                       const B* y = pb + off[1];
                       O* z = po + o;
                       if (step[0] == 1 && step[1] == 1) {
                         for (size_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
                       } else if (step[0] == 0 && step[1] == 1) {
                         const A xv = x[0];
                         for (size_t i = 0; i < n; ++i) z[i] = f(xv, y[i]);
                       } else if (step[0] == 1 && step[1] == 0) {
                         const B yv = y[0];
                         for (size_t i = 0; i < n; ++i) z[i] = f(x[i], yv);
                       } else {
                         const O v = f(x[0], y[0]);
                         for (size_t i = 0; i < n; ++i) z[i] = v;
                       }
                     });
}

// out[i] = f(a[i], b[i], c[i]) with broadcasting (Where, Clip with tensor bounds...).
template <typename A, typename B, typename C, typename O, typename F>
void broadcast_ternary(const KernelContext& ctx, const loom_tensor_t& a, const loom_tensor_t& b,
                       const loom_tensor_t& c, loom_tensor_t& out, F f) {
  const A* pa = static_cast<const A*>(a.data);
  const B* pb = static_cast<const B*>(b.data);
  const C* pc = static_cast<const C*>(c.data);
  O* po = static_cast<O*>(out.data);
  broadcast_apply<3>(ctx, out, {&a, &b, &c},
                     [&](size_t o, size_t n, const size_t* off, const size_t* step) {
                       const A* x = pa + off[0];
                       const B* y = pb + off[1];
                       const C* w = pc + off[2];
                       O* z = po + o;
                       if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
                         for (size_t i = 0; i < n; ++i) z[i] = f(x[i], y[i], w[i]);
                       } else {
                         for (size_t i = 0; i < n; ++i)
                           z[i] = f(x[i * step[0]], y[i * step[1]], w[i * step[2]]);
                       }
                     });
}

// out[i] = f(in[i]) over same-shape tensors, split over threads.
template <typename I, typename O, typename F>
void map_unary(const KernelContext& ctx, const loom_tensor_t& in, loom_tensor_t& out, F f) {
  const I* pi = static_cast<const I*>(in.data);
  O* po = static_cast<O*>(out.data);
  size_t n = static_cast<size_t>(sdk::element_count(in));
  ctx.parallel_for(n, kElementwiseGrain, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) po[i] = f(pi[i]);
  });
}

}  // namespace loom::cpu
