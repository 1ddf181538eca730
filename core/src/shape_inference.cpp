#include "shape_inference.hpp"

#include <cstring>

#include "sequence_ops.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

// Bounds the recursion through nested If branches (the builder bounds nesting at 64 levels).
constexpr int kMaxBranchDepth = 16;

void infer_graph(const Graph& g, const SchemaRegistry& schemas, std::vector<ValueFacts>& facts,
                 int depth);

// An If's outputs as its branches compute them from the facts of the values they read from
// this graph. The schema only has the branches' declared outputs, which exporters leave
// shapeless; then everything after the If had unknown shapes, and devices that compile for
// static shapes refused it (a streaming model's whole LSTM behind an If on its sample rate).
// Where both branches give a tensor of one rank, the output takes their common extents.
void refine_if_outputs(const Graph& g, const Node& node, const SchemaRegistry& schemas,
                       std::vector<ValueFacts>& facts, int depth) {
  if (depth >= kMaxBranchDepth) return;
  std::vector<std::vector<ValueFacts>> branch_outputs;
  for (const char* name : {"then_branch", "else_branch"}) {
    const Attribute* a = nullptr;
    for (const Attribute& attr : node.attributes)
      if (attr.name == name && attr.graph) a = &attr;
    if (!a) return;
    const Graph& branch = *a->graph;
    std::vector<ValueFacts> branch_facts(branch.values.size());
    for (size_t id = 0; id < branch.values.size(); ++id) {
      if (!branch.values[id].outer_scope) continue;
      int outer = g.find(branch.values[id].name);
      if (outer >= 0 && facts[outer].known) branch_facts[id] = facts[outer];
    }
    try {
      infer_graph(branch, schemas, branch_facts, depth + 1);
    } catch (const Error&) {
      return;  // the schema's answer stands; running the branch reports the problem
    }
    std::vector<ValueFacts> outs;
    for (int id : branch.outputs) outs.push_back(id >= 0 ? branch_facts[id] : ValueFacts{});
    branch_outputs.push_back(std::move(outs));
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    int id = node.outputs[i];
    if (id < 0 || g.values[id].kind != ValueKind::kTensor) continue;
    if (i >= branch_outputs[0].size() || i >= branch_outputs[1].size()) continue;
    const ValueFacts& t = branch_outputs[0][i];
    const ValueFacts& e = branch_outputs[1][i];
    if (!t.known || !e.known || t.kind != ValueKind::kTensor || e.kind != ValueKind::kTensor ||
        t.dtype != e.dtype || t.shape.rank < 0 || t.shape.rank != e.shape.rank)
      continue;
    ValueFacts& f = facts[id];
    if (f.dtype != LOOM_DTYPE_UNDEFINED && f.dtype != t.dtype) continue;  // contradicts: leave it
    Shape joined;
    joined.rank = t.shape.rank;
    joined.dims = t.shape.dims;
    for (int32_t d = 0; d < joined.rank; ++d)
      if (joined.dims[d] != e.shape.dims[d]) joined.dims[d] = -1;
    // Only where it tells more than the schema did.
    if (f.shape.rank == joined.rank)
      for (int32_t d = 0; d < joined.rank; ++d)
        if (joined.dims[d] < 0) joined.dims[d] = f.shape.dims[d];
    if (f.shape.rank >= 0 && f.shape.rank != joined.rank) continue;
    f.dtype = t.dtype;
    f.shape = joined;
  }
}

}  // namespace

void infer_shapes(const Graph& g, const SchemaRegistry& schemas, std::vector<ValueFacts>& facts) {
  infer_graph(g, schemas, facts, 0);
}

namespace {

// The facts declarations give: constants, graph inputs and outer-scope reads (where `facts`
// does not know them already).
void seed_facts(const Graph& g, std::vector<ValueFacts>& facts) {
  facts.resize(g.values.size());
  for (size_t id = 0; id < g.values.size(); ++id) {
    const Value& v = g.values[id];
    if (facts[id].known) continue;
    if (v.constant || v.graph_input || v.outer_scope) {
      facts[id].known = true;
      facts[id].kind = v.kind;
      facts[id].dtype = v.dtype;
      facts[id].shape = v.shape;
    }
  }
}

// Sequence and optional nodes: the core's own inference (the ABI has no container types).
// Returns whether `node` was one (its outputs' facts then set).
bool infer_container_node(const Graph& g, const Node& node, std::vector<ValueFacts>& facts) {
  std::vector<ValueFacts> declared(node.inputs.size());
  std::vector<const ValueFacts*> in_facts(node.inputs.size(), nullptr);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int id = node.inputs[i];
    if (id < 0) continue;
    if (!facts[id].known) {
      declared[i].known = true;
      declared[i].kind = g.values[id].kind;
      declared[i].dtype = g.values[id].dtype;
      declared[i].shape = g.values[id].shape;
    }
    in_facts[i] = facts[id].known ? &facts[id] : &declared[i];
  }
  std::vector<ValueFacts> container_out;
  if (!infer_sequence_node(node, in_facts, container_out)) return false;
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (node.outputs[i] >= 0) facts[node.outputs[i]] = container_out[i];
  return true;
}

