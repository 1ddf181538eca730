#include "runtime.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "elf_check.hpp"
#include "status.hpp"

#ifndef LOOM_BUILD_PLUGIN_DIR
#define LOOM_BUILD_PLUGIN_DIR ""
#endif
#ifndef LOOM_BUILD_LIB_DIR
#define LOOM_BUILD_LIB_DIR ""
#endif

namespace fs = std::filesystem;

// Collects what one plugin registers during its entry call; committed only if it all fits.
struct loom_registrar_t {
  loom::core::Runtime* runtime;
  std::vector<loom_format_t> formats;
  std::vector<loom_device_api_t> devices;
  std::vector<loom_op_schema_t> schemas;
  std::vector<loom_kernel_t> kernels;
};

namespace loom::core {
namespace {

// host->log has no context argument: messages go to the most recently created runtime.
std::atomic<const Runtime*> g_log_runtime{nullptr};
// Set in an isolated probe's child: its plugin log messages would repeat those of the real load.
std::atomic<bool> g_quiet{false};

const char* level_name(loom_log_level_t level) {
  switch (level) {
    case LOOM_LOG_DEBUG:
      return "debug";
    case LOOM_LOG_INFO:
      return "info";
    case LOOM_LOG_WARNING:
      return "warning";
    default:
      return "error";
  }
}

// Copies a size-prefixed struct the plugin handed us: takes what both sides know, zeroes the
// rest (a plugin built against an older minor has a smaller struct).
template <typename T>
T copy_sized(const T* in) {
  T out;
  std::memset(&out, 0, sizeof out);
  size_t n = std::min(in->struct_size, sizeof(T));
  std::memcpy(&out, in, n);
  out.struct_size = sizeof(T);
  return out;
}

loom_status_t* api_status_new(loom_status_code_t code, const char* message) {
  return new_status(code, message ? message : "");
}
loom_status_code_t api_status_code(const loom_status_t* s) {
  return s ? s->code : LOOM_OK;
}
const char* api_status_message(const loom_status_t* s) {
  return s ? s->message.c_str() : "";
}
void api_status_free(loom_status_t* s) {
  delete s;
}

void api_log(loom_log_level_t level, const char* source, const char* message) {
  if (g_quiet.load()) return;
  const Runtime* rt = g_log_runtime.load();
  std::string src = source ? source : "plugin";
  std::string msg = message ? message : "";
  if (rt)
    rt->log(level, src, msg);
  else if (level >= LOOM_LOG_WARNING)
    std::cerr << "loom: " << level_name(level) << ": " << src << ": " << msg << "\n";
}

loom_status_t* check_registrar(loom_registrar_t* r, const void* desc, const char* what) {
  if (!r)
    return new_status(
        LOOM_ERROR_INVALID_ARGUMENT,
        std::string(what) + ": registrar is NULL (register only inside loom_plugin_entry)");
  if (!desc)
    return new_status(LOOM_ERROR_INVALID_ARGUMENT, std::string(what) + ": descriptor is NULL");
  return nullptr;
}

loom_status_t* api_register_format(loom_registrar_t* r, const loom_format_t* f) {
  if (loom_status_t* s = check_registrar(r, f, "register_format")) return s;
  if (!f->name || !*f->name || !f->probe || !f->load)
    return new_status(LOOM_ERROR_INVALID_ARGUMENT,
                      "register_format: name, probe and load are required");
  r->formats.push_back(copy_sized(f));
  return nullptr;
}
loom_status_t* api_register_device(loom_registrar_t* r, const loom_device_api_t* d) {
  if (loom_status_t* s = check_registrar(r, d, "register_device")) return s;
  if (!d->name || !*d->name || !d->enumerate || !d->create || !d->destroy || !d->supports_node ||
      !d->alloc || !d->free_buffer || !d->buffer_host_ptr || !d->copy_to_host ||
      !d->copy_from_host || !d->compile || !d->release_executable || !d->run || !d->get_info)
    return new_status(LOOM_ERROR_INVALID_ARGUMENT,
                      std::string("register_device '") + (d->name ? d->name : "") +
                          "': every device function of ABI 1.0 is required");
  r->devices.push_back(copy_sized(d));
  return nullptr;
}
loom_status_t* api_register_op_schema(loom_registrar_t* r, const loom_op_schema_t* s) {
  if (loom_status_t* st = check_registrar(r, s, "register_op_schema")) return st;
  if (!s->op_type || !*s->op_type || s->since_version < 1)
    return new_status(LOOM_ERROR_INVALID_ARGUMENT,
                      "register_op_schema: op_type and since_version >= 1 are required");
  r->schemas.push_back(copy_sized(s));
  return nullptr;
}
loom_status_t* api_register_kernel(loom_registrar_t* r, const loom_kernel_t* k) {
  if (loom_status_t* s = check_registrar(r, k, "register_kernel")) return s;
  if (!k->device || !k->op_type || !k->compute || k->since_version < 1)
    return new_status(
        LOOM_ERROR_INVALID_ARGUMENT,
        "register_kernel: device, op_type, compute and since_version >= 1 are required");
  r->kernels.push_back(copy_sized(k));
  return nullptr;
}

const loom_kernel_t* api_find_kernel(loom_host_t* host, const char* device, const char* domain,
                                     const char* op_type, int64_t opset) {
  if (!host || !host->runtime || !device || !op_type) return nullptr;
  return host->runtime->find_kernel(device, domain ? domain : "", op_type, opset);
}

loom_status_t* api_infer_node(loom_host_t* host, const loom_node_t* node,
                              const loom_value_info_t* const* inputs, size_t num_outputs,
                              loom_inferred_t* outputs) {
  return guard_status([&] {
    if (!host || !host->runtime || !node)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "infer_node: NULL argument");
    const SchemaEntry* s =
        host->runtime->schemas.find(node->domain ? node->domain : "", node->op_type, node->opset);
    if (!s) fail(LOOM_ERROR_NOT_FOUND, std::string("no schema for ") + node->op_type);
    host->runtime->schemas.infer(*s, *node, {inputs, node->num_inputs}, {outputs, num_outputs});
  });
}

const loom_host_api_t kHostApi = {
    sizeof(loom_host_api_t),
    LOOM_ABI_VERSION,
    api_status_new,
    api_status_code,
    api_status_message,
    api_status_free,
    api_log,
    api_register_format,
    api_register_device,
    api_register_op_schema,
    api_register_kernel,
    api_find_kernel,
    api_infer_node,
};

std::string version_string(uint32_t v) {
  return std::to_string(LOOM_ABI_MAJOR(v)) + "." + std::to_string(LOOM_ABI_MINOR(v));
}

// Directory holding libloom itself (for the install layout <libdir>/loom/plugins).
std::string libloom_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&loom_version), &info) && info.dli_fname) {
    std::error_code ec;
    fs::path p = fs::canonical(info.dli_fname, ec);
    if (!ec) return p.parent_path().string();
  }
  return {};
}

