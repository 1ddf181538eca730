// A runtime: the plugins it discovered and loaded, and the registries they filled.
#pragma once

#include <loom/loom.h>

#include <boost/dll/shared_library.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "schema_registry.hpp"

namespace loom::core {

class Runtime;

}  // namespace loom::core

// The handle devices get for host->find_kernel / infer_node.
struct loom_host_t {
  loom::core::Runtime* runtime;
};

namespace loom::core {

struct FormatEntry {
  loom_format_t desc;
  std::string plugin;
  uint32_t abi_version = 0;  // the plugin's: a format older than 1.5 cannot load from memory
};
struct DeviceEntry {
  loom_device_api_t api;
  std::string plugin;
};
struct KernelEntry {
  loom_kernel_t desc;
  std::string plugin;
};

struct PluginRecord {
  std::string path;
  bool loaded = false;
  bool explicit_request = false;
  std::string name, version, registered, error;
  // "; "-separated warnings about a plugin that may still have loaded (a world-writable file
  // or directory, an unexpected owner). Also logged at warning level.
  std::string warnings;
  uint32_t abi_version = 0;
};

class Runtime {
 public:
  explicit Runtime(const loom_runtime_options_t& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  SchemaRegistry schemas;
  std::vector<FormatEntry> formats;
  std::vector<DeviceEntry> devices;
  std::vector<KernelEntry> kernels;
  std::vector<PluginRecord> records;
  loom_host_t host{this};

  const DeviceEntry* find_device(const std::string& family) const;
  const loom_kernel_t* find_kernel(const std::string& device, const std::string& domain,
                                   const std::string& op_type, int64_t opset) const;
  void log(loom_log_level_t level, const std::string& source, const std::string& message) const;
  // Whether a message of `level` would be emitted (to skip building costly ones).
  bool logs(loom_log_level_t level) const { return level >= options_.log_level; }
  // loom_runtime_options_t::allow_newer_opsets: 1 accept, -1 refuse, 0 the environment decides.
  int32_t allow_newer_opsets() const { return options_.allow_newer_opsets; }

  // Plugin directories this runtime searched, in order (for error messages and --list-plugins).
  const std::vector<std::string>& search_dirs() const { return search_dirs_; }

 private:
  struct LoadedPlugin {
    std::unique_ptr<boost::dll::shared_library> library;
    void (*shutdown)(void) = nullptr;
  };

  void add_location(const std::string& path, bool explicit_request);
  void load_file(const std::string& path, bool explicit_request,
                 const std::vector<std::string>& dir_warnings = {});
  // load_file's steps: why a plugin that entered must be skipped ("" if none), and committing
  // what it registered (returns PluginRecord::registered).
  std::string refusal(const PluginRecord& rec, const loom_plugin_info_t& info,
                      const loom_registrar_t& registrar) const;
  std::string commit_registration(const loom_registrar_t& registrar, const std::string& plugin,
                                  uint32_t abi_version);
  // A path that cannot be a plugin at all (missing, a FIFO, a symlink loop): recorded, logged.
  void record_unusable(const std::string& path, bool explicit_request, const std::string& why);
  // Loads and enters the plugin in a forked child first: "" when that child survived, else why
  // the plugin must be skipped. See LOOM_ISOLATE_PLUGIN_PROBE in runtime.cpp.
  std::string probe_isolated(const std::string& path);

  loom_runtime_options_t options_{};
  std::set<std::string> tried_;  // canonical paths
  std::vector<std::string> search_dirs_;
  std::vector<LoadedPlugin> loaded_;
  bool isolate_probe_ = false;
  bool warned_threads_ = false;  // the "probe is off: threads" warning, once per runtime
};

// Plugins get this table in loom_plugin_entry.
const loom_host_api_t* host_api_table();

}  // namespace loom::core
