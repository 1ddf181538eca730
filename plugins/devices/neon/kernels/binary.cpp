#include "kernels/binary.hpp"

#include <arm_neon.h>

#include <algorithm>
#include <loom/plugin.hpp>

namespace loom::neon {
namespace {

template <BinaryOp Op>
inline float32x4_t apply(float32x4_t a, float32x4_t b) {
  if constexpr (Op == BinaryOp::kAdd) return vaddq_f32(a, b);
  if constexpr (Op == BinaryOp::kSub) return vsubq_f32(a, b);
  if constexpr (Op == BinaryOp::kMul) return vmulq_f32(a, b);
  if constexpr (Op == BinaryOp::kDiv) return vdivq_f32(a, b);
}
template <BinaryOp Op>
inline float apply(float a, float b) {
  if constexpr (Op == BinaryOp::kAdd) return a + b;
  if constexpr (Op == BinaryOp::kSub) return a - b;
  if constexpr (Op == BinaryOp::kMul) return a * b;
  if constexpr (Op == BinaryOp::kDiv) return a / b;
}

// One run of n outputs; sa/sb are 1 (contiguous) or 0 (broadcast scalar).
template <BinaryOp Op>
void run_inner(const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n) {
  size_t i = 0;
  if (sa && sb) {
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, apply<Op>(vld1q_f32(a + i), vld1q_f32(b + i)));
    for (; i < n; ++i) out[i] = apply<Op>(a[i], b[i]);
  } else if (sa) {
    const float32x4_t vb = vdupq_n_f32(*b);
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, apply<Op>(vld1q_f32(a + i), vb));
    for (; i < n; ++i) out[i] = apply<Op>(a[i], *b);
  } else if (sb) {
    const float32x4_t va = vdupq_n_f32(*a);
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, apply<Op>(va, vld1q_f32(b + i)));
    for (; i < n; ++i) out[i] = apply<Op>(*a, b[i]);
  } else {
    std::fill(out, out + n, apply<Op>(*a, *b));
  }
}

template <BinaryOp Op>
void rows(const BroadcastPlan& p, const float* a, const float* b, float* out, size_t begin,
          size_t end) {
  const size_t dims = p.extent.size();
  const size_t inner = p.inner();
  for (size_t row = begin; row < end; ++row) {
    // Offsets of this row in a and b from its multi-index over the outer dimensions.
    size_t rest = row, oa = 0, ob = 0;
    for (size_t d = dims - 1; d-- > 0;) {
      const size_t i = rest % p.extent[d];
      rest /= p.extent[d];
      oa += i * p.stride_a[d];
      ob += i * p.stride_b[d];
    }
    run_inner<Op>(a + oa, p.stride_a[dims - 1], b + ob, p.stride_b[dims - 1], out + row * inner,
                  inner);
  }
}

}  // namespace

size_t BroadcastPlan::outer() const {
  size_t n = 1;
  for (size_t d = 0; d + 1 < extent.size(); ++d) n *= extent[d];
  return n;
}

BroadcastPlan plan_broadcast(std::span<const int64_t> a, std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> ea(rank, 1), eb(rank, 1);
  std::copy(a.begin(), a.end(), ea.begin() + static_cast<std::ptrdiff_t>(rank - a.size()));
  std::copy(b.begin(), b.end(), eb.begin() + static_cast<std::ptrdiff_t>(rank - b.size()));
  BroadcastPlan p;
  p.out_dims.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (ea[d] != eb[d] && ea[d] != 1 && eb[d] != 1)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "shapes " + std::to_string(ea[d]) + " and " +
                                                 std::to_string(eb[d]) + " in dimension " +
                                                 std::to_string(d) + " do not broadcast");
    p.out_dims[d] = ea[d] == 1 ? eb[d] : ea[d];
  }
  // Coalesce: drop extent-1 output dimensions, merge neighbours with the same broadcast pattern.
  struct Dim {
    size_t n;
    bool a, b;  // operand varies along this dimension
  };
  std::vector<Dim> merged;
  for (size_t d = 0; d < rank; ++d) {
    if (p.out_dims[d] == 1) continue;
    Dim dim{static_cast<size_t>(p.out_dims[d]), ea[d] != 1, eb[d] != 1};
    if (!merged.empty() && merged.back().a == dim.a && merged.back().b == dim.b)
      merged.back().n *= dim.n;
    else
      merged.push_back(dim);
  }
  if (merged.empty()) merged.push_back({1, true, true});
  size_t sa = 1, sb = 1;
  p.extent.resize(merged.size());
  p.stride_a.resize(merged.size());
  p.stride_b.resize(merged.size());
  for (size_t d = merged.size(); d-- > 0;) {
    p.extent[d] = merged[d].n;
    p.stride_a[d] = merged[d].a ? sa : 0;
    p.stride_b[d] = merged[d].b ? sb : 0;
    if (merged[d].a) sa *= merged[d].n;
    if (merged[d].b) sb *= merged[d].n;
  }
  return p;
}

void binary_rows(BinaryOp op, const BroadcastPlan& plan, const float* a, const float* b, float* out,
                 size_t row_begin, size_t row_end) {
  switch (op) {
    case BinaryOp::kAdd:
      return rows<BinaryOp::kAdd>(plan, a, b, out, row_begin, row_end);
    case BinaryOp::kSub:
      return rows<BinaryOp::kSub>(plan, a, b, out, row_begin, row_end);
    case BinaryOp::kMul:
      return rows<BinaryOp::kMul>(plan, a, b, out, row_begin, row_end);
    case BinaryOp::kDiv:
      return rows<BinaryOp::kDiv>(plan, a, b, out, row_begin, row_end);
  }
}

}  // namespace loom::neon
