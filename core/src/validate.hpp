// Checks a freshly loaded model and puts it into the form the rest of the core relies on:
// names resolved (outer-scope references of nested graphs included), nodes in topological
// order, opset versions attached to nodes, every op known to a schema with a valid number of
// inputs and outputs. All problems are reported in one error, not just the first.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/graph.hpp"
#include "schema_registry.hpp"

namespace loom::core {

struct ValidateOptions {
  // Accept a model that imports an opset newer than every registered schema of its domain
  // (validated and run with the newest schemas known), with a warning instead of an error.
  // nullopt: the environment variable LOOM_ALLOW_NEWER_OPSETS=1 decides.
  std::optional<bool> allow_newer_opsets;
  // Receives warnings (one line each); nullptr: they go to stderr.
  std::function<void(const std::string&)> warn;
};

void validate_model(Model& model, const SchemaRegistry& schemas,
                    const ValidateOptions& options = {});

}  // namespace loom::core
