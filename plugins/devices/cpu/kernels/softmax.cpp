// Softmax, LogSoftmax and Hardmax.
//
// Before opset 13 the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] and the
// op normalises each row (axis defaults to 1); from opset 13 it normalises along the one
// dimension `axis` (default -1). Both are an [outer, len, inner] view: inner = 1 for the old
// form. Values compute in float (double for float64), max-subtracted for stability.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

enum class Norm { kSoftmax, kLogSoftmax, kHardmax };

struct Layout {
  size_t outer = 1, len = 1, inner = 1;
};

Layout layout_of(const KernelContext& ctx, const loom_tensor_t& x) {
  const bool coerce_2d = ctx.opset() < 13;
  int64_t axis = ctx.attrs().get_int("axis", coerce_2d ? 1 : -1);
  // The old form also accepts axis == rank (then every row has one element... of length 1).
  int64_t hi = coerce_2d ? x.rank : x.rank - 1;
  if (axis < -x.rank || axis > hi || (x.rank == 0 && !coerce_2d))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": axis " + std::to_string(axis) +
                                          " is out of range for rank " + std::to_string(x.rank));
  if (axis < 0) axis += x.rank;
  Layout l;
  for (int64_t d = 0; d < axis; ++d) l.outer *= static_cast<size_t>(x.dims[d]);
  if (coerce_2d) {
    for (int64_t d = axis; d < x.rank; ++d) l.len *= static_cast<size_t>(x.dims[d]);
  } else {
    l.len = static_cast<size_t>(x.dims[axis]);
    for (int64_t d = axis + 1; d < x.rank; ++d) l.inner *= static_cast<size_t>(x.dims[d]);
  }
  return l;
}

// Normalises one [len, inner] block from `in` into `out`, using lane buffers m and s.
// Normalises one contiguous row (inner == 1, the common case) with scalar accumulators.
template <Norm Op, typename T, typename C>
void normalise_row(const T* in, T* out, size_t len) {
  C m = -std::numeric_limits<C>::infinity();
  size_t arg = 0;
  for (size_t j = 0; j < len; ++j) {
    C v = convert<C>(in[j]);
    if (v > m) {
      m = v;
      arg = j;
    }
  }
  if constexpr (Op == Norm::kHardmax) {
    for (size_t j = 0; j < len; ++j) out[j] = convert<T>(C(j == arg ? 1 : 0));
  } else if constexpr (Op == Norm::kSoftmax) {
    C sum = 0;
    if constexpr (std::is_same_v<T, C>) {
      for (size_t j = 0; j < len; ++j) {
        C e = std::exp(in[j] - m);
        out[j] = e;  // stored now, scaled below: exp runs once per element
        sum += e;
      }
      const C scale = C(1) / sum;
      for (size_t j = 0; j < len; ++j) out[j] *= scale;
    } else {  // 16-bit storage would round e twice: recompute it instead
      for (size_t j = 0; j < len; ++j) sum += std::exp(convert<C>(in[j]) - m);
      for (size_t j = 0; j < len; ++j) out[j] = convert<T>(std::exp(convert<C>(in[j]) - m) / sum);
    }
  } else {
    C sum = 0;
    for (size_t j = 0; j < len; ++j) sum += std::exp(convert<C>(in[j]) - m);
    // (x - max) - log(sum), not x - (max + log(sum)): the latter cancels digits for large x.
    const C log_sum = std::log(sum);
    for (size_t j = 0; j < len; ++j) out[j] = convert<T>((convert<C>(in[j]) - m) - log_sum);
  }
}

template <Norm Op, typename T, typename C>
void normalise_block(const T* in, T* out, const Layout& l, std::vector<C>& m, std::vector<C>& s) {
  const size_t len = l.len, inner = l.inner;
  if (inner == 1) {
    normalise_row<Op, T, C>(in, out, len);
    return;
  }
  std::fill(m.begin(), m.end(), -std::numeric_limits<C>::infinity());
  std::vector<size_t> arg(Op == Norm::kHardmax ? inner : 0, 0);
  for (size_t j = 0; j < len; ++j)
    for (size_t t = 0; t < inner; ++t) {
      C v = convert<C>(in[j * inner + t]);
      if (v > m[t]) {
        m[t] = v;
        if constexpr (Op == Norm::kHardmax) arg[t] = j;
      }
    }
  if constexpr (Op == Norm::kHardmax) {
    for (size_t j = 0; j < len; ++j)
      for (size_t t = 0; t < inner; ++t) out[j * inner + t] = convert<T>(C(arg[t] == j ? 1 : 0));
    return;
  } else {
    std::fill(s.begin(), s.end(), C(0));
    for (size_t j = 0; j < len; ++j)
      for (size_t t = 0; t < inner; ++t) s[t] += std::exp(convert<C>(in[j * inner + t]) - m[t]);
    for (size_t j = 0; j < len; ++j)
      for (size_t t = 0; t < inner; ++t) {
        C shifted = convert<C>(in[j * inner + t]) - m[t];
        if constexpr (Op == Norm::kSoftmax)
          out[j * inner + t] = convert<T>(std::exp(shifted) / s[t]);
        else
          out[j * inner + t] = convert<T>(shifted - std::log(s[t]));
      }
  }
}

template <Norm Op>
void norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  if (sdk::element_count(x) == 0) return;
  const Layout l = layout_of(ctx, x);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = static_cast<const T*>(x.data);
    T* dst = static_cast<T*>(out.data);
    const size_t block = l.len * l.inner;
    size_t grain = std::max<size_t>(1, kElementwiseGrain / std::max<size_t>(1, block));
    ctx.parallel_for(l.outer, grain, [&](size_t begin, size_t end) {
      std::vector<C> m(l.inner), s(l.inner);
      for (size_t o = begin; o < end; ++o)
        normalise_block<Op, T, C>(in + o * block, dst + o * block, l, m, s);
    });
  });
}

LOOM_CPU_KERNEL("Softmax", 1, norm_kernel<Norm::kSoftmax>, nullptr);
LOOM_CPU_KERNEL("LogSoftmax", 1, norm_kernel<Norm::kLogSoftmax>, nullptr);
LOOM_CPU_KERNEL("Hardmax", 1, norm_kernel<Norm::kHardmax>, nullptr);

}  // namespace
}  // namespace loom::cpu
