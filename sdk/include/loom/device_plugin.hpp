// The entry of a plugin that registers one device: the ABI handshake, the plugin's info and the
// registration, the same for every device plugin. Header-only, on top of plugin.hpp.
//
//   extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(
//       const loom_host_api_t* host, loom_registrar_t* registrar, loom_plugin_info_t* info) {
//     return loom::sdk::device_plugin_entry(host, registrar, info,
//                                           {"mydev", "1.0.0", "My device"}, kDeviceApi);
//   }
#pragma once

#include <loom/plugin.hpp>

namespace loom::sdk {

struct DevicePluginInfo {
  const char* name;         // the plugin's name (also used in its error messages)
  const char* version;      // the plugin's own version
  const char* description;  // one line for infer-run --list-plugins
  // The ABI version the plugin declares: the header's, or an older minor when it uses only what
  // that minor had (so that older 1.x hosts load it too).
  uint32_t abi_version = LOOM_ABI_VERSION;
  void (*shutdown)(void) = nullptr;  // called before the library is unloaded
};

// Fills `info` (when given), refuses a host of another ABI major and registers `device` (which
// must outlive the plugin: a static). Returns NULL on success.
inline loom_status_t* device_plugin_entry(const loom_host_api_t* host, loom_registrar_t* registrar,
                                          loom_plugin_info_t* info, const DevicePluginInfo& plugin,
                                          const loom_device_api_t& device) {
  if (!host) return nullptr;  // nothing to report a status with
  set_host(host);
  if (info) {
    info->abi_version = plugin.abi_version;
    info->name = plugin.name;
    info->version = plugin.version;
    info->description = plugin.description;
    if (plugin.shutdown) info->shutdown = plugin.shutdown;
  }
  return guard([&] {
    require_host_abi_major(host, plugin.name);
    check(host->register_device(registrar, &device));
  });
}

}  // namespace loom::sdk
