#include <loom/op_registry.hpp>
#include <string_view>

#include "op.hpp"

namespace loom::neon {
namespace {

// The SDK's op registry; LOOM_NEON_OP fills it at load time (default domain only).
sdk::OpRegistry<OpDef>& registry() {
  static sdk::OpRegistry<OpDef> ops;
  return ops;
}

}  // namespace

OpRegistrar::OpRegistrar(const OpDef& def) {
  registry().add("", def.op_type, def, def.since_version);
}

const OpDef* find_op(const loom_node_t& node) {
  if (!node.op_type) return nullptr;
  return registry().find(node.domain ? node.domain : "", node.op_type, node.opset);
}

std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  const OpDef* def = find_op(node);
  if (!def) {
    std::string domain = node.domain ? node.domain : "";
    return "no neon kernel for " + (domain.empty() ? "" : domain + "::") +
           (node.op_type ? node.op_type : "?") + " (opset " + std::to_string(node.opset) + ")";
  }
  return def->supports(graph, node);
}

std::string registered_ops() {
  std::string text;
  for (const std::string& n : registry().names()) text += (text.empty() ? "" : ", ") + n;
  return text;
}

std::string where(const loom_node_t& node) {
  return std::string(node.op_type ? node.op_type : "?") + " node '" + (node.name ? node.name : "") +
         "'";
}

std::string require_float32(const loom_graph_t& graph, const loom_node_t& node) {
  auto check = [&](const loom_value_info_t* v, const char* kind, size_t i) -> std::string {
    if (!v || v->dtype == LOOM_DTYPE_FLOAT32 || v->dtype == LOOM_DTYPE_UNDEFINED) return "";
    return std::string(kind) + " " + std::to_string(i) + " is " + sdk::dtype_name(v->dtype) +
           "; the neon kernels are float32 only";
  };
  for (size_t i = 0; i < node.num_inputs; ++i)
    if (std::string r = check(sdk::node_input(graph, node, i), "input", i); !r.empty()) return r;
  for (size_t i = 0; i < node.num_outputs; ++i)
    if (std::string r = check(sdk::node_output(graph, node, i), "output", i); !r.empty()) return r;
  return "";
}

const loom_value_info_t* constant_input(const loom_graph_t& graph, const loom_node_t& node,
                                        size_t i) {
  const loom_value_info_t* v = sdk::node_input(graph, node, i);
  if (!v || !(v->flags & LOOM_VALUE_CONSTANT) || v->rank < 0) return nullptr;
  if (v->data_size && !v->data) return nullptr;
  if (v->dtype == LOOM_DTYPE_FLOAT32 &&
      v->data_size != static_cast<size_t>(sdk::element_count(v->rank, v->dims)) * sizeof(float))
    return nullptr;
  return v;
}

bool output_requested(const loom_node_t& node, size_t i) {
  return i < node.num_outputs && node.outputs[i] >= 0;
}

int32_t input_rank(const loom_graph_t& graph, const loom_node_t& node, size_t i) {
  const loom_value_info_t* v = sdk::node_input(graph, node, i);
  return v ? v->rank : -1;
}

}  // namespace loom::neon
