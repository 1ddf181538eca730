// A plugin that needs libloom_fake_dep.so, which is not on the loader's path at run time.
#include <loom/plugin.h>

extern "C" int loom_fake_dependency(void);

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t*,
                                                               loom_registrar_t*,
                                                               loom_plugin_info_t* info) {
  info->abi_version = LOOM_ABI_VERSION;
  info->name = loom_fake_dependency() == 7 ? "missing_dep" : "broken";
  info->version = "1";
  return nullptr;
}
