// The mistake this project demonstrates: no extern "C", so the exported name is mangled and
// the version script hides it; the core would refuse the file at load time.
#include <loom/plugin.h>

LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t*, loom_registrar_t*,
                                                    loom_plugin_info_t* info) {
  info->abi_version = LOOM_ABI_VERSION;
  info->name = "bad_entry";
  return nullptr;
}