// ---- the exit guard -----------------------------------------------------------------------
// A plugin that calls exit() while it loads (in a constructor or in its entry) ends the
// process with the status it chose, often 0, so `infer-run` would "succeed" and nothing would
// name the plugin. While a plugin loads, its path is kept here and an on_exit handler (glibc:
// unlike atexit it is given the status) names it on stderr. A status of 0 becomes 1: the
// handler calls _exit(1) at once, which skips the remaining exit handlers, static destructors
// and stdio flushing (stdio is flushed by hand first). A non-zero status is kept and the exit
// goes on normally. Plugin loads are serialised by g_load_mutex, so one path is enough.
std::recursive_mutex g_load_mutex;
char g_loading_path[4096];
std::atomic<bool> g_loading{false};
// In an isolated probe's child (see probe_isolated), exit() ends the child with this status
// instead, and the parent reports it.
std::atomic<bool> g_in_probe_child{false};
constexpr int kProbeCalledExit = 121;

void exit_guard(int status, void*) {
  if (!g_loading.load()) return;
  if (g_in_probe_child.load()) ::_exit(kProbeCalledExit);
  std::fflush(stdout);
  std::fprintf(stderr, "loom: plugin %s called exit(%d) while loading; %s\n", g_loading_path,
               status,
               status == 0 ? "the process exits with status 1 instead (remove or fix the plugin)"
                           : "(remove or fix the plugin)");
  std::fflush(stderr);
  if (status == 0) ::_exit(1);
}

