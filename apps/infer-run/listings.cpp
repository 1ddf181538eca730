#include "listings.hpp"

#include <fmt/format.h>

#include <cstring>
#include <loom_apps/api.hpp>
#include <string_view>
#include <vector>

#include "app_error.hpp"

namespace loom::infer_run {
namespace {

std::string abi_text(uint32_t abi) {
  if (abi == 0) return "?";
  return fmt::format("{}.{}", LOOM_ABI_MAJOR(abi), LOOM_ABI_MINOR(abi));
}

const char* or_empty(const char* s) {
  return s != nullptr ? s : "";
}

// The fixed-size text fields of loom_device_info_t, read without trusting a terminating NUL.
template <size_t N>
std::string_view field(const char (&text)[N]) {
  return std::string_view(text, strnlen(text, N));
}

std::string plugin_failure(const loom_plugin_record_t& r) {
  return fmt::format("plugin {} failed to load: {}", or_empty(r.path),
                     *or_empty(r.error) ? r.error : "unknown reason");
}

}  // namespace

std::string format_plugin_list(const loom_runtime_t* runtime) {
  auto records = loom::apps::plugin_records(runtime);
  if (records.empty()) return "no plugins found (use --plugin FILE|DIR or LOOM_PLUGIN_PATH)\n";
  std::string out;
  for (const auto& r : records) {
    if (r.loaded) {
      out += fmt::format("{:<10} {:<8} ABI {:<5} {}  [{}]\n", or_empty(r.name), or_empty(r.version),
                         abi_text(r.abi_version), or_empty(r.path), or_empty(r.registered));
      if (*or_empty(r.warnings)) out += fmt::format("           warning: {}\n", r.warnings);
    } else {
      std::string who = *or_empty(r.name) ? fmt::format(" ({})", r.name) : "";
      out += fmt::format("skipped{} {}{}: {}\n", r.explicit_request ? " (requested)" : "",
                         or_empty(r.path), who, or_empty(r.error));
    }
  }
  return out;
}

std::string format_device_list(loom_runtime_t* runtime) {
  std::vector<std::string> lines;
  loom_runtime_list_devices(
      runtime,
      [](void* user, const char* family, const loom_device_info_t* info) {
        auto* out = static_cast<std::vector<std::string>*>(user);
        std::string state = info->available
                                ? "available"
                                : fmt::format("unavailable: {}", field(info->unavailable_reason));
        out->push_back(fmt::format("{:<10} {:<14} {}  {}\n", or_empty(family), field(info->name),
                                   state, field(info->description)));
      },
      &lines);
  if (lines.empty()) return "no devices (no device plugin loaded; see --list-plugins)\n";
  std::string out;
  for (const auto& line : lines) out += line;
  return out;
}

void check_requested_plugins(const loom_runtime_t* runtime) {
  std::vector<std::string> failures;
  for (const auto& r : loom::apps::plugin_records(runtime))
    if (r.explicit_request && !r.loaded) failures.push_back(plugin_failure(r));
  if (failures.empty()) return;
  for (size_t i = 1; i < failures.size(); ++i)
    fmt::print(stderr, "infer-run: error: {}\n", failures[i]);
  throw AppError(kExitPlugin, failures.front());
}

}  // namespace loom::infer_run
