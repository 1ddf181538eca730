// Reductions: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum
// ReduceLogSumExp ReduceSumSquare, with keepdims and noop_with_empty_axes, and axes from the
// attribute (ReduceSum < 13, the others < 18) or from the optional second input.
//
// Layout: the input's dimensions are merged into runs of kept and reduced dimensions; trailing
// kept dimensions form a contiguous `inner` block. Each output group (a position in the other
// kept dimensions) accumulates `inner` contiguous lanes per reduced position, so both the
// "reduce the last axis" and "reduce a leading axis" cases run over contiguous memory. Groups
// are split over threads. Floats accumulate in double, integers in 64 bits (wrapping as the
// output type would), then convert once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "broadcast.hpp"

namespace loom::cpu {
namespace {

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// The accumulator type of an element type.
template <typename T>
using acc_t =
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;

template <Red Op, typename A>
A red_init() {
  if constexpr (Op == Red::kProd) {
    return A(1);
  } else if constexpr (Op == Red::kMax) {
    return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                       : std::numeric_limits<A>::lowest();
  } else if constexpr (Op == Red::kMin) {
    return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity()
                                       : std::numeric_limits<A>::max();
  } else {
    return A(0);
  }
}

// Folds one (already converted) element into the accumulator. `shift` is LogSumExp's max.
template <Red Op, typename A>
inline A red_fold(A acc, A x, A shift) {
  if constexpr (Op == Red::kMax || Op == Red::kMin) {
    if constexpr (std::is_floating_point_v<A>) {
      if (x != x) return x;  // NaN propagates
    }
    if constexpr (Op == Red::kMax)
      return x > acc ? x : acc;
    else
      return x < acc ? x : acc;
  } else if constexpr (Op == Red::kProd) {
    if constexpr (std::is_integral_v<A>)
      return static_cast<A>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(x));
    else
      return acc * x;
  } else if constexpr (Op == Red::kL1) {
    if constexpr (std::is_unsigned_v<A>)
      return acc + x;
    else
      return acc + (x < 0 ? -x : x);
  } else if constexpr (Op == Red::kL2 || Op == Red::kSumSquare) {
    if constexpr (std::is_integral_v<A>)
      return static_cast<A>(static_cast<uint64_t>(acc) +
                            static_cast<uint64_t>(x) * static_cast<uint64_t>(x));
    else
      return acc + x * x;
  } else if constexpr (Op == Red::kLogSumExp) {
    return acc + static_cast<A>(std::exp(static_cast<double>(x) - static_cast<double>(shift)));
  } else {  // Sum, Mean, LogSum
    if constexpr (std::is_integral_v<A>)
      return static_cast<A>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x));
    else
      return acc + x;
  }
}

template <Red Op, typename T, typename A>
T red_finish(A acc, size_t count, A shift) {
  if constexpr (Op == Red::kMean) {
    if constexpr (std::is_integral_v<A>) {
      return count ? static_cast<T>(acc / static_cast<A>(count)) : T(0);
    } else {
      return convert<T>(static_cast<compute_t<T>>(acc / static_cast<double>(count)));
    }
  } else if constexpr (Op == Red::kL2 || Op == Red::kLogSum || Op == Red::kLogSumExp) {
    double v = static_cast<double>(acc);
    double r = Op == Red::kL2 ? std::sqrt(v) : std::log(v);
    if constexpr (Op == Red::kLogSumExp) r += static_cast<double>(shift);
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(r);
    else
      return convert<T>(static_cast<compute_t<T>>(r));
  } else {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(acc);
    else
      return convert<T>(static_cast<compute_t<T>>(acc));
  }
}

// The iteration structure of one reduction (see the file comment).
struct ReducePlan {
  std::vector<size_t> kept_extent, kept_stride;  // outer kept dims
  std::vector<size_t> red_extent, red_stride;    // reduced dims except the innermost one
  size_t last_len = 1, last_stride = 1;          // the innermost reduced dim
  size_t inner = 1;                              // trailing kept elements, contiguous
  size_t groups = 1;
  size_t count = 1;  // elements reduced into each output

