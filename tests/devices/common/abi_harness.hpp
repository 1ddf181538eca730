// The device plugin ABI as a test drives it: a device plugin loaded the way the core loads it
// (a private copy of the .so, with a fake host of this file's own, so that the process's other
// tests keep the core's host), and graphs built by hand the way the core hands them to a device
// (every value with its static shape). profile_cases.cpp and abi_cases.cpp run on it.
#pragma once

#include <loom/plugin.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace loom::device_testing {

// The status's message, freeing it ("" for success).
std::string take(loom_status_t* s);
// The status's code (LOOM_OK for NULL), without freeing it.
loom_status_code_t code_of(const loom_status_t* s);
// A status of the fake host (what a poll callback returns to cancel a run).
loom_status_t* make_status(loom_status_code_t code, const char* message);

// The family's device API (loom_<family>.so in plugin_dir()), or nullptr with `why` set. Each
// family is loaded once per process, from a copy, and never unloaded.
const loom_device_api_t* load_device(const std::string& family, std::string& why);

// Why no instance of `api` is available here, or "" when one is.
std::string unavailable(const loom_device_api_t* api);

// A plain host tensor of `shape` over `bytes` bytes at `data` (not owned), as a run's input.
inline loom_tensor_t host_tensor(loom_dtype_t dtype, const std::vector<int64_t>& shape, void* data,
                                 size_t bytes) {
  loom_tensor_t t{};
  t.struct_size = sizeof t;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.dims[i] = shape[i];
  t.data = data;
  t.byte_size = bytes;
  return t;
}

// A hand-built graph: every value with its static shape, as the core hands them over.
struct Graph {
  std::deque<loom_value_info_t> values;
  std::deque<std::vector<int64_t>> dims;
  std::deque<std::string> strings;
  std::deque<std::vector<int32_t>> index_lists;
  std::deque<std::vector<int64_t>> int_lists;
  std::deque<std::vector<uint8_t>> data;
  std::deque<loom_node_t> nodes;
  std::deque<loom_attribute_t> attrs;
  std::deque<std::vector<const loom_attribute_t*>> attr_lists;
  std::vector<const loom_value_info_t*> value_ptrs;
  std::vector<const loom_node_t*> node_ptrs;
  std::vector<int32_t> inputs, outputs;
  loom_graph_t graph{};

  const char* keep(const std::string& s) {
    strings.push_back(s);
    return strings.back().c_str();
  }
  int32_t value(const std::string& name, loom_dtype_t dtype, std::vector<int64_t> shape,
                uint32_t flags = 0) {
    dims.push_back(std::move(shape));
    loom_value_info_t v{};
    v.struct_size = sizeof v;
    v.name = keep(name);
    v.dtype = dtype;
    v.rank = static_cast<int32_t>(dims.back().size());
    v.dims = dims.back().data();
    v.flags = flags;
    v.arena_offset = -1;
    values.push_back(v);
    auto id = static_cast<int32_t>(values.size() - 1);
    if (flags & LOOM_VALUE_GRAPH_INPUT) inputs.push_back(id);
    if (flags & LOOM_VALUE_GRAPH_OUTPUT) outputs.push_back(id);
    return id;
  }
  template <typename T>
  int32_t constant(const std::string& name, loom_dtype_t dtype, std::vector<int64_t> shape,
                   const std::vector<T>& elements) {
    int32_t id = value(name, dtype, std::move(shape), LOOM_VALUE_CONSTANT);
    data.emplace_back(elements.size() * sizeof(T));
    if (!elements.empty()) std::memcpy(data.back().data(), elements.data(), data.back().size());
    values[static_cast<size_t>(id)].data = data.back().data();
    values[static_cast<size_t>(id)].data_size = data.back().size();
    return id;
  }
  // Returns the node's index in graph.nodes.
  size_t node(const std::string& name, const std::string& op, std::vector<int32_t> in,
              std::vector<int32_t> out, int64_t opset = 13, const std::string& domain = "") {
    index_lists.push_back(std::move(in));
    const auto& ins = index_lists.back();
    index_lists.push_back(std::move(out));
    const auto& outs = index_lists.back();
    attr_lists.emplace_back();
    loom_node_t n{};
    n.struct_size = sizeof n;
    n.name = keep(name);
    n.op_type = keep(op);
    n.domain = keep(domain);
    n.opset = opset;
    n.num_inputs = ins.size();
    n.inputs = ins.data();
    n.num_outputs = outs.size();
    n.outputs = outs.data();
    n.attributes = attr_lists.back().data();
    nodes.push_back(n);
    return nodes.size() - 1;
  }
  loom_attribute_t& attribute(size_t node, const std::string& name, loom_attr_type_t type) {
    loom_attribute_t a{};
    a.struct_size = sizeof a;
    a.name = keep(name);
    a.type = type;
    attrs.push_back(a);
    attr_lists[node].push_back(&attrs.back());
    nodes[node].attributes = attr_lists[node].data();
    nodes[node].num_attributes = attr_lists[node].size();
    return attrs.back();
  }
  void ints(size_t node, const std::string& name, std::vector<int64_t> v) {
    int_lists.push_back(std::move(v));
    loom_attribute_t& a = attribute(node, name, LOOM_ATTR_INTS);
    a.ints = int_lists.back().data();
    a.count = int_lists.back().size();
  }
  void integer(size_t node, const std::string& name, int64_t v) {
    attribute(node, name, LOOM_ATTR_INT).i = v;
  }
  void subgraph(size_t node, const std::string& name, const loom_graph_t* g) {
    attribute(node, name, LOOM_ATTR_GRAPH).graph = g;
  }
  const loom_graph_t* finish(const char* name, const loom_graph_t* parent = nullptr) {
    value_ptrs.clear();
    for (auto& v : values) value_ptrs.push_back(&v);
    node_ptrs.clear();
    for (auto& n : nodes) node_ptrs.push_back(&n);
    graph.struct_size = sizeof graph;
    graph.name = name;
    graph.num_values = value_ptrs.size();
    graph.values = value_ptrs.data();
    graph.num_nodes = node_ptrs.size();
    graph.nodes = node_ptrs.data();
    graph.num_inputs = inputs.size();
    graph.inputs = inputs.data();
    graph.num_outputs = outputs.size();
    graph.outputs = outputs.data();
    graph.parent = parent;
    return &graph;
  }
};

}  // namespace loom::device_testing
