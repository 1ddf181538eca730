#include "executable.hpp"

#include <cstring>
#include <loom/plugin.hpp>
#include <memory>

#include "device.hpp"

namespace minimal {

using loom::sdk::fail;

Executable::Executable(const loom_graph_t& graph) {
  values_.resize(graph.num_values);
  for (size_t v = 0; v < graph.num_values; ++v) {
    const loom_value_info_t& info = *graph.values[v];
    values_[v].name = info.name;
    if (!(info.flags & LOOM_VALUE_CONSTANT)) continue;
    if (info.dtype != LOOM_DTYPE_FLOAT32 || info.rank < 0)
      fail(LOOM_ERROR_UNSUPPORTED,
           std::string("minimal: constant '") + info.name + "' is not a float32 tensor");
    size_t count = static_cast<size_t>(loom::sdk::element_count(info.rank, info.dims));
    if (info.data_size != count * sizeof(float))
      fail(LOOM_ERROR_INVALID_MODEL, std::string("minimal: constant '") + info.name + "' holds " +
                                         std::to_string(info.data_size) +
                                         " bytes, its shape needs " +
                                         std::to_string(count * sizeof(float)));
    values_[v].constant = true;
    values_[v].dims.assign(info.dims, info.dims + info.rank);
    values_[v].data = static_cast<const float*>(info.data);
  }
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    std::string reason = why_unsupported(graph, node);
    if (!reason.empty()) fail(LOOM_ERROR_UNSUPPORTED, "minimal: " + reason);
    nodes_.push_back(Node{node.name ? node.name : "", op_of(node),
                          std::vector<int32_t>(node.inputs, node.inputs + node.num_inputs),
                          node.outputs[0]});
  }
  inputs_.assign(graph.inputs, graph.inputs + graph.num_inputs);
  outputs_.assign(graph.outputs, graph.outputs + graph.num_outputs);
}

namespace {

// A value during one run: its shape and where its floats are; `owned` when a node made it.
struct Slot {
  bool present = false;
  std::vector<int64_t> dims;
  const float* data = nullptr;
  std::unique_ptr<loom::sdk::kit::HostBuffer> owned;
  size_t count() const {
    return static_cast<size_t>(
        loom::sdk::element_count(static_cast<int32_t>(dims.size()), dims.data()));
  }
};

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims[i]);
  }
  s += ']';
  return s;
}

}  // namespace

void Executable::run(const loom_run_args_t& args) {
  std::vector<Slot> slots(values_.size());
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].constant) slots[v] = Slot{true, values_[v].dims, values_[v].data, nullptr};
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const loom_tensor_t& t = args.inputs[i];
    Slot& s = slots[static_cast<size_t>(inputs_[i])];
    s.present = true;
    s.dims.assign(t.dims, t.dims + t.rank);
    // Host-memory device: data is set; fall back to our own buffer's pointer if it is not.
    const void* data = t.data;
    if (!data && t.buffer)
      data = static_cast<const char*>(loom::sdk::kit::buffer_of(t.buffer).data) + t.offset;
    s.data = static_cast<const float*>(data);
    if (s.count() > 0 && (!s.data || t.byte_size < s.count() * sizeof(float)))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "minimal: input '" +
                                            values_[static_cast<size_t>(inputs_[i])].name +
                                            "' has no data or fewer bytes than its shape needs");
  }

  for (const Node& node : nodes_) {
    const Slot& a = slots[static_cast<size_t>(node.inputs[0])];
    if (!a.present)
      fail(LOOM_ERROR_INTERNAL, "minimal: node '" + node.name + "' runs before its input exists");
    Slot out;
    out.present = true;
    out.dims = a.dims;
    out.owned = allocate(a.count() * sizeof(float));
    auto* y = static_cast<float*>(out.owned->data);
    std::span<const float> x(a.data, a.count());
    if (node.op == Op::Relu) {
      relu(x, {y, a.count()});
    } else {
      const Slot& b = slots[static_cast<size_t>(node.inputs[1])];
      if (!b.present)
        fail(LOOM_ERROR_INTERNAL, "minimal: node '" + node.name + "' runs before its input exists");
      // supports_node only accepted equal static shapes; the real inputs must agree.
      if (b.dims != a.dims)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "minimal: Add node '" + node.name + "' got shapes " +
                                              dims_text(a.dims) + " and " + dims_text(b.dims) +
                                              "; this device does not broadcast");
      add(x, {b.data, b.count()}, {y, a.count()});
    }
    out.data = y;
    slots[static_cast<size_t>(node.output)] = std::move(out);
  }

  for (size_t i = 0; i < outputs_.size(); ++i) {
    Slot& s = slots[static_cast<size_t>(outputs_[i])];
    if (!s.present)
      fail(LOOM_ERROR_INTERNAL, "minimal: output '" +
                                    values_[static_cast<size_t>(outputs_[i])].name +
                                    "' was not computed");
    std::unique_ptr<loom::sdk::kit::HostBuffer> buffer = std::move(s.owned);
    if (!buffer) {  // an input or constant passed straight through: the caller gets a copy
      buffer = allocate(s.count() * sizeof(float));
      if (s.count()) std::memcpy(buffer->data, s.data, s.count() * sizeof(float));
    }
    loom::sdk::kit::hand_over(std::move(buffer), LOOM_DTYPE_FLOAT32, s.dims, args.outputs[i], true);
  }
}

}  // namespace minimal
