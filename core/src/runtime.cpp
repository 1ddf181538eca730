#include "runtime.hpp"

#include "elf_check.hpp"
#include "status.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

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

const char* level_name(loom_log_level_t level) {
  switch (level) {
    case LOOM_LOG_DEBUG: return "debug";
    case LOOM_LOG_INFO: return "info";
    case LOOM_LOG_WARNING: return "warning";
    default: return "error";
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
loom_status_code_t api_status_code(const loom_status_t* s) { return s ? s->code : LOOM_OK; }
const char* api_status_message(const loom_status_t* s) { return s ? s->message.c_str() : ""; }
void api_status_free(loom_status_t* s) { delete s; }

void api_log(loom_log_level_t level, const char* source, const char* message) {
  const Runtime* rt = g_log_runtime.load();
  std::string src = source ? source : "plugin";
  std::string msg = message ? message : "";
  if (rt)
    rt->log(level, src, msg);
  else if (level >= LOOM_LOG_WARNING)
    std::cerr << "loom: " << level_name(level) << ": " << src << ": " << msg << "\n";
}

loom_status_t* check_registrar(loom_registrar_t* r, const void* desc, const char* what) {
  if (!r) return new_status(LOOM_ERROR_INVALID_ARGUMENT, std::string(what) + ": registrar is NULL (register only inside loom_plugin_entry)");
  if (!desc) return new_status(LOOM_ERROR_INVALID_ARGUMENT, std::string(what) + ": descriptor is NULL");
  return nullptr;
}

loom_status_t* api_register_format(loom_registrar_t* r, const loom_format_t* f) {
  if (loom_status_t* s = check_registrar(r, f, "register_format")) return s;
  if (!f->name || !*f->name || !f->probe || !f->load)
    return new_status(LOOM_ERROR_INVALID_ARGUMENT, "register_format: name, probe and load are required");
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
    return new_status(LOOM_ERROR_INVALID_ARGUMENT, "register_op_schema: op_type and since_version >= 1 are required");
  r->schemas.push_back(copy_sized(s));
  return nullptr;
}
loom_status_t* api_register_kernel(loom_registrar_t* r, const loom_kernel_t* k) {
  if (loom_status_t* s = check_registrar(r, k, "register_kernel")) return s;
  if (!k->device || !k->op_type || !k->compute || k->since_version < 1)
    return new_status(LOOM_ERROR_INVALID_ARGUMENT, "register_kernel: device, op_type, compute and since_version >= 1 are required");
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
    if (!host || !host->runtime || !node) fail(LOOM_ERROR_INVALID_ARGUMENT, "infer_node: NULL argument");
    const SchemaEntry* s = host->runtime->schemas.find(node->domain ? node->domain : "",
                                                       node->op_type, node->opset);
    if (!s) fail(LOOM_ERROR_NOT_FOUND, std::string("no schema for ") + node->op_type);
    host->runtime->schemas.infer(*s, *node, {inputs, node->num_inputs}, {outputs, num_outputs});
  });
}

const loom_host_api_t kHostApi = {
    sizeof(loom_host_api_t), LOOM_ABI_VERSION,      api_status_new,         api_status_code,
    api_status_message,      api_status_free,       api_log,                api_register_format,
    api_register_device,     api_register_op_schema, api_register_kernel,   api_find_kernel,
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

const loom_host_api_t* host_api_table() { return &kHostApi; }

Runtime::Runtime(const loom_runtime_options_t& options) {
  std::memset(&options_, 0, sizeof options_);
  std::memcpy(&options_, &options, std::min(options.struct_size, sizeof options_));
  g_log_runtime.store(this);

  for (size_t i = 0; i < options_.num_plugin_paths; ++i)
    if (options_.plugin_paths && options_.plugin_paths[i]) add_location(options_.plugin_paths[i], true);

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
        if (end > pos) add_location(all.substr(pos, end - pos), false);
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

void Runtime::add_location(const std::string& path, bool explicit_request) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    search_dirs_.push_back(path);
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.path().extension() == ".so" && entry.is_regular_file(ec)) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) load_file(f, explicit_request);
    return;
  }
  if (!fs::exists(path, ec)) {
    if (explicit_request) {
      PluginRecord rec;
      rec.path = path;
      rec.explicit_request = true;
      rec.error = "no such file or directory";
      records.push_back(rec);
      log(LOOM_LOG_ERROR, "loader", path + ": no such file or directory");
    }
    return;
  }
  load_file(path, explicit_request);
}

