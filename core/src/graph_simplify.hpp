// Format-independent simplifications applied before a model is converted (infer-convert): what
// they remove no device ever needs to see, so a converted model loads and runs with no further
// work. See docs/loom-format.md for the list and what is not done yet.
#pragma once

#include <cstddef>
#include <memory>

#include "ir/graph.hpp"

namespace loom::core {

struct SimplifyStats {
  size_t constant_nodes = 0;    // Constant nodes turned into initializers
  size_t identities = 0;        // Identity nodes bypassed
  size_t dropouts = 0;          // inference-mode Dropout nodes bypassed
  size_t dead_nodes = 0;        // nodes whose outputs nothing reads
  size_t unused_constants = 0;  // initializers nothing reads (and that are not graph inputs)
};

// A simplified copy of `model` (top-level graph rebuilt; nested graphs, constants' data and
// metadata shared with `model`). The interface (inputs, outputs, names) is unchanged.
std::shared_ptr<Model> simplify_model(const Model& model, SimplifyStats& stats);

}  // namespace loom::core
