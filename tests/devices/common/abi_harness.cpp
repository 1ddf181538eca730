#include "abi_harness.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

// Statuses are this file's own objects behind the opaque loom_status_t pointer.
struct FakeStatus {
  loom_status_code_t code;
  std::string message;
};
loom_status_t* status_new(loom_status_code_t code, const char* message) {
  return reinterpret_cast<loom_status_t*>(new FakeStatus{code, message ? message : ""});
}
loom_status_code_t status_code(const loom_status_t* s) {
  return s ? reinterpret_cast<const FakeStatus*>(s)->code : LOOM_OK;
}
const char* status_message(const loom_status_t* s) {
  return s ? reinterpret_cast<const FakeStatus*>(s)->message.c_str() : "";
}
void status_free(loom_status_t* s) {
  delete reinterpret_cast<FakeStatus*>(s);
}
void log_message(loom_log_level_t, const char*, const char*) {}
const loom_kernel_t* no_kernel(loom_host_t*, const char*, const char*, const char*, int64_t) {
  return nullptr;
}

// The device API a plugin registered; one loaded plugin per family for the process.
thread_local const loom_device_api_t* g_registered = nullptr;
loom_status_t* register_device(loom_registrar_t*, const loom_device_api_t* api) {
  g_registered = api;
  return nullptr;
}

}  // namespace

std::string take(loom_status_t* s) {
  std::string message = s ? status_message(s) : "";
  if (s) status_free(s);
  return message;
}

// The plugin's device API, or nullptr with `why` set. Each family is loaded once, from a copy.
const loom_device_api_t* load_device(const std::string& family, std::string& why) {
  static std::mutex mutex;
  static std::deque<std::pair<std::string, const loom_device_api_t*>> loaded;
  static loom_host_api_t host = [] {
    loom_host_api_t h{};
    h.struct_size = sizeof h;
    h.abi_version = LOOM_ABI_VERSION;
    h.status_new = status_new;
    h.status_code = status_code;
    h.status_message = status_message;
    h.status_free = status_free;
    h.log = log_message;
    h.register_device = register_device;
    h.find_kernel = no_kernel;
    return h;
  }();
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [name, api] : loaded)
    if (name == family) return api;
  const std::filesystem::path original =
      std::filesystem::path(plugin_dir()) / ("loom_" + family + ".so");
  const std::filesystem::path copy =
      std::filesystem::temp_directory_path() /
      ("loom_" + family + "_abi_test_" + std::to_string(getpid()) + ".so");
  std::error_code error;
  std::filesystem::copy_file(original, copy, std::filesystem::copy_options::overwrite_existing,
                             error);
  if (error) {
    why = "cannot copy " + original.string() + ": " + error.message();
    return nullptr;
  }
  // Never closed: plugins may leave threads (OpenMP, drivers) that run their code until exit.
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::filesystem::remove(copy, error);
  if (!handle) {
    why = std::string("dlopen: ") + dlerror();
    return nullptr;
  }
  auto entry = reinterpret_cast<loom_plugin_entry_fn>(dlsym(handle, LOOM_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    why = "no " LOOM_PLUGIN_ENTRY_SYMBOL " in " + original.string();
    return nullptr;
  }
  loom_plugin_info_t info{};
  info.struct_size = sizeof info;
  g_registered = nullptr;
  why = take(entry(&host, nullptr, &info));
  if (!why.empty() || !g_registered) {
    if (why.empty()) why = "the plugin registered no device";
    return nullptr;
  }
  loaded.emplace_back(family, g_registered);
  return g_registered;
}

loom_status_code_t code_of(const loom_status_t* s) {
  return status_code(s);
}

loom_status_t* make_status(loom_status_code_t code, const char* message) {
  return status_new(code, message);
}

std::string unavailable(const loom_device_api_t* api) {
  struct Found {
    bool available = false;
    std::string reason = "no instance listed";
  } found;
  api->enumerate(
      api->user,
      [](void* user, const loom_device_info_t* info) {
        auto* f = static_cast<Found*>(user);
        if (info->available)
          f->available = true;
        else if (!f->available)
          f->reason = info->unavailable_reason;
      },
      &found);
  return found.available ? "" : found.reason;
}

}  // namespace loom::device_testing