void install_exit_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    // on_exit handlers are not removed when a library is dlclose()d: keep libloom mapped for
    // the life of the process, so that the handler never points into unmapped code when an
    // application dlopen()s and closes libloom. The handle is kept on purpose.
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&exit_guard), &info) && info.dli_fname)
      (void)dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    ::on_exit(exit_guard, nullptr);
  });
}

// Marks a plugin load (from dlopen to the end of its entry call) for the exit guard, and
// serialises loads across runtimes.
class LoadingScope {
 public:
  explicit LoadingScope(const std::string& path) : lock_(g_load_mutex) {
    install_exit_guard();
    was_loading_ = g_loading.load();
    std::memcpy(saved_, g_loading_path, sizeof saved_);
    std::snprintf(g_loading_path, sizeof g_loading_path, "%s", path.c_str());
    g_loading.store(true);
  }
  ~LoadingScope() {
    g_loading.store(was_loading_);
    std::memcpy(g_loading_path, saved_, sizeof saved_);
  }
  LoadingScope(const LoadingScope&) = delete;
  LoadingScope& operator=(const LoadingScope&) = delete;

 private:
  std::lock_guard<std::recursive_mutex> lock_;
  bool was_loading_ = false;
  char saved_[sizeof g_loading_path];
};

// ---- the isolated probe -------------------------------------------------------------------
constexpr auto kProbeTimeout = std::chrono::seconds(10);

