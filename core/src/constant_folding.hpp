// Folding of nodes computed from constants alone, of any dtype: attention masks and position
// tables built at run time from constants, and the float shape arithmetic PyTorch exports for
// int(a / b) (Cast -> Div -> Cast), which the integer evaluator of shape_folding.cpp declines.
// Such nodes run once, at session creation, on the cpu device (the reference every device is
// tested against), and their results become initializers. Without this, Swin-T kept its batch
// and window extents unknown and ran its attention on cpu in 24 subgraphs.
#pragma once

#include <memory>

#include "ir/graph.hpp"
#include "shape_folding.hpp"

namespace loom::core {

class Runtime;
class SchemaRegistry;

// `model` with the nodes computable from its constants replaced by initializers, or `model`
// itself when none qualifies or the cpu device is not loaded. A node qualifies when every
// input is a constant (initializers a user may override are not), its op is deterministic,
// tensor-valued and has no subgraph, and every output has a static shape inference can tell,
// of at most kMaxFoldedBytes (all outputs of one pass: kMaxFoldedBytesTotal), and is neither a
// graph output nor read by a nested graph. Counts go to stats.evaluated_nodes.
std::shared_ptr<Model> fold_constant_nodes(Runtime& runtime, const SchemaRegistry& schemas,
                                           const std::shared_ptr<Model>& model, FoldStats& stats);

inline constexpr size_t kMaxFoldedBytes = size_t{4} << 20;
inline constexpr size_t kMaxFoldedBytesTotal = size_t{64} << 20;

}  // namespace loom::core
