// The format's two operations, callable without the plugin entry (unit tests, the fuzzer).
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdint>

namespace loom::tflite {

// Confidence 0..100 that `head` starts a TFLite flatbuffer ("TFL3" at byte 4).
int32_t probe(const uint8_t* head, size_t head_size);

// Verifies args.data and builds the graph; throws sdk::Error with a one-line message.
void load_model(const loom_load_args_t& args, const loom_builder_api_t& api,
                loom_graph_builder_t* builder);

}  // namespace loom::tflite