// Threads of this process, from /proc (0 when unknown).
size_t thread_count() {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator("/proc/self/task", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// True when the isolated probe was asked for: the runtime option, or
// LOOM_ISOLATE_PLUGIN_PROBE=1 in the environment.
bool isolate_requested(const loom_runtime_options_t& options) {
  if (options.isolate_plugin_probe) return true;
  const char* env = std::getenv("LOOM_ISOLATE_PLUGIN_PROBE");
  return env && std::strcmp(env, "1") == 0;
}

// Boost.DLL wraps dlerror() in a longer text; keep the part that names the problem.
std::string dl_error_text(const std::exception& e) {
  std::string what = e.what();
  auto start = what.find("dlerror system message: ");
  if (start != std::string::npos) {
    start += std::strlen("dlerror system message: ");
    // The message may itself contain parentheses: it ends at the last "):" Boost appends.
    auto end = what.rfind("):");
    if (end == std::string::npos || end < start) end = what.find(')', start);
    return what.substr(start, end == std::string::npos ? std::string::npos : end - start);
  }
  return what;
}

}  // namespace

const loom_host_api_t* host_api_table() {
  return &kHostApi;
}

Runtime::Runtime(const loom_runtime_options_t& options) {
  std::memset(&options_, 0, sizeof options_);
  std::memcpy(&options_, &options, std::min(options.struct_size, sizeof options_));
  g_log_runtime.store(this);
  isolate_probe_ = isolate_requested(options_);

  for (size_t i = 0; i < options_.num_plugin_paths; ++i)
    if (options_.plugin_paths && options_.plugin_paths[i])
      add_location(options_.plugin_paths[i], true);

  if (options_.use_env_path) {
    // Like the Vulkan loader: a setuid/setgid process must not load code named by the caller.
    bool privileged = getuid() != geteuid() || getgid() != getegid();
    const char* env = std::getenv("LOOM_PLUGIN_PATH");
    if (env && *env && privileged) {
      log(LOOM_LOG_WARNING, "loader", "LOOM_PLUGIN_PATH is ignored in a setuid/setgid process");
    } else if (env && *env) {
      std::string all = env;
      size_t pos = 0;
      while (pos <= all.size()) {
        size_t end = all.find(':', pos);
        if (end == std::string::npos) end = all.size();
        std::string entry = all.substr(pos, end - pos);
        // A relative entry ("." or "plugins") would load whatever the current directory holds,
        // which changes from run to run and may belong to someone else.
        if (!entry.empty() && entry[0] != '/')
          log(LOOM_LOG_WARNING, "loader",
              "LOOM_PLUGIN_PATH entry '" + entry +
                  "' is relative and is ignored: give plugin directories as absolute paths");
        else if (!entry.empty())
          add_location(entry, false);
        pos = end + 1;
      }
    }
  }
  if (options_.use_default_paths) {
    std::string dir = libloom_dir();
    if (!dir.empty()) {
      fs::path installed = fs::path(dir) / "loom" / "plugins";
      std::error_code ec;
      if (fs::is_directory(installed, ec)) add_location(installed.string(), false);
      // The build tree, only for a libloom that lives in that build tree.
      if (std::strlen(LOOM_BUILD_LIB_DIR) && fs::equivalent(dir, LOOM_BUILD_LIB_DIR, ec) &&
          fs::is_directory(LOOM_BUILD_PLUGIN_DIR, ec))
        add_location(LOOM_BUILD_PLUGIN_DIR, false);
    }
  }
}

Runtime::~Runtime() {
  const Runtime* self = this;
  g_log_runtime.compare_exchange_strong(self, nullptr);
  // Registries point into the libraries: clear them before unloading, newest plugin first.
  formats.clear();
  devices.clear();
  kernels.clear();
  for (auto it = loaded_.rbegin(); it != loaded_.rend(); ++it) {
    if (it->shutdown) it->shutdown();
    it->library.reset();
  }
}

void Runtime::log(loom_log_level_t level, const std::string& source,
                  const std::string& message) const {
  if (level < options_.log_level) return;
  if (options_.log_fn)
    options_.log_fn(options_.log_user, level, source.c_str(), message.c_str());
  else
    std::cerr << "loom: " << level_name(level) << ": " << source << ": " << message << "\n";
}

void Runtime::record_unusable(const std::string& path, bool explicit_request,
                              const std::string& why) {
  PluginRecord rec;
  rec.path = path;
  rec.explicit_request = explicit_request;
  rec.error = why;
  records.push_back(rec);
  log(explicit_request ? LOOM_LOG_ERROR : LOOM_LOG_WARNING, "loader",
      "skipping plugin " + path + ": " + why);
}

void Runtime::add_location(const std::string& path, bool explicit_request) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    search_dirs_.push_back(path);
    std::vector<std::string> dir_warnings = write_access_warnings(path);
    for (const std::string& w : dir_warnings) log(LOOM_LOG_WARNING, "loader", w);
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.path().extension() == ".so") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      // A FIFO, device, directory or broken link named *.so is reported, never opened.
      if (std::string why = plugin_path_problem(f); !why.empty()) {
        if (tried_.insert(f).second) record_unusable(f, explicit_request, why);
        continue;
      }
      load_file(f, explicit_request, dir_warnings);
    }
    return;
  }
  std::string why = plugin_path_problem(path);
  if (why == "no such file or directory" && !explicit_request) return;  // an absent search dir
  if (!why.empty()) {
    if (tried_.insert(path).second) record_unusable(path, explicit_request, why);
    return;
  }
  // Whoever can write the directory of an explicitly named file can replace the file, unless
  // the directory is sticky (as /tmp is): then only the file's owner can.
  std::string parent = fs::path(path).parent_path().string();
  if (parent.empty()) parent = ".";
  struct stat dir_st;
  std::vector<std::string> dir_warnings;
  if (::stat(parent.c_str(), &dir_st) == 0 && !(dir_st.st_mode & S_ISVTX))
    dir_warnings = write_access_warnings(parent);
  for (const std::string& w : dir_warnings) log(LOOM_LOG_WARNING, "loader", w);
  load_file(path, explicit_request, dir_warnings);
}

