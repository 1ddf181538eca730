// Reads a .loom file through the core's graph builder. Constants are borrowed from the mapped
// file, never copied (except strings, which the builder always copies).
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdint>

namespace loom::loomfmt {

// Confidence that `head` starts a .loom file.
int32_t probe(const uint8_t* head, size_t head_size);

void load_model(const loom_load_args_t& args, const loom_builder_api_t& api,
                loom_graph_builder_t* builder);

}  // namespace loom::loomfmt
