#include "graph_simplify.hpp"

#include <set>
#include <vector>

namespace loom::core {
namespace {

bool is_onnx_op(const Node& n, const char* op_type) {
  return n.domain.empty() && n.op_type == op_type;
}

// Dropout is the identity in inference unless training_mode (input 2, opset 12+) is given: a
// non-constant or true flag keeps it. Its mask output must be unread.
bool is_inference_dropout(const Graph& g, const Node& n, const std::vector<int>& uses) {
  if (!is_onnx_op(n, "Dropout") || n.inputs.empty() || n.inputs[0] < 0) return false;
  if (n.outputs.empty() || n.outputs[0] < 0) return false;
  if (n.outputs.size() > 1 && n.outputs[1] >= 0 && uses[n.outputs[1]] > 0) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Value& flag = g.values[n.inputs[2]];
    if (!flag.constant || flag.graph_input || flag.constant->dtype != LOOM_DTYPE_BOOL ||
        flag.constant->size != 1 || *static_cast<const uint8_t*>(flag.constant->data) != 0)
      return false;
  }
  return true;
}

// The value of a Constant node given as a tensor (`value`), or nullptr. The other forms
// (value_float, value_ints, sparse_value...) stay nodes.
const ConstantData* constant_node_value(const Node& n) {
  if (!is_onnx_op(n, "Constant") || n.attributes.size() != 1 || n.outputs.size() != 1 ||
      n.outputs[0] < 0)
    return nullptr;
  const Attribute& a = n.attributes[0];
  return a.name == "value" && a.type == LOOM_ATTR_TENSOR ? a.tensor.get() : nullptr;
}

// What the passes decide, per value (uses, pinned, alias, folded) and per node (removed).
struct Simplification {
  std::vector<int> uses;     // reads: node inputs, nested graphs' outer-scope reads, outputs
  std::vector<bool> pinned;  // its name must survive: outputs, read by nested graphs
  std::vector<int> alias;    // the value readers read instead (itself unless bypassed)
  std::vector<bool> removed;
  std::vector<std::shared_ptr<ConstantData>> folded;  // Constant node outputs -> their value
};

// Counts the reads of each value and pins the ones whose names must survive.
void count_uses(const Graph& g, Simplification& s) {
  const size_t nv = g.values.size();
  s.uses.assign(nv, 0);
  s.pinned.assign(nv, false);
  for (const Node& n : g.nodes) {
    for (int id : n.inputs)
      if (id >= 0) ++s.uses[id];
    for (int id : n.implicit_inputs) {
      ++s.uses[id];
      s.pinned[id] = true;
    }
  }
  for (int id : g.outputs) {
    ++s.uses[id];
    s.pinned[id] = true;
  }
}

// Pass 1: Constant nodes become initializers; Identity and inference Dropout are bypassed
// (readers of the output read the input instead).
void bypass_nodes(const Graph& g, Simplification& s, SimplifyStats& stats) {
  const size_t nv = g.values.size();
  s.alias.resize(nv);
  for (size_t i = 0; i < nv; ++i) s.alias[i] = static_cast<int>(i);
  s.removed.assign(g.nodes.size(), false);
  s.folded.assign(nv, nullptr);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (const ConstantData* value = constant_node_value(n); value && !s.pinned[n.outputs[0]]) {
      s.folded[n.outputs[0]] = g.nodes[k].attributes[0].tensor;
      s.removed[k] = true;
      ++stats.constant_nodes;
      continue;
    }
    bool identity = is_onnx_op(n, "Identity") && n.inputs.size() == 1 && n.inputs[0] >= 0 &&
                    n.outputs.size() == 1 && n.outputs[0] >= 0;
    bool dropout = !identity && is_inference_dropout(g, n, s.uses);
    if (!identity && !dropout) continue;
    if (s.pinned[n.outputs[0]]) continue;
    s.alias[n.outputs[0]] = s.alias[n.inputs[0]];
    s.removed[k] = true;
    ++(identity ? stats.identities : stats.dropouts);
  }
}