namespace {

// Why dlopen() refused `path`, in words that say what to do about it.
std::string load_failure(const std::exception& e, const std::string& path) {
  std::string why = dl_error_text(e);
  if (why.find("cannot open shared object file") != std::string::npos &&
      why.find(fs::path(path).filename().string()) == std::string::npos)
    why = "a library it needs is missing: " + why + " (install it, or remove this plugin)";
  else if (why.find("invalid ELF header") != std::string::npos ||
           why.find("file too short") != std::string::npos)
    why = "not a shared library (" + why + ")";
  return why;
}

// Calls the plugin's entry; an exception it lets out becomes an error status.
loom_status_t* enter_plugin(loom_plugin_entry_fn entry, loom_registrar_t& registrar,
                            loom_plugin_info_t& info) {
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  try {
    return entry(&kHostApi, &registrar, &info);
  } catch (...) {
    return new_status(LOOM_ERROR_INTERNAL, "loom_plugin_entry threw an exception");
  }
}

}  // namespace

// Why a plugin whose entry succeeded must still be skipped (its ABI, its name, a name it
// registers that is taken), or "".
std::string Runtime::refusal(const PluginRecord& rec, const loom_plugin_info_t& info,
                             const loom_registrar_t& registrar) const {
  if (LOOM_ABI_MAJOR(info.abi_version) != LOOM_ABI_VERSION_MAJOR)
    return "built for plugin ABI " + version_string(info.abi_version) + ", but this Loom speaks " +
           version_string(LOOM_ABI_VERSION) + ": rebuild the plugin against this Loom's SDK";
  if (LOOM_ABI_MINOR(info.abi_version) > LOOM_ABI_VERSION_MINOR)
    return "needs plugin ABI " + version_string(info.abi_version) + ", newer than this Loom's " +
           version_string(LOOM_ABI_VERSION) + ": upgrade Loom";
  if (rec.name.empty()) return "the plugin did not give its name in loom_plugin_info_t";
  for (const PluginRecord& other : records)
    if (other.loaded && other.name == rec.name)
      return "a plugin named '" + rec.name + "' is already loaded from " + other.path;
  // Names must be free before anything is committed.
  std::string conflict;
  for (const loom_format_t& f : registrar.formats)
    for (const FormatEntry& e : formats)
      if (conflict.empty() && e.desc.name == std::string(f.name))
        conflict = "format '" + std::string(f.name) + "' is already registered by plugin '" +
                   e.plugin + "'";
  for (const loom_device_api_t& d : registrar.devices)
    for (const DeviceEntry& e : devices)
      if (conflict.empty() && e.api.name == std::string(d.name))
        conflict = "device '" + std::string(d.name) + "' is already registered by plugin '" +
                   e.plugin + "'";
  for (const loom_op_schema_t& s : registrar.schemas) {
    std::string domain = s.domain ? s.domain : "";
    const SchemaEntry* e = schemas.find(domain, s.op_type, s.since_version);
    if (e && conflict.empty() && e->since_version == s.since_version)
      conflict = "op schema " + domain + "::" + s.op_type + " version " +
                 std::to_string(s.since_version) + " is already registered by " + e->owner;
  }
  return conflict;
}