void Runtime::load_file(const std::string& path, bool explicit_request) {
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

  if (std::string bad = check_elf_file(path); !bad.empty()) {
    skip(bad);
    return;
  }
  auto library = std::make_unique<boost::dll::shared_library>();
  try {
    library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    std::string why = dl_error_text(e);
    if (why.find("cannot open shared object file") != std::string::npos &&
        why.find(fs::path(path).filename().string()) == std::string::npos)
      why = "a library it needs is missing: " + why + " (install it, or remove this plugin)";
    else if (why.find("invalid ELF header") != std::string::npos || why.find("file too short") != std::string::npos)
      why = "not a shared library (" + why + ")";
    skip(why);
    return;
  }
  if (!library->has(LOOM_PLUGIN_ENTRY_SYMBOL)) {
    skip("not a Loom plugin: it does not export " LOOM_PLUGIN_ENTRY_SYMBOL);
    return;
  }
  auto entry = library->get<std::remove_pointer_t<loom_plugin_entry_fn>>(LOOM_PLUGIN_ENTRY_SYMBOL);

  loom_registrar_t registrar{this, {}, {}, {}, {}};
  loom_plugin_info_t info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  loom_status_t* status = nullptr;
  try {
    status = entry(&kHostApi, &registrar, &info);
  } catch (...) {
    status = new_status(LOOM_ERROR_INTERNAL, "loom_plugin_entry threw an exception");
  }
  rec.abi_version = info.abi_version;
  rec.name = info.name ? info.name : "";
  rec.version = info.version ? info.version : "";
  if (status) {
    std::string msg = status->message;
    delete status;
    skip("initialisation failed: " + msg);
    return;
  }
  if (LOOM_ABI_MAJOR(info.abi_version) != LOOM_ABI_VERSION_MAJOR) {
    skip("built for plugin ABI " + version_string(info.abi_version) + ", but this Loom speaks " +
         version_string(LOOM_ABI_VERSION) + ": rebuild the plugin against this Loom's SDK");
    if (info.shutdown) info.shutdown();
    return;
  }
  if (LOOM_ABI_MINOR(info.abi_version) > LOOM_ABI_VERSION_MINOR) {
    skip("needs plugin ABI " + version_string(info.abi_version) + ", newer than this Loom's " +
         version_string(LOOM_ABI_VERSION) + ": upgrade Loom");
    if (info.shutdown) info.shutdown();
    return;
  }
  if (rec.name.empty()) {
    skip("the plugin did not give its name in loom_plugin_info_t");
    if (info.shutdown) info.shutdown();
    return;
  }
  for (const PluginRecord& other : records)
    if (other.loaded && other.name == rec.name) {
      skip("a plugin named '" + rec.name + "' is already loaded from " + other.path);
      if (info.shutdown) info.shutdown();
      return;
    }
  // Names must be free before anything is committed.
  std::string conflict;
  for (const loom_format_t& f : registrar.formats)
    for (const FormatEntry& e : formats)
      if (conflict.empty() && e.desc.name == std::string(f.name)) conflict = "format '" + std::string(f.name) + "' is already registered by plugin '" + e.plugin + "'";
  for (const loom_device_api_t& d : registrar.devices)
    for (const DeviceEntry& e : devices)
      if (conflict.empty() && e.api.name == std::string(d.name)) conflict = "device '" + std::string(d.name) + "' is already registered by plugin '" + e.plugin + "'";
  for (const loom_op_schema_t& s : registrar.schemas) {
    std::string domain = s.domain ? s.domain : "";
    const SchemaEntry* e = schemas.find(domain, s.op_type, s.since_version);
    if (e && conflict.empty() && e->since_version == s.since_version)
      conflict = "op schema " + domain + "::" + s.op_type + " version " + std::to_string(s.since_version) + " is already registered by " + e->owner;
  }
  if (!conflict.empty()) {
    skip(conflict);
    if (info.shutdown) info.shutdown();
    return;
  }

  std::vector<std::string> what;
  for (const loom_format_t& f : registrar.formats) {
    formats.push_back({f, rec.name});
    what.push_back("format " + std::string(f.name));
  }
  for (const loom_device_api_t& d : registrar.devices) {
    devices.push_back({d, rec.name});
    what.push_back("device " + std::string(d.name));
  }
  for (const loom_op_schema_t& s : registrar.schemas) schemas.add(s, rec.name);
  for (const loom_kernel_t& k : registrar.kernels) kernels.push_back({k, rec.name});
  if (!registrar.schemas.empty()) what.push_back(std::to_string(registrar.schemas.size()) + " op schemas");
  if (!registrar.kernels.empty()) what.push_back(std::to_string(registrar.kernels.size()) + " kernels");
  for (size_t i = 0; i < what.size(); ++i) rec.registered += (i ? "; " : "") + what[i];
  rec.loaded = true;
  records.push_back(rec);
  loaded_.push_back({std::move(library), info.shutdown});
  log(LOOM_LOG_DEBUG, "loader", "loaded plugin " + rec.name + " " + rec.version + " from " + path);
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
