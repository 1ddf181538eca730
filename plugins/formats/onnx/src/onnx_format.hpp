// The "onnx" format: probe and load as C++ functions (throwing sdk::Error), and the
// loom_format_t descriptor that wraps them for the ABI. Tests call these directly.
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdint>

namespace loom::onnx {

int32_t probe(const uint8_t* head, size_t head_size, const char* path);

// Loads the model in args->data into `builder`. Throws sdk::Error on any problem.
void load(const loom_load_args_t& args, const loom_builder_api_t& api,
          loom_graph_builder_t* builder);

// The descriptor registered with the host; its entry points never throw.
const loom_format_t& format_descriptor();

}  // namespace loom::onnx
