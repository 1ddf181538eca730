// Constant folding of shape computations at session creation. Exporters compute shapes at run
// time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Shape -> Slice -> Cast, Range,
// ConstantOfShape); when the shapes they read are static after inference on the declared input
// shapes, their results are known before anything runs. Folding them into initializers lets
// downstream nodes see constants (a Reshape's shape input, which accelerator devices need to
// claim the node) and removes the small host subgraphs and transfers they would cost.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "graph_view.hpp"
#include "ir/graph.hpp"
#include "schema_registry.hpp"

namespace loom::core {

struct FoldStats {
  size_t nodes = 0;            // computing nodes removed because their outputs became constants
  size_t constants = 0;        // initializers they became
  size_t constant_nodes = 0;   // Constant nodes turned into initializers (sharing their tensor)
  size_t identities = 0;       // Identity nodes of constants, their outputs now the same constant
  size_t noop_pads = 0;        // Pad nodes with all-zero pads, bypassed (readers read the input)
  size_t fused_pads = 0;       // zero Pads moved into the pads of the Conv/AveragePool reading them
  size_t omitted_outputs = 0;  // unread Dropout masks and MaxPool Indices, now omitted
  size_t evaluated_nodes = 0;  // nodes of constants run once on cpu (constant_folding.hpp)
};

// Rounds of folding (and of alternating folding with constant evaluation) before giving up:
// each round that changes anything removes nodes, so only pathological graphs reach it.
inline constexpr int kMaxFoldRounds = 64;

// Shape facts from the graph's inputs, initializers and op semantics only (declared shapes of
// intermediates are ignored), or nullopt when inference fails.
std::optional<std::vector<ValueFacts>> trusted_facts(const Graph& g, const SchemaRegistry& schemas);

// `model` with its top-level graph's foldable nodes replaced by initializers (host_eval.hpp
// lists the ops), or `model` itself when nothing folds. Constant nodes given as a tensor (any
// dtype) or as value_int(s) become initializers too: devices then see their data as constant
// (a Reshape's shape, a scalar operand) exactly as in a converted .loom model. Nothing folds whose
// result depends on a value the user may feed (graph inputs, overridable initializers), on a
// dynamic dim, or that is a graph output or read by a nested graph (those keep their producer). The
// returned model shares nested graphs, constants and metadata with `model`; the interface (inputs,
// outputs, names) is unchanged.
std::shared_ptr<Model> fold_shape_computations(const std::shared_ptr<Model>& model,
                                               const SchemaRegistry& schemas, FoldStats& stats);

}  // namespace loom::core
