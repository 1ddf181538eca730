// Shape inference of Attention (opsets 23-25; see newer_schema_table.cpp).
#include "infer_util.hpp"
#include "schema_rows.hpp"

namespace loom::core {

std::span<const InferEntry> attention_infer_entries() {
  return {};
}

}  // namespace loom::core
