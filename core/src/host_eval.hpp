// A small evaluator for the integer ops of shape computations (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape's shape input and the like), used to fold them into constants when the
// shapes they read are static. It handles int64, int32 and bool tensors of bounded size and
// follows the ONNX semantics exactly (negative axes and indices, clamped Slice bounds, Reshape's
// 0 and -1, multidirectional broadcasting). Whatever it cannot evaluate exactly (another op, a
// legacy form, an out-of-range index, a division by zero, a result over the size bound) it
// declines, and the node stays in the graph for a device to run (and report).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.hpp"

namespace loom::core {

// An integer tensor on the host. Elements are held as int64 whatever `dtype` is (INT64, INT32
// or BOOL); they always fit the dtype.
struct HostTensor {
  loom_dtype_t dtype = LOOM_DTYPE_INT64;
  std::vector<int64_t> dims;
  std::vector<int64_t> data;
};

// One input of a node: its value when known, and its shape as far as known (Shape/Size read
// only the shape). Either may be null; `present` is false for an omitted optional input.
struct HostInput {
  const HostTensor* value = nullptr;
  const Shape* shape = nullptr;
  bool present = true;
};

// The most elements one folded tensor may have. Shape tensors are a handful of int64s; the bound
// keeps a hostile ConstantOfShape or Range from allocating without limit at session creation.
inline constexpr int64_t kMaxFoldedElements = 4096;

// True when evaluate_host_node knows `n`'s op (ONNX domain, the opsets it implements).
bool host_evaluable_op(const Node& n);

// The outputs of `n` (one per output of the node) for the given inputs (one per input, in
// order), or nullopt when the node cannot
// be evaluated exactly.
std::optional<std::vector<HostTensor>> evaluate_host_node(const Node& n,
                                                          const std::vector<HostInput>& inputs);

// A constant's data as a HostTensor, when it is an int64/int32/bool tensor within the bound.
std::optional<HostTensor> host_tensor_from_constant(const ConstantData& c);

// A constant (owning its bytes) holding `t` in its dtype.
std::shared_ptr<ConstantData> constant_from_host_tensor(const HostTensor& t);

}  // namespace loom::core
