// The op table and the helpers the op files share.
#include <cstring>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

const OpTable& table() {
  static const OpTable ops = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_conv_ops(t);
    add_gemm_ops(t);
    add_pool_ops(t);
    add_normalization_ops(t);
    add_reduce_ops(t);
    add_movement_ops(t);
    add_resize_ops(t);
    return t;
  }();
  return ops;
}

}  // namespace

const OpDef* find_op(std::string_view domain, std::string_view op_type) {
  return table().find_any(domain, op_type);
}

std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  const OpDef* op = find_op(node.domain ? node.domain : "", node.op_type);
  if (!op) return std::string("vulkan has no kernel for ") + node.op_type;
  // Kernels are specialized for static shapes when the subgraph is compiled. Symbolic dims
  // (named, e.g. a batch dim) are known by then; a dim that depends on computed data is not.
  auto data_dependent = [](const loom_value_info_t* v) {
    if (!v || v->rank < 0) return v != nullptr;
    for (int32_t d = 0; d < v->rank; ++d)
      if (v->dims[d] < 0 && !(v->dim_params && v->dim_params[d])) return true;
    return false;
  };
  for (size_t i = 0; i < node.num_inputs; ++i)
    if (data_dependent(sdk::node_input(graph, node, i)))
      return "input " + std::to_string(i) + " has a shape that depends on computed data";
  for (size_t i = 0; i < node.num_outputs; ++i)
    if (data_dependent(sdk::node_output(graph, node, i)))
      return "output " + std::to_string(i) + " has a shape that depends on computed data";
  return op->check(graph, node);
}

std::string require_dtype(const loom_value_info_t* value, const char* role,
                          std::initializer_list<loom_dtype_t> allowed) {
  if (!value) return std::string(role) + " is missing";
  for (loom_dtype_t t : allowed)
    if (value->dtype == t) return "";
  if (value->dtype == LOOM_DTYPE_UNDEFINED) return std::string(role) + " has an unknown type";
  return std::string(role) + " is " + sdk::dtype_name(value->dtype) + ", vulkan supports " +
         (allowed.size() == 1 ? sdk::dtype_name(*allowed.begin()) : "other types") + " here";
}

std::string require_rank(const loom_value_info_t* value, const char* role, int max_rank) {
  if (!value) return std::string(role) + " is missing";
  if (value->rank < 0) return std::string(role) + " has an unknown rank";
  if (value->rank > max_rank)
    return std::string(role) + " has rank " + std::to_string(value->rank) +
           ", vulkan kernels take at most " + std::to_string(max_rank);
  return "";
}

std::optional<std::vector<int64_t>> constant_ints(const loom_value_info_t* value) {
  if (!value || !(value->flags & LOOM_VALUE_CONSTANT) || !value->data) return std::nullopt;
  std::vector<int64_t> out;
  if (value->dtype == LOOM_DTYPE_INT64) {
    out.resize(value->data_size / 8);
    std::memcpy(out.data(), value->data, out.size() * 8);
  } else if (value->dtype == LOOM_DTYPE_INT32) {
    std::vector<int32_t> v(value->data_size / 4);
    std::memcpy(v.data(), value->data, v.size() * 4);
    out.assign(v.begin(), v.end());
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<float>> constant_floats(const loom_value_info_t* value) {
  if (!value || !(value->flags & LOOM_VALUE_CONSTANT) || !value->data ||
      value->dtype != LOOM_DTYPE_FLOAT32)
    return std::nullopt;
  std::vector<float> out(value->data_size / 4);
  std::memcpy(out.data(), value->data, out.size() * 4);
  return out;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

}  // namespace loom::vulkan
