// Checks a freshly loaded model and puts it into the form the rest of the core relies on:
// names resolved (outer-scope references of nested graphs included), nodes in topological
// order, opset versions attached to nodes, every op known to a schema with a valid number of
// inputs and outputs. All problems are reported in one error, not just the first.
#pragma once

#include "ir/graph.hpp"
#include "schema_registry.hpp"

namespace loom::core {

void validate_model(Model& model, const SchemaRegistry& schemas);

}  // namespace loom::core
