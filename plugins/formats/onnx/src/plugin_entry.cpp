// The exported entry of loom_onnx.so: ABI handshake and registration of the "onnx" format.
#include <loom/plugin.hpp>
#include <string>

#include "onnx_format.hpp"

#ifndef LOOM_ONNX_VERSION
#error "LOOM_ONNX_VERSION must be defined by the build (the project version)"
#endif

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  // Without a host there is no way to create a status; nothing sensible can be returned.
  if (!host || !host->status_new) return nullptr;
  loom::sdk::set_host(host);
  return loom::sdk::guard([&] {
    if (!info) loom::sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onnx plugin: info is NULL");
    info->abi_version = LOOM_ABI_VERSION;
    info->name = "onnx";
    info->version = LOOM_ONNX_VERSION;
    info->description = "ONNX model format (protobuf, external data, sparse initializers)";
    loom::sdk::require_host_abi_major(host, "onnx");
    if (!LOOM_HAS_MEMBER(host, loom_host_api_t, register_format) || !host->register_format)
      loom::sdk::fail(LOOM_ERROR_INCOMPATIBLE, "onnx plugin: the host cannot register formats");
    loom::sdk::check(host->register_format(registrar, &loom::onnx::format_descriptor()));
  });
}
