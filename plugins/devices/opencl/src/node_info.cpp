#include "node_info.hpp"

#include <cstring>

namespace loom::opencl {

std::string NodeInfo::describe() const {
  return std::string(node.op_type) + " '" + (node.name ? node.name : "") + "'";
}

int NodeInfo::input_id(size_t i) const {
  return i < node.num_inputs ? node.inputs[i] : -1;
}

int NodeInfo::output_id(size_t i) const {
  return i < node.num_outputs ? node.outputs[i] : -1;
}

size_t NodeInfo::present_inputs() const {
  size_t n = node.num_inputs;
  while (n > 0 && node.inputs[n - 1] < 0) --n;
  return n;
}

size_t NodeInfo::present_outputs() const {
  size_t n = node.num_outputs;
  while (n > 0 && node.outputs[n - 1] < 0) --n;
  return n;
}

bool NodeInfo::is_constant(size_t i) const {
  const loom_value_info_t* v = input(i);
  return v && (v->flags & LOOM_VALUE_CONSTANT) && (v->data || v->data_size == 0);
}

std::optional<std::vector<int64_t>> NodeInfo::constant_ints(size_t i) const {
  if (!is_constant(i)) return std::nullopt;
  const loom_value_info_t* v = input(i);
  std::vector<int64_t> out;
  if (v->dtype == LOOM_DTYPE_INT64) {
    out.resize(v->data_size / 8);
    if (!out.empty()) std::memcpy(out.data(), v->data, out.size() * 8);
  } else if (v->dtype == LOOM_DTYPE_INT32) {
    const auto* p = static_cast<const int32_t*>(v->data);
    for (size_t k = 0; k < v->data_size / 4; ++k) out.push_back(p[k]);
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<float>> NodeInfo::constant_floats(size_t i) const {
  if (!is_constant(i)) return std::nullopt;
  const loom_value_info_t* v = input(i);
  if (v->dtype != LOOM_DTYPE_FLOAT32) return std::nullopt;
  std::vector<float> out(v->data_size / 4);
  if (!out.empty()) std::memcpy(out.data(), v->data, out.size() * 4);
  return out;
}

std::optional<std::vector<float>> NodeInfo::folded_floats(size_t i) const {
  if (auto direct = constant_floats(i)) return direct;
  int id = input_id(i);
  if (id < 0) return std::nullopt;
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    const loom_node_t* producer = graph.nodes[k];
    if (producer->num_outputs < 1 || producer->outputs[0] != id) continue;
    if (std::string(producer->op_type) != "Constant" || (producer->domain && *producer->domain))
      return std::nullopt;
    sdk::Attributes attrs(*producer);
    if (const loom_attribute_t* f = attrs.find("value_float"); f && f->type == LOOM_ATTR_FLOAT)
      return std::vector<float>{f->f};
    const loom_value_info_t* t = attrs.get_tensor("value");
    if (!t || t->dtype != LOOM_DTYPE_FLOAT32 || (t->data_size && !t->data)) return std::nullopt;
    std::vector<float> out(t->data_size / 4);
    if (!out.empty()) std::memcpy(out.data(), t->data, out.size() * 4);
    return out;
  }
  return std::nullopt;
}

bool shape_known(const loom_value_info_t* v) {
  if (!v || v->rank < 0) return false;
  for (int32_t d = 0; d < v->rank; ++d)
    if (v->dims[d] < 0) return false;
  return true;
}

std::vector<int64_t> shape_of(const loom_value_info_t* v) {
  if (!v || v->rank < 0) return {};
  return std::vector<int64_t>(v->dims, v->dims + v->rank);
}

int64_t elements_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace loom::opencl