// Pass 2: dead nodes, walking backwards from the graph outputs (the order is topological).
void remove_dead_nodes(const Graph& g, Simplification& s, SimplifyStats& stats) {
  std::vector<bool> live(g.values.size(), false);
  for (int id : g.outputs) live[s.alias[id]] = true;
  for (size_t k = g.nodes.size(); k-- > 0;) {
    if (s.removed[k]) continue;
    const Node& n = g.nodes[k];
    bool needed = false;
    for (int id : n.outputs) needed |= id >= 0 && live[id];
    if (!needed) {
      s.removed[k] = true;
      ++stats.dead_nodes;
      continue;
    }
    for (int id : n.inputs)
      if (id >= 0) live[s.alias[id]] = true;
    for (int id : n.implicit_inputs) live[s.alias[id]] = true;
  }
}

// The values the rebuilt graph keeps: declared inputs and outputs and what the kept nodes
// touch. Counts the constants it drops.
std::vector<bool> kept_values(const Graph& g, const Simplification& s, SimplifyStats& stats) {
  const size_t nv = g.values.size();
  std::vector<bool> keep(nv, false);
  for (int id : g.inputs) keep[id] = true;
  for (int id : g.outputs) keep[s.alias[id]] = keep[id] = true;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (s.removed[k]) continue;
    for (int id : g.nodes[k].inputs)
      if (id >= 0) keep[s.alias[id]] = true;
    for (int id : g.nodes[k].outputs)
      if (id >= 0) keep[id] = true;
    for (int id : g.nodes[k].implicit_inputs) keep[s.alias[id]] = true;
  }
  for (size_t i = 0; i < nv; ++i)
    if (!keep[i] && g.values[i].constant) ++stats.unused_constants;
  return keep;
}

// Pass 3: the graph of the kept values and nodes, ids renumbered, folded constants in place.
std::shared_ptr<Graph> rebuild_graph(const Graph& g, const Simplification& s,
                                     const std::vector<bool>& keep) {
  const size_t nv = g.values.size();
  auto ng = std::make_shared<Graph>();
  ng->name = g.name;
  std::vector<int> new_id(nv, -1);
  for (size_t i = 0; i < nv; ++i) {
    if (!keep[i]) continue;
    new_id[i] = static_cast<int>(ng->values.size());
    ng->values.push_back(g.values[i]);
    ng->values.back().producer = -1;
    if (s.folded[i]) {
      Value& v = ng->values.back();
      v.constant = s.folded[i];
      v.dtype = s.folded[i]->dtype;
      v.shape.rank = static_cast<int32_t>(s.folded[i]->dims.size());
      v.shape.dims = s.folded[i]->dims;
      v.shape.dim_params.clear();
    }
    ng->value_ids.emplace(g.values[i].name, new_id[i]);
  }
  auto map_id = [&](int id) { return id < 0 ? -1 : new_id[s.alias[id]]; };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (s.removed[k]) continue;
    Node n = g.nodes[k];
    for (int& id : n.inputs) id = map_id(id);
    for (int& id : n.implicit_inputs) id = map_id(id);
    for (int& id : n.outputs) id = id < 0 ? -1 : new_id[id];
    for (int id : n.outputs)
      if (id >= 0) ng->values[id].producer = static_cast<int>(ng->nodes.size());
    ng->nodes.push_back(std::move(n));
  }
  for (int id : g.inputs) ng->inputs.push_back(new_id[id]);
  for (int id : g.outputs) ng->outputs.push_back(new_id[id]);
  return ng;
}

}  // namespace

std::shared_ptr<Model> simplify_model(const Model& model, SimplifyStats& stats) {
  const Graph& g = *model.graph;
  Simplification s;
  count_uses(g, s);
  bypass_nodes(g, s, stats);
  remove_dead_nodes(g, s, stats);
  std::vector<bool> keep = kept_values(g, s, stats);
  auto out = std::make_shared<Model>(model);
  out->graph = rebuild_graph(g, s, keep);
  return out;
}

}  // namespace loom::core
