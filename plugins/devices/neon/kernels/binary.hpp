// Elementwise Add/Sub/Mul/Div with ONNX (numpy) multidirectional broadcasting. The shapes are
// reduced to a few coalesced dimensions; the innermost run is vectorised with each operand
// either contiguous or a broadcast scalar (vdupq), so the common NCHW + per-channel case is
// a vector loop over each H*W plane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace loom::neon {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

// The broadcast plan of two shapes: the output shape and, after coalescing, per dimension the
// extent and each operand's element stride (0 where it is broadcast). The last dimension is
// the vectorised run.
struct BroadcastPlan {
  std::vector<int64_t> out_dims;  // the ONNX output shape
  std::vector<size_t> extent, stride_a, stride_b;
  size_t inner() const { return extent.empty() ? 1 : extent.back(); }
  size_t outer() const;  // product of all but the last extent
};

// Throws LOOM_ERROR_INVALID_ARGUMENT when the shapes do not broadcast.
BroadcastPlan plan_broadcast(std::span<const int64_t> a, std::span<const int64_t> b);

// Computes the rows [row_begin, row_end) (rows = outer()) of out = a OP b.
void binary_rows(BinaryOp op, const BroadcastPlan& plan, const float* a, const float* b, float* out,
                 size_t row_begin, size_t row_end);

}  // namespace loom::neon
