#include "graph.hpp"

#include <loom/plugin.hpp>

namespace loom::core {

std::string Shape::to_string() const {
  if (rank < 0) return "(unknown rank)";
  if (rank == 0) return "scalar";
  std::string out;
  for (int32_t i = 0; i < rank; ++i) {
    if (i) out += "x";
    if (dims[i] >= 0)
      out += std::to_string(dims[i]);
    else if (static_cast<size_t>(i) < dim_params.size() && !dim_params[i].empty())
      out += dim_params[i];
    else
      out += "?";
  }
  return out;
}

const Attribute* Node::find_attribute(const std::string& attr_name) const {
  for (const Attribute& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "::" + op_type;
  return d + " node '" + name + "'";
}

int Graph::intern(const std::string& value_name) {
  auto it = value_ids.find(value_name);
  if (it != value_ids.end()) return it->second;
  int id = static_cast<int>(values.size());
  values.push_back(Value{});
  values.back().name = value_name;
  value_ids.emplace(value_name, id);
  return id;
}

int Graph::find(const std::string& value_name) const {
  auto it = value_ids.find(value_name);
  return it == value_ids.end() ? -1 : it->second;
}

size_t Graph::num_initializers() const {
  size_t n = 0;
  for (const Value& v : values)
    if (v.constant) ++n;
  return n;
}

size_t dtype_size(loom_dtype_t dtype) {
  return dtype == LOOM_DTYPE_STRING ? 0 : sdk::dtype_size(dtype);
}
const char* dtype_name(loom_dtype_t dtype) { return sdk::dtype_name(dtype); }

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor:
      return "tensor";
    case ValueKind::kSequence:
      return "seq(tensor)";
    case ValueKind::kOptionalTensor:
      return "optional(tensor)";
    case ValueKind::kOptionalSequence:
      return "optional(seq(tensor))";
  }
  return "unknown";
}

}  // namespace loom::core
