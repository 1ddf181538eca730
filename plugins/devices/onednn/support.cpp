// Which nodes the onednn device claims. The answer only depends on what the placement view
// shows (types, shapes where known, attributes, constants): every claimed node must compile,
// so anything oneDNN cannot express exactly is left to the cpu device with a reason.
#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "builder.hpp"

namespace loom::onednn {

bool known_shape(Info v) {
  if (!v || v->rank < 0) return false;
  for (int32_t i = 0; i < v->rank; ++i)
    if (v->dims[i] < 0) return false;
  return true;
}

std::vector<int64_t> dims_of(Info v) {
  return {v->dims, v->dims + v->rank};
}

bool is_constant(Info v) {
  return v && (v->flags & LOOM_VALUE_CONSTANT) && v->data;
}

bool has_extra_outputs(const loom_node_t& node, size_t keep) {
  for (size_t i = keep; i < node.num_outputs; ++i)
    if (node.outputs[i] >= 0) return true;
  return false;
}

namespace {

// True when value `v` is made by a Constant node of `graph` (compile turns those into
// constants too).
bool from_constant_node(const loom_graph_t& graph, Info v) {
  if (!v) return false;
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    const loom_node_t* n = graph.nodes[k];
    if (std::string(n->op_type) == "Constant" && n->num_outputs == 1 && n->outputs[0] >= 0 &&
        graph.values[n->outputs[0]] == v)
      return true;
  }
  return false;
}

// An extent that stays unknown until the data is there (no symbolic name binds it from the
// inputs' shapes): compile could not create the primitive.
bool data_dependent_shape(Info v) {
  if (!v || v->rank < 0) return true;
  for (int32_t d = 0; d < v->rank; ++d)
    if (v->dims[d] < 0 && !(v->dim_params && v->dim_params[d])) return true;
  return false;
}

// Ops that only move bytes (Pad too), and MaxPool (a maximum of integers is exact): they also
// take the int8 tensors of quantized models (TFLite's int8 graphs transpose, reshape, pad and
// concatenate them).
bool moves_bytes(const std::string& op) {
  static const std::set<std::string> ops{"Reshape",  "Flatten",      "Squeeze", "Unsqueeze",
                                         "Identity", "Transpose",    "Concat",  "Pad",
                                         "MaxPool",  "GlobalMaxPool"};
  return ops.count(op) > 0;
}

}  // namespace

bool scalar_float_constant(const loom_graph_t& graph, Info v) {
  if (!v || (v->dtype != LOOM_DTYPE_FLOAT32 && v->dtype != LOOM_DTYPE_FLOAT64)) return false;
  bool scalar = v->rank == 0 || (v->rank >= 0 && sdk::element_count(v->rank, v->dims) == 1);
  if (is_constant(v)) return v->data_size == sdk::dtype_size(v->dtype);
  return scalar && from_constant_node(graph, v);
}

// An Erf is claimed exactly when compile will absorb it: the answer comes from running that
// same rewrite on the graph, so any other order or constant leaves it to the cpu device instead
// of failing to compile (oneDNN has no standalone erf).
bool in_gelu_pattern(const loom_graph_t& graph, const loom_node_t& node) {
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    if (graph.nodes[k] != &node) continue;
    try {
      IrGraph ir = build_ir(graph);
      rewrite_patterns(ir);
      return ir.nodes[k].absorbed;
    } catch (const std::exception&) {
      return false;  // a graph the rewrites refuse: compile would refuse it too
    }
  }
  return false;
}

sdk::OpRegistry<OpEntry>& op_registry() {
  static sdk::OpRegistry<OpEntry> ops;
  return ops;
}

std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  std::string domain = node.domain ? node.domain : "";
  if (!domain.empty() && domain != "ai.onnx") return "domain '" + domain + "' is not ONNX";
  std::string op = node.op_type;
  size_t tensors = data_inputs(op, node.num_inputs);
  // Quantization ops read and write integer tensors: quantized.cpp checks their types.
  const bool quantized = op == "QuantizeLinear" || op == "DequantizeLinear" ||
                         op == "QLinearConv" || op == "QLinearMatMul" ||
                         op == "DynamicQuantizeLinear" || op == "MatMulInteger" || op == "Cast";
  // A Clip of an int8 tensor (TFLite's fused activation after a QLinearConv): quantized.cpp.
  if (op == "Clip" && node.num_inputs > 0 && node.inputs[0] >= 0) {
    Info x = sdk::node_input(graph, node, 0);
    if (x && (x->dtype == LOOM_DTYPE_UINT8 || x->dtype == LOOM_DTYPE_INT8))
      if (auto why = why_quantized_unsupported(graph, node)) return *why;
  }
  const bool bytes_only = moves_bytes(op);
  auto wrong_type = [&](Info v) {
    if (quantized || v->dtype == LOOM_DTYPE_FLOAT32) return false;
    return !(bytes_only && (v->dtype == LOOM_DTYPE_UINT8 || v->dtype == LOOM_DTYPE_INT8));
  };
  // Attention's mask may be boolean, and its past key/value caches are empty on the first step
  // of a generation (ops_attention.cpp never reads them then); RotaryEmbedding's position_ids
  // are int64 (ops_rotary.cpp reads their bytes).
  const bool attention = op == "Attention";
  auto own_type = [&](size_t i, Info v) {
    return (attention && i == 3 && v->dtype == LOOM_DTYPE_BOOL) ||
           (op == "RotaryEmbedding" && i == 3 && v->dtype == LOOM_DTYPE_INT64);
  };
  if (op != "Constant") {
    if (node.num_inputs == 0 || node.inputs[0] < 0) return "no data input";
    for (size_t i = 0; i < node.num_inputs && i < tensors; ++i) {
      Info v = sdk::node_input(graph, node, i);
      if (!v) continue;
      if (wrong_type(v) && !own_type(i, v))
        return std::string("input of type ") + sdk::dtype_name(v->dtype);
      if (v->rank < 0 || v->rank > 12) return "input rank unknown or above 12";
      for (int32_t d = 0; d < v->rank; ++d)
        if (v->dims[d] == 0 && !(attention && (i == 4 || i == 5) && d == 2)) return "empty tensor";
      if (data_dependent_shape(v)) return "input shape depends on data";
    }
  }
  for (size_t i = 0; i < node.num_outputs && op != "Constant"; ++i) {
    Info v = sdk::node_output(graph, node, i);
    if (!v) continue;
    if (wrong_type(v)) return std::string("output of type ") + sdk::dtype_name(v->dtype);
    if (v->rank < 0 || v->rank > 12) return "output rank unknown or above 12";
    for (int32_t d = 0; d < v->rank; ++d)
      if (v->dims[d] == 0) return "empty tensor";
    if (data_dependent_shape(v)) return "output shape depends on data";
  }
  const OpEntry* entry = op_registry().find_any("", op);
  if (!entry || !entry->check) return "no oneDNN mapping for " + op;
  return entry->check(graph, node);
}

}  // namespace loom::onednn
