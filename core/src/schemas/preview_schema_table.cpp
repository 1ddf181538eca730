// Operators of the ai.onnx.preview domain (onnx 1.23): new operators ONNX publishes for
// feedback before they join the default domain. Hand-written, one row per operator a device
// implements. Columns as in newer_schema_table.cpp.
#include "schema_rows.hpp"

namespace loom::core {
namespace {

constexpr SchemaRow kPreviewRows[] = {
    // Scaled dot-product attention with score_mod/prob_mod subgraphs (the cpu device).
    {"ai.onnx.preview", "FlexAttention", 1, 3, 3, 1, 1, false},
};

}  // namespace

std::span<const SchemaRow> preview_schema_rows() {
  return kPreviewRows;
}

}  // namespace loom::core
