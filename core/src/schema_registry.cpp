#include "schema_registry.hpp"

#include <algorithm>

#include "status.hpp"

namespace loom::core {

SchemaRegistry::SchemaRegistry() {
  for (const BuiltinSchema& b : builtin_schemas()) {
    SchemaEntry e;
    e.domain = b.domain;
    e.op_type = b.op_type;
    e.since_version = b.since_version;
    e.min_inputs = b.min_inputs;
    e.max_inputs = b.max_inputs;
    e.min_outputs = b.min_outputs;
    e.max_outputs = b.max_outputs;
    e.deprecated = b.deprecated;
    e.builtin_infer = b.infer;
    e.owner = "builtin";
    note_version(e.domain, e.since_version);
    by_op_[{e.domain, e.op_type}].push_back(std::move(e));
  }
}

void SchemaRegistry::add(const loom_op_schema_t& s, const std::string& owner) {
  if (!s.op_type || !*s.op_type) fail(LOOM_ERROR_INVALID_ARGUMENT, "op schema without an op_type");
  std::string domain = s.domain ? s.domain : "";
  if (domain == "ai.onnx") domain = "";
  auto& versions = by_op_[{domain, s.op_type}];
  for (const SchemaEntry& e : versions)
    if (e.since_version == s.since_version)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "op schema " + (domain.empty() ? std::string() : domain + "::") + s.op_type +
               " version " + std::to_string(s.since_version) + " is already registered by " +
               e.owner);
  SchemaEntry e;
  e.domain = domain;
  e.op_type = s.op_type;
  e.since_version = s.since_version;
  e.min_inputs = s.min_inputs;
  e.max_inputs = s.max_inputs;
  e.min_outputs = s.min_outputs;
  e.max_outputs = s.max_outputs;
  e.plugin_infer = s.infer;
  e.plugin_user = s.user;
  e.owner = owner;
  note_version(domain, e.since_version);
  versions.push_back(std::move(e));
}

void SchemaRegistry::note_version(const std::string& domain, int64_t version) {
  int64_t& newest = newest_[domain];
  newest = std::max(newest, version);
}

int64_t SchemaRegistry::newest_version(const std::string& domain) const {
  auto it = newest_.find(domain == "ai.onnx" ? std::string() : domain);
  return it == newest_.end() ? 0 : it->second;
}

const SchemaEntry* SchemaRegistry::find(const std::string& domain, const std::string& op_type,
                                        int64_t opset) const {
  auto it = by_op_.find({domain == "ai.onnx" ? std::string() : domain, op_type});
  if (it == by_op_.end()) return nullptr;
  const SchemaEntry* best = nullptr;
  for (const SchemaEntry& e : it->second)
    if (e.since_version <= opset && (!best || e.since_version > best->since_version)) best = &e;
  if (best && best->deprecated) return nullptr;
  return best;
}

void SchemaRegistry::infer(const SchemaEntry& schema, const loom_node_t& node,
                           std::span<const loom_value_info_t* const> inputs,
                           std::span<loom_inferred_t> outputs) const {
  if (schema.builtin_infer) {
    schema.builtin_infer(node, inputs, outputs);
  } else if (schema.plugin_infer) {
    throw_if_error(schema.plugin_infer(schema.plugin_user, &node, inputs.data(), outputs.size(),
                                       outputs.data()),
                   std::string(node.op_type) + " node '" + node.name + "'");
  }
}

}  // namespace loom::core