// What node `k`'s schema infers for its outputs from the facts of its inputs (rank -1 and no
// dtype where it has no schema).
std::vector<loom_inferred_t> infer_tensor_node(const Graph& g, size_t k,
                                               const SchemaRegistry& schemas,
                                               const std::vector<ValueFacts>& facts) {
  const Node& node = g.nodes[k];
  std::vector<loom_value_info_t> infos(node.inputs.size());
  std::vector<std::vector<int64_t>> dims(node.inputs.size());
  std::vector<const loom_value_info_t*> ptrs(node.inputs.size(), nullptr);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int id = node.inputs[i];
    if (id < 0) continue;
    const Value& v = g.values[id];
    loom_value_info_t& info = infos[i];
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.name = v.name.c_str();
    info.arena_offset = -1;
    const ValueFacts& f = facts[id];
    info.dtype = f.known ? f.dtype : v.dtype;
    const Shape& s = f.known ? f.shape : v.shape;
    info.rank = s.rank;
    dims[i] = s.dims;
    info.dims = dims[i].data();
    if (v.constant) {
      info.flags = LOOM_VALUE_CONSTANT;
      info.data = v.constant->data;
      info.data_size = v.constant->size;
      info.content_id = v.constant->content_id;
    }
    ptrs[i] = &info;
  }
  std::vector<loom_inferred_t> out(node.outputs.size());
  for (loom_inferred_t& o : out) {
    std::memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.rank = -1;
  }
  const SchemaEntry* schema = schemas.find(node.domain, node.op_type, node.opset);
  if (schema) {
    // The node view: attributes are needed by inference functions.
    GraphView one(g, {static_cast<int>(k)}, {}, {}, ViewOptions{});
    // Re-point the view node's inputs at our temporary infos by index order.
    schemas.infer(*schema, *one.node(0), ptrs, out);
  }
  return out;
}

// The facts of `node`'s outputs: what inference found, completed by their declarations.
void store_outputs(const Graph& g, const Node& node, const std::vector<loom_inferred_t>& out,
                   std::vector<ValueFacts>& facts) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    int id = node.outputs[i];
    if (id < 0) continue;
    const Value& v = g.values[id];
    ValueFacts& f = facts[id];
    f.known = true;
    f.kind = v.kind;
    if (v.kind != ValueKind::kTensor) {
      // A declared sequence/optional (e.g. an If/Loop output): the schemas, which see
      // tensors only, cannot describe it; its declaration can.
      f.dtype = v.dtype;
      f.shape = v.shape;
      continue;
    }
    f.dtype = out[i].dtype != LOOM_DTYPE_UNDEFINED ? out[i].dtype : v.dtype;
    if (out[i].rank >= 0) {
      f.shape = Shape{};
      f.shape.rank = out[i].rank;
      f.shape.dims.assign(out[i].dims, out[i].dims + out[i].rank);
      // Keep a declared static extent where inference left one unknown.
      if (v.shape.rank == out[i].rank)
        for (int32_t d = 0; d < out[i].rank; ++d)
          if (f.shape.dims[d] < 0 && v.shape.dims[d] >= 0) f.shape.dims[d] = v.shape.dims[d];
    } else {
      f.shape = v.shape;
    }
  }
}

void infer_graph(const Graph& g, const SchemaRegistry& schemas, std::vector<ValueFacts>& facts,
                 int depth) {
  seed_facts(g, facts);
  // One node at a time through a view of the whole graph with the facts so far: cheap enough
  // (views are pointer structs) and exactly what plugin schemas get.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    if (infer_container_node(g, node, facts)) continue;
    store_outputs(g, node, infer_tensor_node(g, k, schemas, facts), facts);
    if (node.op_type == "If" && (node.domain.empty() || node.domain == "ai.onnx"))
      refine_if_outputs(g, node, schemas, facts, depth);
  }
}

}  // namespace
}  // namespace loom::core
