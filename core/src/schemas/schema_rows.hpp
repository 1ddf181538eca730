// Raw schema rows (no inference attached) and the per-family inference tables that
// builtin_schemas.cpp joins into the BuiltinSchema list.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "builtin_schemas.hpp"

namespace loom::core {

struct SchemaRow {
  const char* domain;
  const char* op_type;
  int since_version;
  int min_inputs, max_inputs;    // max -1 = variadic
  int min_outputs, max_outputs;  // max -1 = variadic
  bool deprecated;
};

// Generated from onnx 1.12 by generate_schema_table.py (opsets 1..17, ai.onnx.ml 1..3).
std::span<const SchemaRow> onnx_schema_rows();
// Hand-written: the opset-18 versions of ONNX 1.13 that exporters already emit.
std::span<const SchemaRow> opset18_schema_rows();
// Hand-written: the opset-19 versions of ONNX 1.14 (mostly float8 type widenings).
std::span<const SchemaRow> opset19_schema_rows();
// Generated from the current backend suite's onnx by generate_newer_schema_table.py: opsets
// 20..28 and ai.onnx.ml 4..5.
std::span<const SchemaRow> newer_schema_rows();
// ai.onnx.preview (preview_schema_table.cpp).
std::span<const SchemaRow> preview_schema_rows();

// One inference function for the versions [first_version, last_version] of an op; a schema
// version takes the entry whose range contains its since_version. Most ops share one function
// over all versions because the functions read whichever form (attribute or input) a node uses.
struct InferEntry {
  const char* domain;
  const char* op_type;
  InferFn infer;
  int first_version = 1;
  int last_version = 1 << 30;
};

// Consistency of the family tables: entries naming no schema version (a typo) or overlapping
// another entry of the same op. Empty when all is well; checked by the schema table test.
std::vector<std::string> infer_entry_problems();

// One table per op family, defined in infer_<family>.cpp.
std::span<const InferEntry> elementwise_infer_entries();
std::span<const InferEntry> nn_infer_entries();
std::span<const InferEntry> linalg_infer_entries();
std::span<const InferEntry> normalization_infer_entries();
std::span<const InferEntry> shape_op_infer_entries();
std::span<const InferEntry> slicing_infer_entries();
std::span<const InferEntry> generator_infer_entries();
std::span<const InferEntry> reduction_infer_entries();
std::span<const InferEntry> type_op_infer_entries();
std::span<const InferEntry> indexing_infer_entries();
std::span<const InferEntry> resize_infer_entries();
std::span<const InferEntry> recurrent_infer_entries();
std::span<const InferEntry> control_flow_infer_entries();
std::span<const InferEntry> signal_infer_entries();
std::span<const InferEntry> loss_infer_entries();
std::span<const InferEntry> container_infer_entries();
std::span<const InferEntry> text_infer_entries();
std::span<const InferEntry> ml_infer_entries();
std::span<const InferEntry> transformer_infer_entries();
std::span<const InferEntry> attention_infer_entries();
std::span<const InferEntry> training_infer_entries();

}  // namespace loom::core
