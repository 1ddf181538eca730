#include "ir.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace loom::onednn {

namespace {

// oneDNN descriptors hold at most this many dimensions (DNNL_MAX_NDIMS).
constexpr int kMaxRank = 12;

template <typename T>
void store(IrValue& v, const std::vector<T>& items) {
  v.owned_data.resize(items.size() * sizeof(T));
  if (!items.empty()) std::memcpy(v.owned_data.data(), items.data(), v.owned_data.size());
  v.data = v.owned_data.data();
  v.data_size = v.owned_data.size();
}

// A Constant node's output becomes an owned constant value.
void absorb_constant_node(IrGraph& g, IrNode& n) {
  if (n.outputs.empty() || n.outputs[0] < 0) return;
  IrValue& out = g.value(n.outputs[0]);
  sdk::Attributes attrs(*n.view);
  if (const loom_value_info_t* t = attrs.get_tensor("value")) {
    const auto* src = static_cast<const unsigned char*>(t->data);
    out.owned_data.assign(src, src + t->data_size);
    out.data =
        out.owned_data.empty() ? static_cast<const void*>(&out.owned_data) : out.owned_data.data();
    out.data_size = t->data_size;
  } else if (attrs.has("value_float")) {
    store(out, std::vector<float>{attrs.get_float("value_float", 0.f)});
  } else if (auto fs = attrs.get_floats("value_floats")) {
    store(out, std::vector<float>(fs->begin(), fs->end()));
  } else if (attrs.has("value_int")) {
    store(out, std::vector<int64_t>{attrs.get_int("value_int", 0)});
  } else if (auto is = attrs.get_ints("value_ints")) {
    store(out, std::vector<int64_t>(is->begin(), is->end()));
  } else {
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: Constant node '" + std::string(n.view->name) +
                                          "' has no numeric value attribute");
  }
  out.producer = -1;
  n.absorbed = true;
}

}  // namespace

int64_t IrValue::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int IrGraph::sole_consumer(int id) const {
  const IrValue& v = value(id);
  if (v.graph_output || v.consumers.size() != 1) return -1;
  return nodes[static_cast<size_t>(v.consumers[0])].absorbed ? -1 : v.consumers[0];
}

int sole_reader(const IrGraph& g, int value, const char* op) {
  if (value < 0) return -1;
  int c = g.sole_consumer(value);
  return c >= 0 && g.nodes[static_cast<size_t>(c)].op == op ? c : -1;
}

int other_input(const IrNode& n, int value) {
  if (n.inputs.size() != 2) return -1;
  if (n.inputs[0] == value) return n.inputs[1];
  if (n.inputs[1] == value) return n.inputs[0];
  return -1;
}

void drop_consumer(IrGraph& g, int value, int node) {
  auto& c = g.value(value).consumers;
  auto it = std::find(c.begin(), c.end(), node);
  if (it != c.end()) c.erase(it);
}

