// Shape computations: the small integer subgraphs exporters emit to compute shapes at run time
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape's shape input). They are cheap, their
// tensors are a few int64s, and an accelerator gains nothing from them while every hop to it
// costs a transfer, so the scheduler keeps them on a host-memory device.
#pragma once

#include <vector>

#include "graph_view.hpp"
#include "ir/graph.hpp"

namespace loom::core {

// Per node of `g`: true when the node is part of a shape computation. A node is when it is a
// Shape/Size node, or an op of the shape family whose non-constant inputs all come from shape
// computations and whose outputs (when known) are small integer or bool tensors; a Constant
// node is when every reader is.
std::vector<bool> find_shape_computations(const Graph& g, const std::vector<ValueFacts>& facts);

}  // namespace loom::core
