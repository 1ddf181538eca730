// Softmax / LogSoftmax (any axis, both the opset < 13 "flatten" and the opset >= 13 "one axis"
// semantics) and LayerNormalization: one workgroup per row with shared-memory reductions.
#include "ops.hpp"

namespace loom::vulkan {
namespace {

std::string check_softmax(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (auto r = require_dtype(x, "input", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (auto r = require_rank(x, "input", 16); !r.empty()) return r;
  sdk::Attributes a(node);
  int64_t axis = a.get_int("axis", node.opset >= 13 ? -1 : 1);
  if (x->rank > 0 && !sdk::try_normalize_axis(axis, x->rank)) return "axis is out of range";
  return "";
}

void build_softmax(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  sdk::Attributes a(node);
  int64_t rank = x.rank();
  if (rank == 0) {  // softmax of a scalar: 1 (log: 0)
    float one = std::string(node.op_type) == "LogSoftmax" ? 0.0f : 1.0f;
    b.copy(b.upload_floats(std::span<const float>(&one, 1)), y.loc, y.loc.bytes);
    return;
  }
  int64_t axis = sdk::normalize_axis(a.get_int("axis", node.opset >= 13 ? -1 : 1), rank,
                                     std::string(node.op_type) + " node '" + node.name + "'");
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
  if (node.opset >= 13) {
    len = x.dims[axis];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims[i];
  } else {
    for (int64_t i = axis; i < rank; ++i) len *= x.dims[i];
  }
  uint32_t log = std::string(node.op_type) == "LogSoftmax" ? 1 : 0;
  b.dispatch_rows("softmax",
                  {0, u32(outer * inner, "rows"), u32(len, "row length"), u32(inner, "inner"), log},
                  {x.loc, y.loc}, static_cast<uint64_t>(outer * inner), static_cast<uint64_t>(len));
}

std::string check_layernorm(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  const loom_value_info_t* s = sdk::node_input(graph, node, 1);
  const loom_value_info_t* bias = sdk::node_input(graph, node, 2);
  if (auto r = require_dtype(x, "input", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (auto r = require_dtype(s, "scale", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (bias)
    if (auto r = require_dtype(bias, "bias", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (auto r = require_rank(x, "input", 16); !r.empty()) return r;
  for (size_t o = 1; o < node.num_outputs; ++o)
    if (node.outputs[o] >= 0) return "LayerNormalization Mean/InvStdDev outputs are not supported";
  sdk::Attributes a(node);
  if (!sdk::try_normalize_axis(a.get_int("axis", -1), x->rank)) return "axis is out of range";
  return "";
}

void build_layernorm(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& s = b.input(node, 1);
  const TensorInfo* bias = b.has_input(node, 2) ? &b.input(node, 2) : nullptr;
  const TensorInfo& y = b.output(node, 0);
  sdk::Attributes a(node);
  int64_t axis = sdk::normalize_axis(a.get_int("axis", -1), x.rank(),
                                     std::string("LayerNormalization node '") + node.name + "'");
  int64_t rows = 1, len = 1;
  for (int64_t i = 0; i < axis; ++i) rows *= x.dims[i];
  for (int64_t i = axis; i < x.rank(); ++i) len *= x.dims[i];
  if (s.elements() != len || (bias && bias->elements() != len))
    sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("LayerNormalization node '") + node.name +
                                          "': vulkan needs scale and bias of the normalized shape");
  float eps = a.get_float("epsilon", 1e-5f);
  b.dispatch_rows("layernorm",
                  {0, u32(rows, "rows"), u32(len, "row length"), float_bits(eps), bias ? 1u : 0u},
                  {x.loc, s.loc, bias ? bias->loc : s.loc, y.loc}, static_cast<uint64_t>(rows),
                  static_cast<uint64_t>(len));
}

}  // namespace

void add_normalization_ops(OpTable& t) {
  t.add("Softmax", {check_softmax, build_softmax});
  t.add("LogSoftmax", {check_softmax, build_softmax});
  t.add("LayerNormalization", {check_layernorm, build_layernorm});
}

}  // namespace loom::vulkan
