// The exported entry of loom_loom.so: ABI handshake and registration of the "loom" format.
#include <loom/format_plugin.hpp>
#include <loom/plugin.hpp>
#include <string>

#include "model_reader.hpp"
#include "model_writer.hpp"

#ifndef LOOM_FORMAT_LOOM_VERSION
#error "LOOM_FORMAT_LOOM_VERSION must be defined by the build (the project version)"
#endif

namespace {

int32_t probe(void*, const uint8_t* head, size_t head_size, const char*) {
  return loom::loomfmt::probe(head, head_size);
}

loom_status_t* load(void*, const loom_load_args_t* args, const loom_builder_api_t* api,
                    loom_graph_builder_t* builder) {
  return loom::sdk::guard([&] {
    if (!args || !api || !builder)
      loom::sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "loom format: NULL load argument");
    loom::loomfmt::load_model(*args, *api, builder);
  });
}

loom_status_t* save(void*, const loom_save_args_t* args) {
  return loom::sdk::guard([&] {
    if (!args || !LOOM_HAS_MEMBER(args, loom_save_args_t, declared_inputs))
      loom::sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "loom format: bad save arguments");
    loom::loomfmt::save_model(*args);
  });
}

const loom_format_t kFormat = {
    sizeof(loom_format_t),
    "loom",
    "Loom native model: versioned binary, 64-byte aligned weights loaded by mmap",
    ".loom",
    probe,
    load,
    nullptr,
    save,
};

}  // namespace

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::format_plugin_entry(
      host, registrar, info,
      {"loom", LOOM_FORMAT_LOOM_VERSION, "Loom native model format (.loom): reads and writes"},
      kFormat);
}
