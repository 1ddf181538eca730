// The exported entry of loom_onnx.so: ABI handshake and registration of the "onnx" format.
#include <loom/format_plugin.hpp>
#include <loom/plugin.hpp>
#include <string>

#include "onnx_format.hpp"

#ifndef LOOM_ONNX_VERSION
#error "LOOM_ONNX_VERSION must be defined by the build (the project version)"
#endif

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::format_plugin_entry(
      host, registrar, info,
      {"onnx", LOOM_ONNX_VERSION,
       "ONNX model format (protobuf, external data, sparse initializers)"},
      loom::onnx::format_descriptor());
}