IrGraph build_ir(const loom_graph_t& graph) {
  IrGraph g;
  g.values.resize(graph.num_values);
  for (size_t i = 0; i < graph.num_values; ++i) {
    const loom_value_info_t* in = graph.values[i];
    IrValue& v = g.values[i];
    if (!in) continue;
    v.name = in->name ? in->name : "";
    v.dtype = in->dtype;
    if (in->rank > 0 && in->dims) v.dims.assign(in->dims, in->dims + in->rank);
    if ((in->flags & LOOM_VALUE_CONSTANT) && in->data) {
      v.data = in->data;
      v.data_size = in->data_size;
      if (LOOM_HAS_MEMBER(in, loom_value_info_t, content_id)) v.content_id = in->content_id;
    }
  }
  for (size_t i = 0; i < graph.num_inputs; ++i) {
    g.inputs.push_back(graph.inputs[i]);
    g.value(graph.inputs[i]).graph_input = true;
  }
  for (size_t i = 0; i < graph.num_outputs; ++i) {
    g.outputs.push_back(graph.outputs[i]);
    g.value(graph.outputs[i]).graph_output = true;
  }
  g.nodes.resize(graph.num_nodes);
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    const loom_node_t* view = graph.nodes[k];
    IrNode& n = g.nodes[k];
    n.view = view;
    n.op = view->op_type;
    n.opset = view->opset;
    n.inputs.assign(view->inputs, view->inputs + view->num_inputs);
    n.outputs.assign(view->outputs, view->outputs + view->num_outputs);
    if (n.op == "Constant") {
      absorb_constant_node(g, n);
      continue;
    }
    for (int id : n.inputs)
      if (id >= 0) g.value(id).consumers.push_back(static_cast<int>(k));
    for (int id : n.outputs)
      if (id >= 0) g.value(id).producer = static_cast<int>(k);
  }
  // Every value a node touches needs a static shape: primitives are created here, once.
  for (const IrNode& n : g.nodes) {
    if (n.absorbed) continue;
    size_t tensors = data_inputs(n.op, n.inputs.size());
    for (const auto* ids : {&n.inputs, &n.outputs})
      for (size_t i = 0; i < ids->size(); ++i) {
        int id = (*ids)[i];
        if (id < 0 || (ids == &n.inputs && i >= tensors)) continue;
        const loom_value_info_t* in = graph.values[id];
        if (in->rank < 0 || in->rank > kMaxRank)
          sdk::fail(LOOM_ERROR_UNSUPPORTED,
                    "onednn: value '" + g.value(id).name + "' has an unknown rank or one above 12");
        for (int32_t d = 0; d < in->rank; ++d)
          if (in->dims[d] < 0)
            sdk::fail(LOOM_ERROR_UNSUPPORTED,
                      "onednn: value '" + g.value(id).name + "' has an unknown extent at compile");
      }
  }
  return g;
}

std::vector<float> constant_floats(const IrGraph& g, int id) {
  const IrValue& v = g.value(id);
  if (!v.constant()) sdk::fail(LOOM_ERROR_INTERNAL, "onednn: '" + v.name + "' is not a constant");
  std::vector<float> out;
  if (v.dtype == LOOM_DTYPE_FLOAT32) {
    out.resize(v.data_size / sizeof(float));
    if (!out.empty()) std::memcpy(out.data(), v.data, out.size() * sizeof(float));
  } else if (v.dtype == LOOM_DTYPE_FLOAT64) {
    const auto* d = static_cast<const double*>(v.data);
    out.assign(d, d + v.data_size / sizeof(double));
  } else {
    for (int64_t x : constant_ints(g, id)) out.push_back(static_cast<float>(x));
  }
  return out;
}

std::vector<int64_t> constant_ints(const IrGraph& g, int id) {
  const IrValue& v = g.value(id);
  if (!v.constant()) sdk::fail(LOOM_ERROR_INTERNAL, "onednn: '" + v.name + "' is not a constant");
  if (v.dtype == LOOM_DTYPE_INT64) {
    const auto* d = static_cast<const int64_t*>(v.data);
    return {d, d + v.data_size / sizeof(int64_t)};
  }
  if (v.dtype == LOOM_DTYPE_INT32) {
    const auto* d = static_cast<const int32_t*>(v.data);
    return {d, d + v.data_size / sizeof(int32_t)};
  }
  sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: constant '" + v.name + "' has type " +
                                        sdk::dtype_name(v.dtype) + ", expected integers");
}

std::optional<float> scalar_constant(const IrGraph& g, int id) {
  if (id < 0 || !g.value(id).constant()) return std::nullopt;
  const IrValue& v = g.value(id);
  if (v.dtype != LOOM_DTYPE_FLOAT32 && v.dtype != LOOM_DTYPE_FLOAT64) return std::nullopt;
  std::vector<float> f = constant_floats(g, id);
  if (f.size() != 1) return std::nullopt;
  return f[0];
}

size_t data_inputs(const std::string& op, size_t num_inputs) {
  if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Dropout" || op == "Clip" ||
      op == "Pow" || op == "Resize" || op == "Upsample" || op == "Slice" || op == "Split" ||
      op == "Gather" || op == "Pad" || op.rfind("Reduce", 0) == 0)
    return 1;
  return num_inputs;
}

}  // namespace loom::onednn
