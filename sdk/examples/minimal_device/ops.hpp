// What the minimal device can compute: float32 Relu, and float32 Add of two tensors of the
// same shape (no broadcasting). Everything else is refused with a reason the user sees in
// `infer-run --explain` and in the session's fallback log.
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <span>
#include <string>

namespace minimal {

enum class Op { Relu, Add };

// "" when the node can run here, otherwise why not (one line).
std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node);

// The op of a node why_unsupported accepted.
Op op_of(const loom_node_t& node);

void relu(std::span<const float> x, std::span<float> y);
void add(std::span<const float> a, std::span<const float> b, std::span<float> y);

}  // namespace minimal
