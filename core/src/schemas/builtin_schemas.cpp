// Joins the schema rows (generated ONNX table, opset-18 and opset-19 additions, opsets 20+,
// ai.onnx.preview) with
// the inference functions of the op families into the list the core's registry starts from.
#include "builtin_schemas.hpp"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema_rows.hpp"

namespace loom::core {
namespace {

using EntryTable = std::span<const InferEntry> (*)();

constexpr EntryTable kFamilies[] = {
    elementwise_infer_entries,   nn_infer_entries,        linalg_infer_entries,
    normalization_infer_entries, shape_op_infer_entries,  slicing_infer_entries,
    generator_infer_entries,     reduction_infer_entries, type_op_infer_entries,
    indexing_infer_entries,      resize_infer_entries,    recurrent_infer_entries,
    control_flow_infer_entries,  signal_infer_entries,    loss_infer_entries,
    container_infer_entries,     text_infer_entries,      ml_infer_entries,
    transformer_infer_entries,   attention_infer_entries, training_infer_entries,
};

std::vector<BuiltinSchema> build() {
  std::multimap<std::pair<std::string, std::string>, const InferEntry*> entries;
  for (EntryTable family : kFamilies)
    for (const InferEntry& e : family()) entries.emplace(std::pair{e.domain, e.op_type}, &e);

  std::vector<BuiltinSchema> schemas;
  auto add = [&](const SchemaRow& row) {
    InferFn infer = nullptr;
    auto [begin, end] = entries.equal_range({row.domain, row.op_type});
    for (auto it = begin; it != end; ++it)
      if (row.since_version >= it->second->first_version &&
          row.since_version <= it->second->last_version)
        infer = it->second->infer;
    // A deprecated version removes the op: nothing to infer for it.
    if (row.deprecated) infer = nullptr;
    schemas.push_back({row.domain, row.op_type, row.since_version, row.min_inputs, row.max_inputs,
                       row.min_outputs, row.max_outputs, row.deprecated, infer});
  };
  for (const SchemaRow& row : onnx_schema_rows()) add(row);
  for (const SchemaRow& row : opset18_schema_rows()) add(row);
  for (const SchemaRow& row : opset19_schema_rows()) add(row);
  for (const SchemaRow& row : newer_schema_rows()) add(row);
  for (const SchemaRow& row : preview_schema_rows()) add(row);
  return schemas;
}

}  // namespace

std::vector<std::string> infer_entry_problems() {
  std::vector<std::string> problems;
  std::vector<const InferEntry*> all;
  for (EntryTable family : kFamilies)
    for (const InferEntry& e : family()) all.push_back(&e);
  auto rows_of = [](const InferEntry& e) {
    int matched = 0;
    for (auto table : {onnx_schema_rows(), opset18_schema_rows(), opset19_schema_rows(),
                       newer_schema_rows(), preview_schema_rows()})
      for (const SchemaRow& row : table)
        if (std::string_view(row.domain) == e.domain &&
            std::string_view(row.op_type) == e.op_type && row.since_version >= e.first_version &&
            row.since_version <= e.last_version)
          ++matched;
    return matched;
  };
  for (size_t i = 0; i < all.size(); ++i) {
    const InferEntry& e = *all[i];
    std::string name = std::string(e.domain) + "::" + e.op_type;
    if (rows_of(e) == 0) problems.push_back(name + ": no schema version in its range");
    for (size_t j = i + 1; j < all.size(); ++j) {
      const InferEntry& o = *all[j];
      if (std::string_view(e.domain) == o.domain && std::string_view(e.op_type) == o.op_type &&
          e.first_version <= o.last_version && o.first_version <= e.last_version)
        problems.push_back(name + ": two entries with overlapping version ranges");
    }
  }
  return problems;
}

std::span<const BuiltinSchema> builtin_schemas() {
  static const std::vector<BuiltinSchema> schemas = build();
  return schemas;
}

}  // namespace loom::core