// Adds what plugin `plugin` (of ABI `abi_version`) registered to the registries; returns the
// record's "registered" text.
std::string Runtime::commit_registration(const loom_registrar_t& registrar,
                                         const std::string& plugin, uint32_t abi_version) {
  std::vector<std::string> what;
  for (const loom_format_t& f : registrar.formats) {
    formats.push_back({f, plugin, abi_version});
    what.push_back("format " + std::string(f.name));
  }
  for (const loom_device_api_t& d : registrar.devices) {
    devices.push_back({d, plugin});
    what.push_back("device " + std::string(d.name));
  }
  for (const loom_op_schema_t& s : registrar.schemas) schemas.add(s, plugin);
  for (const loom_kernel_t& k : registrar.kernels) {
    kernels.push_back({k, plugin});
    // Of Loom's devices only cpu looks kernels up (find_kernel): one registered for another
    // of them would load and silently never run. (A third-party device may look up kernels
    // under its own name.)
    const std::string device = k.device;
    if (device == "onednn" || device == "neon" || device == "opencl" || device == "vulkan")
      log(LOOM_LOG_WARNING, "loader",
          "plugin " + plugin + " registers a kernel for " + k.op_type + " on device '" + device +
              "', which never runs: of Loom's devices only cpu runs kernel plugins");
  }
  if (!registrar.schemas.empty())
    what.push_back(std::to_string(registrar.schemas.size()) + " op schemas");
  if (!registrar.kernels.empty())
    what.push_back(std::to_string(registrar.kernels.size()) + " kernels");
  std::string registered;
  for (size_t i = 0; i < what.size(); ++i) registered += (i ? "; " : "") + what[i];
  return registered;
}

void Runtime::load_file(const std::string& path, bool explicit_request,
                        const std::vector<std::string>& dir_warnings) {
  std::error_code ec;
  std::string canonical = fs::canonical(path, ec).string();
  if (ec) canonical = path;
  if (!tried_.insert(canonical).second) return;  // the same file found twice

  PluginRecord rec;
  rec.path = path;
  rec.explicit_request = explicit_request;
  auto skip = [&](const std::string& why) {
    rec.error = why;
    log(explicit_request ? LOOM_LOG_ERROR : LOOM_LOG_WARNING, "loader",
        "skipping plugin " + path + ": " + why);
    records.push_back(rec);
  };
  std::vector<std::string> warnings = dir_warnings;
  for (const std::string& w : write_access_warnings(path)) {
    log(LOOM_LOG_WARNING, "loader", w);
    warnings.push_back(w);
  }
  for (size_t i = 0; i < warnings.size(); ++i) rec.warnings += (i ? "; " : "") + warnings[i];

  if (std::string bad = check_elf_file(path); !bad.empty()) {
    skip(bad);
    return;
  }
  // From here to the end of the entry call, a plugin that calls exit() is named (exit_guard).
  LoadingScope loading(path);
  if (isolate_probe_) {
    if (std::string why = probe_isolated(path); !why.empty()) {
      skip(why);
      return;
    }
  }
  auto library = std::make_unique<boost::dll::shared_library>();
  try {
    library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    skip(load_failure(e, path));
    return;
  }
  if (!library->has(LOOM_PLUGIN_ENTRY_SYMBOL)) {
    skip("not a Loom plugin: it does not export " LOOM_PLUGIN_ENTRY_SYMBOL);
    return;
  }
  auto entry = library->get<std::remove_pointer_t<loom_plugin_entry_fn>>(LOOM_PLUGIN_ENTRY_SYMBOL);

  loom_registrar_t registrar{this, {}, {}, {}, {}};
  loom_plugin_info_t info;
  loom_status_t* status = enter_plugin(entry, registrar, info);
  rec.abi_version = info.abi_version;
  rec.name = info.name ? info.name : "";
  rec.version = info.version ? info.version : "";
  if (status) {
    std::string msg = status->message;
    delete status;
    skip("initialisation failed: " + msg);
    return;
  }
  if (std::string why = refusal(rec, info, registrar); !why.empty()) {
    skip(why);
    if (info.shutdown) info.shutdown();
    return;
  }
  rec.registered = commit_registration(registrar, rec.name, info.abi_version);
  rec.loaded = true;
  records.push_back(rec);
  loaded_.push_back({std::move(library), info.shutdown});
  log(LOOM_LOG_DEBUG, "loader", "loaded plugin " + rec.name + " " + rec.version + " from " + path);
}

