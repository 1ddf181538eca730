// The exported entry of loom_ncnn.so: ABI handshake and registration of the "ncnn" format.
#include <loom/format_plugin.hpp>
#include <loom/plugin.hpp>
#include <string>

#include "ncnn_loader.hpp"
#include "param_parser.hpp"

#ifndef LOOM_FORMAT_NCNN_VERSION
#error "LOOM_FORMAT_NCNN_VERSION must be defined by the build (the project version)"
#endif

namespace {

int32_t probe(void*, const uint8_t* head, size_t head_size, const char*) {
  return loom::ncnnfmt::probe_param(head, head_size);
}

loom_status_t* load(void*, const loom_load_args_t* args, const loom_builder_api_t* api,
                    loom_graph_builder_t* builder) {
  return loom::sdk::guard([&] {
    if (!args || !api || !builder)
      loom::sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "ncnn format: NULL load argument");
    if (!LOOM_HAS_MEMBER(api, loom_builder_api_t, set_attr_ints) || !api->add_node ||
        !api->add_initializer || !api->add_input || !api->add_output || !api->set_opset)
      loom::sdk::fail(LOOM_ERROR_INCOMPATIBLE, "ncnn format: the host's graph builder is too old");
    loom::ncnnfmt::load_model_from_files(*args, *api, builder);
  });
}

const loom_format_t kFormat = {
    sizeof(loom_format_t),
    "ncnn",
    "ncnn models: text .param or binary .param.bin, with the .bin weights beside it",
    ".param,.param.bin",
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
      {"ncnn", LOOM_FORMAT_NCNN_VERSION, "ncnn model format (.param / .param.bin + .bin): reads"},
      kFormat);
}
