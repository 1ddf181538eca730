// --list-plugins and --list-devices, and the check of explicitly requested plugins.
#pragma once

#include <loom/loom.h>

#include <string>

namespace loom::infer_run {

// One line per plugin: loaded ones with name, version, ABI version, path and what they
// registered; skipped ones with the reason.
std::string format_plugin_list(const loom_runtime_t* runtime);
// One line per device instance: family, instance, availability (or why not), description.
std::string format_device_list(loom_runtime_t* runtime);
// Throws AppError(kExitPlugin) naming the first plugin the user asked for that did not load
// (further failures are printed to stderr as their own error lines first).
void check_requested_plugins(const loom_runtime_t* runtime);

}  // namespace loom::infer_run