// The isolated probe (LOOM_ISOLATE_PLUGIN_PROBE=1, or the runtime option where loom.h has it):
// a forked child dlopen()s the plugin and calls its entry with a scratch registrar, then
// _exit(0)s. Only a plugin whose child survived is loaded for real, so one that crashes,
// exits or hangs while it loads is named and skipped instead of ending the process. The child
// is a copy of a possibly multi-threaded process: only the forking thread exists in it, and a
// lock another thread held at fork time (in malloc, in the dynamic loader, in the application)
// stays locked there forever. So the probe runs only while the process has a single thread;
// otherwise plugins load without it, with a warning. Costs one fork and one extra dlopen per
// plugin.
std::string Runtime::probe_isolated(const std::string& path) {
  if (size_t threads = thread_count(); threads > 1) {
    if (!warned_threads_)
      log(LOOM_LOG_WARNING, "loader",
          "the isolated plugin probe is off: the process already runs " + std::to_string(threads) +
              " threads, and a forked child could deadlock on a lock one of them holds (create "
              "the runtime before starting threads)");
    warned_threads_ = true;
    return "";
  }
  std::fflush(nullptr);  // the child must not write the parent's buffered output again
  const pid_t pid = ::fork();
  if (pid < 0) {
    log(LOOM_LOG_WARNING, "loader",
        "the isolated plugin probe could not fork (" + std::string(std::strerror(errno)) +
            "): loading " + path + " without it");
    return "";
  }
  if (pid == 0) {
    // The child: crash signals take their default action (a sanitizer's handler would turn a
    // SIGSEGV into an exit status), exit() ends it with kProbeCalledExit (exit_guard).
    g_in_probe_child.store(true);
    g_quiet.store(true);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    // A dlopen or symbol error is left to the real load, which reports it.
    if (!handle) ::_exit(0);
    auto entry = reinterpret_cast<loom_plugin_entry_fn>(::dlsym(handle, LOOM_PLUGIN_ENTRY_SYMBOL));
    if (!entry) ::_exit(0);
    loom_registrar_t scratch{this, {}, {}, {}, {}};
    loom_plugin_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    try {
      (void)entry(&kHostApi, &scratch, &info);  // leaks the status: the child ends right away
    } catch (...) {
    }
    ::_exit(0);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + kProbeTimeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      // ECHILD: SIGCHLD is ignored, so the child was reaped unseen. Nothing to go on.
      log(LOOM_LOG_WARNING, "loader",
          "the isolated plugin probe cannot wait for its child (" +
              std::string(std::strerror(errno)) + "): loading " + path + " without it");
      return "";
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return "plugin did not finish loading within " + std::to_string(kProbeTimeout.count()) +
             " s in an isolated probe (killed it); skipped";
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  if (WIFSIGNALED(status))
    return "plugin crashed while loading (" + signal_name(WTERMSIG(status)) +
           ") in an isolated probe; skipped";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kProbeCalledExit)
    return "plugin called exit() while loading in an isolated probe; skipped";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return "plugin ended the process with status " + std::to_string(WEXITSTATUS(status)) +
           " while loading in an isolated probe; skipped";
  return "";
}

const DeviceEntry* Runtime::find_device(const std::string& family) const {
  for (const DeviceEntry& d : devices)
    if (family == d.api.name) return &d;
  return nullptr;
}

const loom_kernel_t* Runtime::find_kernel(const std::string& device, const std::string& domain,
                                          const std::string& op_type, int64_t opset) const {
  std::string dom = domain == "ai.onnx" ? "" : domain;
  const loom_kernel_t* best = nullptr;
  for (const KernelEntry& k : kernels) {
    std::string kdom = k.desc.domain ? k.desc.domain : "";
    if (kdom == "ai.onnx") kdom = "";
    if (device != k.desc.device || dom != kdom || op_type != k.desc.op_type ||
        k.desc.since_version > opset)
      continue;
    if (!best || k.desc.since_version > best->since_version) best = &k.desc;
  }
  return best;
}

}  // namespace loom::core