  ReducePlan(std::span<const int64_t> dims, const std::vector<bool>& reduced) {
    // Merge runs of dims with the same flag; size-1 dims do not matter.
    std::vector<size_t> extent;
    std::vector<bool> flag;
    for (size_t d = 0; d < dims.size(); ++d) {
      auto e = static_cast<size_t>(dims[d]);
      if (reduced[d]) count *= e;
      if (e == 1) continue;
      if (!flag.empty() && flag.back() == reduced[d]) {
        extent.back() *= e;
      } else {
        extent.push_back(e);
        flag.push_back(reduced[d]);
      }
    }
    if (!flag.empty() && !flag.back()) {
      inner = extent.back();
      extent.pop_back();
      flag.pop_back();
    }
    if (flag.empty()) {  // nothing left to reduce over: one-element reductions
      extent.push_back(1);
      flag.push_back(true);
    }
    std::vector<size_t> stride(extent.size());
    size_t s = inner;
    for (size_t j = extent.size(); j-- > 0;) {
      stride[j] = s;
      s *= extent[j];
    }
    last_len = extent.back();
    last_stride = stride.back();
    for (size_t j = 0; j + 1 < extent.size(); ++j) {
      if (flag[j]) {
        red_extent.push_back(extent[j]);
        red_stride.push_back(stride[j]);
      } else {
        kept_extent.push_back(extent[j]);
        kept_stride.push_back(stride[j]);
        groups *= extent[j];
      }
    }
  }

  size_t group_base(size_t g) const {
    size_t base = 0;
    for (size_t j = kept_extent.size(); j-- > 0;) {
      base += (g % kept_extent[j]) * kept_stride[j];
      g /= kept_extent[j];
    }
    return base;
  }

  // Calls fn(offset) for the start of every innermost reduced run of a group.
  template <typename Fn>
  void for_each_run(size_t base, Fn&& fn) const {
    std::vector<size_t> index(red_extent.size(), 0);
    for (;;) {
      fn(base);
      size_t j = red_extent.size();
      for (; j-- > 0;) {
        base += red_stride[j];
        if (++index[j] < red_extent[j]) break;
        base -= red_stride[j] * red_extent[j];
        index[j] = 0;
      }
      if (j == static_cast<size_t>(-1)) return;
    }
  }
};

// Folds the innermost reduced positions [j_begin, j_end) of group g into out[0..inner).
template <Red Op, typename T, typename A>
void accumulate_group(const ReducePlan& plan, size_t g, const T* in, A* out, const A* sh,
                      size_t j_begin, size_t j_end) {
  const size_t stride = plan.last_stride, inner = plan.inner;
  plan.for_each_run(plan.group_base(g), [&](size_t offset) {
    const T* run = in + offset;
    if (inner == 1) {
      // One output: a contiguous run folded into a register, not through memory.
      A a = out[0];
      const A s = sh ? sh[0] : A(0);
      for (size_t j = j_begin; j < j_end; ++j) a = red_fold<Op, A>(a, convert<A>(run[j]), s);
      out[0] = a;
    } else {
      for (size_t j = j_begin; j < j_end; ++j) {
        const T* row = run + j * stride;
        if (sh) {
          for (size_t t = 0; t < inner; ++t)
            out[t] = red_fold<Op, A>(out[t], convert<A>(row[t]), sh[t]);
        } else {
          for (size_t t = 0; t < inner; ++t)
            out[t] = red_fold<Op, A>(out[t], convert<A>(row[t]), A(0));
        }
      }
    }
  });
}

// Merges two partial accumulators of the same outputs.
template <Red Op, typename A>
A red_combine(A a, A b) {
  if constexpr (Op == Red::kMax || Op == Red::kMin)
    return red_fold<Op, A>(a, b, A(0));
  else if constexpr (Op == Red::kProd)
    return red_fold<Op, A>(a, b, A(0));
  else if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}

