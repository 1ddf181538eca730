// Op schemas known to a runtime: the built-in ONNX table plus what kernel plugins register.
#pragma once

#include <loom/plugin.h>

#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "schemas/builtin_schemas.hpp"

namespace loom::core {

struct SchemaEntry {
  std::string domain;
  std::string op_type;
  int64_t since_version = 1;
  int min_inputs = 0, max_inputs = -1, min_outputs = 0, max_outputs = -1;
  bool deprecated = false;
  InferFn builtin_infer = nullptr;  // built-in schemas
  loom_status_t* (*plugin_infer)(void*, const loom_node_t*, const loom_value_info_t* const*, size_t,
                                 loom_inferred_t*) = nullptr;  // plugin schemas
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
  bool has_domain(const std::string& domain) const { return newest_.count(domain) > 0; }
  // The highest since_version of any schema of `domain` ("" and "ai.onnx" alike), built-in or
  // from a plugin; 0 when the domain has none. An opset newer than this may change ops in ways
  // no registered schema describes, which is why validation refuses it.
  int64_t newest_version(const std::string& domain) const;
  // Runs the schema's inference; outputs must be initialised (UNDEFINED / rank -1).
  void infer(const SchemaEntry& schema, const loom_node_t& node,
             std::span<const loom_value_info_t* const> inputs,
             std::span<loom_inferred_t> outputs) const;

 private:
  void note_version(const std::string& domain, int64_t version);

  std::map<std::pair<std::string, std::string>, std::vector<SchemaEntry>> by_op_;
  std::map<std::string, int64_t> newest_;  // domain -> highest since_version
};

}  // namespace loom::core
