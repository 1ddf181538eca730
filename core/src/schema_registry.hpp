// Op schemas known to a runtime: the built-in ONNX table plus what kernel plugins register.
#pragma once

#include "schemas/builtin_schemas.hpp"

#include <loom/plugin.h>

#include <map>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace loom::core {

struct SchemaEntry {
  std::string domain;
  std::string op_type;
  int64_t since_version = 1;
  int min_inputs = 0, max_inputs = -1, min_outputs = 0, max_outputs = -1;
  bool deprecated = false;
  InferFn builtin_infer = nullptr;  // built-in schemas
  loom_status_t* (*plugin_infer)(void*, const loom_node_t*, const loom_value_info_t* const*,
                                 size_t, loom_inferred_t*) = nullptr;  // plugin schemas
  void* plugin_user = nullptr;
  std::string owner;  // "builtin" or the plugin name
};

class SchemaRegistry {
 public:
  SchemaRegistry();
  // Adds a plugin's schema; throws if (domain, op, since) is already registered.
  void add(const loom_op_schema_t& schema, const std::string& owner);
  // The schema in force for `opset` of the op's domain: highest since_version <= opset.
  // nullptr if none, or if that version is deprecated (removed from the standard).
  const SchemaEntry* find(const std::string& domain, const std::string& op_type,
                          int64_t opset) const;
  bool has_domain(const std::string& domain) const { return domains_.count(domain) > 0; }
  // Runs the schema's inference; outputs must be initialised (UNDEFINED / rank -1).
  void infer(const SchemaEntry& schema, const loom_node_t& node,
             std::span<const loom_value_info_t* const> inputs,
             std::span<loom_inferred_t> outputs) const;

 private:
  std::map<std::pair<std::string, std::string>, std::vector<SchemaEntry>> by_op_;
  std::set<std::string> domains_;
};

}  // namespace loom::core
