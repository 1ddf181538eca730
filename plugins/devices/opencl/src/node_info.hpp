// Read access to one node of a graph view, shared by the support checks (shapes may be
// unknown there) and the lowerings (every shape is static there).
#pragma once

#include <loom/plugin.hpp>
#include <optional>
#include <string>
#include <vector>

namespace loom::opencl {

class NodeInfo {
 public:
  NodeInfo(const loom_graph_t& graph, const loom_node_t& node)
      : graph(graph), node(node), attrs(node) {}

  const loom_graph_t& graph;
  const loom_node_t& node;
  sdk::Attributes attrs;

  std::string op() const { return node.op_type; }
  // "Conv 'name'" for messages.
  std::string describe() const;
  // NULL when the input/output is omitted or absent.
  const loom_value_info_t* input(size_t i) const { return sdk::node_input(graph, node, i); }
  const loom_value_info_t* output(size_t i) const { return sdk::node_output(graph, node, i); }
  int input_id(size_t i) const;   // -1 when omitted
  int output_id(size_t i) const;  // -1 when omitted
  // Number of inputs/outputs actually present (trailing omitted ones not counted).
  size_t present_inputs() const;
  size_t present_outputs() const;
  bool is_constant(size_t i) const;
  // The data of a constant int32/int64 (or float) input, or nullopt if it is not constant.
  std::optional<std::vector<int64_t>> constant_ints(size_t i) const;
  std::optional<std::vector<float>> constant_floats(size_t i) const;
  // Like constant_floats, also when input i is the output of a Constant node of this graph
  // (the core does not fold Constant nodes). Only for uses with a non-constant fallback: at
  // compile time the Constant node may sit in another subgraph.
  std::optional<std::vector<float>> folded_floats(size_t i) const;
};

// Shape helpers on value views.
bool shape_known(const loom_value_info_t* v);               // rank and every extent known
std::vector<int64_t> shape_of(const loom_value_info_t* v);  // -1 where unknown; {} if rank unknown
int64_t elements_of(const std::vector<int64_t>& shape);

}  // namespace loom::opencl
