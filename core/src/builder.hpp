// The graph builder that format plugins fill through loom_builder_api_t.
#pragma once

#include "ir/graph.hpp"

#include <loom/plugin.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>

struct loom_node_builder_t;

struct loom_graph_builder_t {
  loom::core::Model* model = nullptr;  // set on the top-level builder only
  loom::core::Graph* graph = nullptr;
  int depth = 0;
  // The model file's read-only private mapping, when the model came from one (nested builders
  // inherit it). Initializers copied out of it have their pages dropped from the process right
  // after the copy, so a model's weights are resident once, not twice, while it loads.
  std::span<const uint8_t> file_mapping;
  std::deque<loom_node_builder_t> nodes;
  std::deque<std::unique_ptr<loom_graph_builder_t>> nested;
};

struct loom_node_builder_t {
  loom_graph_builder_t* owner;
  size_t node_index;
};

namespace loom::core {

// Nested graphs deeper than this are refused (recursion bombs).
constexpr int kMaxGraphDepth = 64;

const loom_builder_api_t* builder_api();

}  // namespace loom::core