// Accumulates every output of the plan into acc (groups * inner values), optionally relative
// to a per-output shift (LogSumExp). Groups are split over threads; when there are fewer
// groups than threads (a full reduction, say) the innermost reduced dimension is split instead
// and the per-thread partial results are merged.
template <Red Op, typename T, typename A>
void accumulate(const KernelContext& ctx, const ReducePlan& plan, const T* in, A* acc,
                const A* shift) {
  const size_t per_group = plan.groups * plan.inner;
  const size_t work_per_group = std::max<size_t>(1, plan.count * plan.inner);
  const auto threads = static_cast<size_t>(std::max(ctx.threads(), 1));
  if (plan.groups < threads && plan.last_len >= 2 * threads &&
      plan.count * per_group >= 2 * kElementwiseGrain) {
    const size_t parts = threads;
    std::vector<A> partial(parts * per_group, red_init<Op, A>());
    ctx.parallel_for(parts, 1, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        size_t j0 = p * plan.last_len / parts, j1 = (p + 1) * plan.last_len / parts;
        for (size_t g = 0; g < plan.groups; ++g)
          accumulate_group<Op, T, A>(plan, g, in, partial.data() + p * per_group + g * plan.inner,
                                     shift ? shift + g * plan.inner : nullptr, j0, j1);
      }
    });
    for (size_t i = 0; i < per_group; ++i) {
      A a = partial[i];
      for (size_t p = 1; p < parts; ++p) a = red_combine<Op, A>(a, partial[p * per_group + i]);
      acc[i] = a;
    }
    return;
  }
  const size_t grain = std::max<size_t>(1, kElementwiseGrain / work_per_group);
  ctx.parallel_for(plan.groups, grain, [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) {
      A* out = acc + g * plan.inner;
      for (size_t t = 0; t < plan.inner; ++t) out[t] = red_init<Op, A>();
      accumulate_group<Op, T, A>(plan, g, in, out, shift ? shift + g * plan.inner : nullptr, 0,
                                 plan.last_len);
    }
  });
}

// Element types folded where they are; the others (8-, 16- and 32-bit integers, bfloat16) are
// widened to their accumulator type in one pass first. That is exact, since accumulate converts
// every element to that type before folding it, and it compiles the ten reductions for five
// element types rather than twelve (this file was the cpu device's slowest compile).
template <typename T>
constexpr bool kFoldedInPlace = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                std::is_same_v<T, Half> || std::is_same_v<T, acc_t<T>>;

// Reduces `in` (elements of type E) into acc, and LogSumExp's shift.
template <Red Op, typename E, typename A>
void reduce_into(const KernelContext& ctx, const ReducePlan& plan, const E* in, std::vector<A>& acc,
                 std::vector<A>& shift) {
  const size_t n = acc.size();
  if (plan.count == 0) {
    std::fill(acc.begin(), acc.end(), red_init<Op, A>());
    if constexpr (Op == Red::kLogSumExp) shift.assign(n, red_init<Red::kMax, A>());
  } else if constexpr (Op == Red::kLogSumExp) {
    shift.resize(n);
    accumulate<Red::kMax, E, A>(ctx, plan, in, shift.data(), nullptr);
    // An infinite maximum would turn exp(x - max) into NaN: fold against 0 then.
    if constexpr (std::is_floating_point_v<A>)
      for (A& s : shift)
        if (std::isinf(s)) s = 0;
    accumulate<Op, E, A>(ctx, plan, in, acc.data(), shift.data());
  } else {
    accumulate<Op, E, A>(ctx, plan, in, acc.data(), nullptr);
  }
}

// Reads the axes (attribute or input), returns which input dims are reduced, or an empty
// vector when the op is a no-op (noop_with_empty_axes with no axes).
std::vector<bool> reduced_dims(const KernelContext& ctx, const loom_tensor_t& x,
                               bool axes_from_input) {
  std::vector<int64_t> axes;
  if (axes_from_input) {
    if (const loom_tensor_t* a = ctx.input(1)) {
      if (a->dtype != LOOM_DTYPE_INT64)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": axes must be int64");
      const auto* p = static_cast<const int64_t*>(a->data);
      axes.assign(p, p + sdk::element_count(*a));
    }
  } else if (auto attr = ctx.attrs().get_ints("axes")) {
    axes.assign(attr->begin(), attr->end());
  }
  std::vector<bool> reduced(static_cast<size_t>(x.rank), axes.empty());
  if (axes.empty()) {
    if (ctx.attrs().get_int("noop_with_empty_axes", 0) != 0) return {};
    return reduced;
  }
  for (int64_t axis : axes) {
    int64_t a = axis < 0 ? axis + x.rank : axis;
    if (a < 0 || a >= x.rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": axis " + std::to_string(axis) +
                                            " is out of range for rank " + std::to_string(x.rank));
    if (reduced[static_cast<size_t>(a)])
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": axis " + std::to_string(axis) + " is repeated");
    reduced[static_cast<size_t>(a)] = true;
  }
  return reduced;
}

