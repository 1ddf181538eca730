// The entry of a plugin that registers one model format: the ABI handshake, the plugin's info
// and the registration, the same for every format plugin. Header-only, on top of plugin.hpp.
//
//   extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(
//       const loom_host_api_t* host, loom_registrar_t* registrar, loom_plugin_info_t* info) {
//     return loom::sdk::format_plugin_entry(host, registrar, info,
//                                           {"myfmt", "1.0.0", "My format: reads"}, kFormat);
//   }
#pragma once

#include <loom/plugin.hpp>
#include <string>

namespace loom::sdk {

struct FormatPluginInfo {
  const char* name;         // the plugin's name (also used in its error messages)
  const char* version;      // the plugin's own version
  const char* description;  // one line for infer-run --list-plugins
};

// Fills `info`, refuses a host of another ABI major or one that cannot register formats, and
// registers `format` (which must outlive the plugin: a static). Returns NULL on success.
inline loom_status_t* format_plugin_entry(const loom_host_api_t* host, loom_registrar_t* registrar,
                                          loom_plugin_info_t* info, const FormatPluginInfo& plugin,
                                          const loom_format_t& format) {
  // Without a host there is no way to create a status; nothing sensible can be returned.
  if (!host || !host->status_new) return nullptr;
  set_host(host);
  return guard([&] {
    const std::string who = std::string(plugin.name) + " format plugin";
    if (!info) fail(LOOM_ERROR_INVALID_ARGUMENT, who + ": info is NULL");
    info->abi_version = LOOM_ABI_VERSION;
    info->name = plugin.name;
    info->version = plugin.version;
    info->description = plugin.description;
    require_host_abi_major(host, std::string(plugin.name) + " format");
    if (!LOOM_HAS_MEMBER(host, loom_host_api_t, register_format) || !host->register_format)
      fail(LOOM_ERROR_INCOMPATIBLE, who + ": the host cannot register formats");
    check(host->register_format(registrar, &format));
  });
}

}  // namespace loom::sdk
