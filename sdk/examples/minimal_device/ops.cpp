#include "ops.hpp"

#include <algorithm>
#include <cstring>
#include <loom/plugin.hpp>

namespace minimal {
namespace {

// Type and shape of a value as far as this device can tell.
struct Facts {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  int32_t rank = -1;
  const int64_t* dims = nullptr;

  bool static_shape() const {
    return rank >= 0 && std::all_of(dims, dims + rank, [](int64_t d) { return d >= 0; });
  }
  bool same_shape(const Facts& o) const {
    return rank == o.rank && std::equal(dims, dims + rank, o.dims);
  }
  std::string shape_text() const {
    if (rank < 0) return "[unknown rank]";
    std::string s = "[";
    for (int32_t d = 0; d < rank; ++d) {
      if (d) s += 'x';
      s += dims[d] < 0 ? std::string("?") : std::to_string(dims[d]);
    }
    s += ']';
    return s;
  }
};

// Placement (supports_node) runs before the core's shape inference, so values computed inside
// the graph may still be UNDEFINED with unknown shapes. The device derives them through chains
// of nodes it supports itself (Relu and same-shape Add keep their first input's type and shape)
// back to values the model declares. `budget` bounds the work on large graphs.
std::string check(const loom_graph_t& graph, const loom_node_t& node, int& budget);

const loom_node_t* producer_of(const loom_graph_t& graph, int32_t value) {
  for (size_t n = 0; n < graph.num_nodes; ++n)
    for (size_t o = 0; o < graph.nodes[n]->num_outputs; ++o)
      if (graph.nodes[n]->outputs[o] == value) return graph.nodes[n];
  return nullptr;
}

Facts facts_of(const loom_graph_t& graph, int32_t value, int& budget) {
  const loom_value_info_t& info = *graph.values[value];
  Facts f{info.dtype, info.rank, info.dims};
  if ((f.dtype != LOOM_DTYPE_UNDEFINED && f.static_shape()) || --budget <= 0) return f;
  const loom_node_t* producer = producer_of(graph, value);
  if (!producer || !check(graph, *producer, budget).empty()) return f;
  Facts in = facts_of(graph, producer->inputs[0], budget);
  if (f.dtype == LOOM_DTYPE_UNDEFINED) f.dtype = in.dtype;
  if (!f.static_shape() && in.rank >= 0) f = Facts{f.dtype, in.rank, in.dims};
  return f;
}

std::string check(const loom_graph_t& graph, const loom_node_t& node, int& budget) {
  std::string op = node.op_type ? node.op_type : "";
  std::string domain = node.domain ? node.domain : "";
  if (!(domain.empty() || domain == "ai.onnx") || (op != "Relu" && op != "Add"))
    return "the minimal device runs only Relu and Add, not " +
           (domain.empty() ? op : domain + "::" + op);
  // Old opsets gave these ops attributes (Add's broadcast/axis, Relu's consumed_inputs).
  if (node.num_attributes > 0)
    return op + " with attribute '" + node.attributes[0]->name + "' (opset " +
           std::to_string(node.opset) + ") is not supported";
  size_t expected_inputs = op == "Add" ? 2 : 1;
  if (node.num_inputs != expected_inputs || node.num_outputs != 1 || node.outputs[0] < 0)
    return op + " with " + std::to_string(node.num_inputs) + " inputs and " +
           std::to_string(node.num_outputs) + " outputs is malformed";
  Facts in[2];
  for (size_t i = 0; i < node.num_inputs; ++i) {
    if (node.inputs[i] < 0) return op + ": input " + std::to_string(i) + " is missing";
    in[i] = facts_of(graph, node.inputs[i], budget);
    if (in[i].dtype == LOOM_DTYPE_UNDEFINED)
      return op + ": the type of input '" + graph.values[node.inputs[i]]->name +
             "' is not known before shape inference";
    if (in[i].dtype != LOOM_DTYPE_FLOAT32)
      return op + " on " + loom::sdk::dtype_name(in[i].dtype) + " (only float32 is supported)";
  }
  if (op == "Add") {
    if (!in[0].static_shape() || !in[1].static_shape())
      return "Add of " + in[0].shape_text() + " and " + in[1].shape_text() +
             ": shapes must be known to rule out broadcasting";
    if (!in[0].same_shape(in[1]))
      return "Add of " + in[0].shape_text() + " and " + in[1].shape_text() +
             " needs broadcasting, which the minimal device does not do";
  }
  return "";
}

}  // namespace

std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  int budget = 256;
  return check(graph, node, budget);
}

Op op_of(const loom_node_t& node) {
  return std::strcmp(node.op_type, "Add") == 0 ? Op::Add : Op::Relu;
}

void relu(std::span<const float> x, std::span<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void add(std::span<const float> a, std::span<const float> b, std::span<float> y) {
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
}

}  // namespace minimal