template <Red Op>
void reduce_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const int64_t axes_input_since = std::string_view(ctx.node().op_type) == "ReduceSum" ? 13 : 18;
  std::vector<bool> reduced = reduced_dims(ctx, x, ctx.opset() >= axes_input_since);
  if (reduced.empty()) {
    // noop_with_empty_axes: the input passes through unchanged.
    ctx.set_output(0, *ctx.input_tensor(0));
    return;
  }
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  std::vector<int64_t> out_shape;
  for (int32_t d = 0; d < x.rank; ++d) {
    if (!reduced[static_cast<size_t>(d)])
      out_shape.push_back(x.dims[d]);
    else if (keepdims)
      out_shape.push_back(1);
  }
  loom_tensor_t& out = ctx.allocate_output(0, x.dtype, out_shape);
  // Opset 20 lets ReduceMax/ReduceMin take bool (false < true): reduce the 0/1 bytes as uint8.
  // Over an empty set they give the identity, false for max and true for min.
  constexpr bool kMaxMin = Op == Red::kMax || Op == Red::kMin;
  const bool as_bool = kMaxMin && x.dtype == LOOM_DTYPE_BOOL && ctx.opset() >= 20;
  dispatch<kNumeric>(as_bool ? LOOM_DTYPE_UINT8 : x.dtype, ctx, [&]<typename T>() {
    using A = acc_t<T>;
    ReducePlan plan(sdk::shape_of(x), reduced);
    const size_t n = static_cast<size_t>(sdk::element_count(out));
    if (n == 0) return;
    if (as_bool && plan.count == 0) {
      std::fill_n(static_cast<uint8_t*>(out.data), n, Op == Red::kMin ? 1 : 0);
      return;
    }
    if (plan.count == 0 && (Op == Red::kMax || Op == Red::kMin) && std::is_integral_v<T>)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot reduce an empty set of integers");
    std::vector<A> acc(n), shift;
    const T* in = static_cast<const T*>(x.data);
    if constexpr (kFoldedInPlace<T>) {
      reduce_into<Op, T, A>(ctx, plan, in, acc, shift);
    } else {
      std::vector<A> wide(static_cast<size_t>(sdk::element_count(x)));
      for (size_t i = 0; i < wide.size(); ++i) wide[i] = convert<A>(in[i]);
      reduce_into<Op, A, A>(ctx, plan, wide.data(), acc, shift);
    }
    T* dst = static_cast<T*>(out.data);
    for (size_t i = 0; i < n; ++i)
      dst[i] = red_finish<Op, T, A>(acc[i], plan.count, shift.empty() ? A(0) : shift[i]);
  });
}

LOOM_CPU_KERNEL("ReduceSum", 1, reduce_kernel<Red::kSum>, nullptr);
LOOM_CPU_KERNEL("ReduceMean", 1, reduce_kernel<Red::kMean>, nullptr);
LOOM_CPU_KERNEL("ReduceMax", 1, reduce_kernel<Red::kMax>, nullptr);
LOOM_CPU_KERNEL("ReduceMin", 1, reduce_kernel<Red::kMin>, nullptr);
LOOM_CPU_KERNEL("ReduceProd", 1, reduce_kernel<Red::kProd>, nullptr);
LOOM_CPU_KERNEL("ReduceL1", 1, reduce_kernel<Red::kL1>, nullptr);
LOOM_CPU_KERNEL("ReduceL2", 1, reduce_kernel<Red::kL2>, nullptr);
LOOM_CPU_KERNEL("ReduceLogSum", 1, reduce_kernel<Red::kLogSum>, nullptr);
LOOM_CPU_KERNEL("ReduceLogSumExp", 1, reduce_kernel<Red::kLogSumExp>, nullptr);
LOOM_CPU_KERNEL("ReduceSumSquare", 1, reduce_kernel<Red::kSumSquare>, nullptr);

}  // namespace
}  // namespace loom::cpu
