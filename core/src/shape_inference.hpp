// Propagates types and shapes through a graph for concrete input shapes, using the schemas'
// inference functions. What cannot be inferred stays unknown (devices then allocate at run
// time); what is contradictory is an error naming the node.
#pragma once

#include "graph_view.hpp"
#include "ir/graph.hpp"
#include "schema_registry.hpp"

#include <vector>

namespace loom::core {

// `facts` has one entry per value of g; entries of graph inputs must be filled (known) by the
// caller. Fills the others.
void infer_shapes(const Graph& g, const SchemaRegistry& schemas, std::vector<ValueFacts>& facts);

}  // namespace loom::core
