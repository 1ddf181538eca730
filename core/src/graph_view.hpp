// loom_graph_t views of the IR: how devices see (parts of) a graph. A view owns the small
// structs it hands out; names, constant data and attribute payloads point into the IR, which
// the session keeps alive as long as any view or executable made from it.
#pragma once

#include "ir/graph.hpp"

#include <loom/plugin.h>

#include <deque>
#include <memory>
#include <set>
#include <vector>

namespace loom::core {

// What a session knows about a value beyond the IR (inferred type and shape, memory plan).
struct ValueFacts {
  bool known = false;  // false: use the IR's declared dtype/shape
  ValueKind kind = ValueKind::kTensor;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;  // containers: the element dtype
  Shape shape;                                // containers: the elements' common shape
  int64_t arena_offset = -1;
};

struct ViewOptions {
  const std::vector<ValueFacts>* facts = nullptr;  // indexed by value id of the viewed graph
  const std::set<int>* fed_constants = nullptr;    // overridable initializers the user feeds
};

class GraphView {
 public:
  // The whole graph, nested graphs included.
  GraphView(const Graph& g, const ViewOptions& options, const GraphView* parent = nullptr);
  // A subgraph: `node_ids` (in execution order) of g, with the given boundary values.
  GraphView(const Graph& g, const std::vector<int>& node_ids, const std::vector<int>& inputs,
            const std::vector<int>& outputs, const ViewOptions& options);
  GraphView(const GraphView&) = delete;
  GraphView& operator=(const GraphView&) = delete;

  const loom_graph_t* get() const { return &graph_; }
  // View of node `k` of the view (execution order).
  const loom_node_t* node(size_t k) const { return node_ptrs_.at(k); }
  int32_t index_of(int value_id) const;  // -1 if the value is not in the view

 private:
  struct ValueStore {
    loom_value_info_t info{};
    std::vector<int64_t> dims;
    std::vector<const char*> dim_params;
  };
  struct NodeStore {
    loom_node_t node{};
    std::vector<int32_t> inputs, outputs;
    std::deque<loom_attribute_t> attrs;
    std::vector<const loom_attribute_t*> attr_ptrs;
    std::deque<std::vector<loom_string_t>> string_lists;
    std::deque<ValueStore> tensors;
  };

  int32_t add_value(int value_id, uint32_t extra_flags);
  void add_node(const Node& node);
  static void fill_constant(ValueStore& store, const ConstantData& c, const std::string& name);
  void finish();

  const Graph& g_;
  ViewOptions options_;
  const GraphView* parent_;
  loom_graph_t graph_{};
  std::deque<ValueStore> values_;
  std::vector<const loom_value_info_t*> value_ptrs_;
  std::vector<int32_t> view_index_;  // value id -> view index or -1
  std::deque<NodeStore> nodes_;
  std::vector<const loom_node_t*> node_ptrs_;
  std::vector<int32_t> inputs_, outputs_;
  std::vector<std::unique_ptr<GraphView>> nested_;
};

}  // namespace loom::core
