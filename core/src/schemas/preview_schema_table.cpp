// Operators of the ai.onnx.preview domain (onnx 1.23): new operators ONNX publishes for
// feedback before they join the default domain, and the optimizer steps of
// ai.onnx.preview.training. Hand-written, one row per operator a device implements. Columns as
// in newer_schema_table.cpp.
#include "schema_rows.hpp"

namespace loom::core {
namespace {

constexpr SchemaRow kPreviewRows[] = {
    // Scaled dot-product attention with score_mod/prob_mod subgraphs (the cpu device).
    {"ai.onnx.preview", "FlexAttention", 1, 3, 3, 1, 1, false},
    // One optimizer step over n tensors: R, T, then n tensors per group (X, G and the
    // optimizer's state), giving the new X and state per group (the cpu device).
    {"ai.onnx.preview.training", "Adagrad", 1, 5, -1, 2, -1, false},
    {"ai.onnx.preview.training", "Adam", 1, 6, -1, 3, -1, false},
    {"ai.onnx.preview.training", "Momentum", 1, 5, -1, 2, -1, false},
};

}  // namespace

std::span<const SchemaRow> preview_schema_rows() {
  return kPreviewRows;
}

}  // namespace loom::core
