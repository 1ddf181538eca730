#include "shape_subgraphs.hpp"

#include <set>
#include <string>

#include "cost_model.hpp"

namespace loom::core {
namespace {

// Ops that appear in shape arithmetic. Reshape and Expand are listed for shape tensors being
// reshaped, not for data: a node only counts when its inputs are shape values themselves.
const std::set<std::string>& shape_family() {
  static const std::set<std::string> ops = {"Gather",
                                            "Slice",
                                            "Unsqueeze",
                                            "Squeeze",
                                            "Concat",
                                            "Cast",
                                            "Reshape",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Equal",
                                            "Where",
                                            "Range",
                                            "Min",
                                            "Max",
                                            "Identity",
                                            "ReduceProd",
                                            "ConstantOfShape",
                                            "Expand",
                                            "Less",
                                            "Greater",
                                            "Not",
                                            "Neg",
                                            "Abs",
                                            "Floor",
                                            "Ceil",
                                            "Mod",
                                            "Flatten",
                                            "And",
                                            "Or",
                                            "Size",
                                            "Shape"};
  return ops;
}

constexpr double kSmallTensorElements = 64;

bool small_integer_value(const Graph& g, int id, const std::vector<ValueFacts>& facts) {
  loom_dtype_t t = value_dtype(g, id, facts);
  bool integer = t == LOOM_DTYPE_INT64 || t == LOOM_DTYPE_INT32 || t == LOOM_DTYPE_BOOL ||
                 t == LOOM_DTYPE_UNDEFINED;
  const Shape& s = value_shape(g, id, facts);
  bool small = !s.is_static() || static_cast<double>(s.element_count()) <= kSmallTensorElements;
  return integer && small;
}

}  // namespace

std::vector<bool> find_shape_computations(const Graph& g, const std::vector<ValueFacts>& facts) {
  std::vector<bool> shape_value(g.values.size(), false);
  std::vector<bool> constant_value(g.values.size(), false);  // Constant nodes' outputs
  std::vector<bool> marked(g.nodes.size(), false);
  // Nodes are in topological order, so one forward pass sees every producer first.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!n.domain.empty() && n.domain != "ai.onnx") continue;
    if (n.op_type == "Constant") {
      for (int id : n.outputs)
        if (id >= 0) constant_value[id] = true;
      continue;
    }
    if (!shape_family().count(n.op_type)) continue;
    bool outputs_small = true;
    for (int id : n.outputs)
      if (id >= 0 && !small_integer_value(g, id, facts)) outputs_small = false;
    if (!outputs_small) continue;
    bool is_shape_source = n.op_type == "Shape" || n.op_type == "Size";
    if (!is_shape_source) {
      bool any_shape_input = false, all_shape_or_constant = true;
      for (int id : n.inputs) {
        if (id < 0) continue;
        if (shape_value[id])
          any_shape_input = true;
        else if (!constant_value[id] && (!g.values[id].constant || g.values[id].graph_input))
          all_shape_or_constant = false;
      }
      if (!n.implicit_inputs.empty() || !any_shape_input || !all_shape_or_constant) continue;
    }
    marked[k] = true;
    for (int id : n.outputs)
      if (id >= 0) shape_value[id] = true;
  }
  // A Constant node feeding only shape computations belongs with them.
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int id : g.nodes[k].inputs)
      if (id >= 0) readers[id].push_back(static_cast<int>(k));
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op_type != "Constant" || !n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] < 0)
      continue;
    int id = n.outputs[0];
    if (readers[id].empty() || g.values[id].graph_output) continue;
    bool all = true;
    for (int r : readers[id]) all = all && marked[r];
    if (all) marked[k] = true;
  }
  return marked;
}

}  // namespace loom::core
