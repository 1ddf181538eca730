// The exported entry of loom_tflite.so: ABI handshake and registration of the "tflite" format.
#include <loom/format_plugin.hpp>
#include <loom/plugin.hpp>
#include <string>

#include "converter.hpp"
#include "model_view.hpp"
#include "tflite_format.hpp"

#ifndef LOOM_FORMAT_TFLITE_VERSION
#error "LOOM_FORMAT_TFLITE_VERSION must be defined by the build (the project version)"
#endif

namespace loom::tflite {

// TFLite files carry the flatbuffer file identifier "TFL3" at byte 4.
int32_t probe(const uint8_t* head, size_t head_size) {
  if (!head || head_size < 8) return 0;
  return head[4] == 'T' && head[5] == 'F' && head[6] == 'L' && head[7] == '3' ? 100 : 0;
}

void load_model(const loom_load_args_t& args, const loom_builder_api_t& api,
                loom_graph_builder_t* builder) {
  if (!LOOM_HAS_MEMBER(&api, loom_builder_api_t, set_attr_tensor))
    sdk::fail(LOOM_ERROR_INCOMPATIBLE, "tflite format: the host's graph builder is too old");
  const ModelView model(args.data, args.size);
  Converter(model, api, builder).run();
}

}  // namespace loom::tflite

namespace {

int32_t probe(void*, const uint8_t* head, size_t head_size, const char*) {
  return loom::tflite::probe(head, head_size);
}

loom_status_t* load(void*, const loom_load_args_t* args, const loom_builder_api_t* api,
                    loom_graph_builder_t* builder) {
  return loom::sdk::guard([&] {
    if (!args || !api || !builder)
      loom::sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "tflite format: NULL load argument");
    loom::tflite::load_model(*args, *api, builder);
  });
}

const loom_format_t kFormat = {
    sizeof(loom_format_t),
    "tflite",
    "TensorFlow Lite flatbuffer model (float32, int8/uint8 quantized)",
    ".tflite",
    probe,
    load,
    nullptr,
    nullptr,
};

}  // namespace

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::format_plugin_entry(
      host, registrar, info,
      {"tflite", LOOM_FORMAT_TFLITE_VERSION, "TensorFlow Lite model format (.tflite): reads"},
      kFormat);
}
