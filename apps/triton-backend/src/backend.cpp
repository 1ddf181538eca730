// The entry points Triton calls (TRITONBACKEND_*): version check, the Loom runtime, models and
// their instances. Every call catches what the backend throws and answers with a
// TRITONSERVER_Error, so that no exception reaches the server.
#include <loom/loom.h>

#include <memory>
#include <string>

#include "common.hpp"
#include "instance.hpp"
#include "json.hpp"
#include "model.hpp"
#include "triton_api.h"

namespace loom::triton {
namespace {

void runtime_log(void*, loom_log_level_t level, const char* source, const char* message) {
  TRITONSERVER_LogLevel to = TRITONSERVER_LOG_INFO;
  if (level == LOOM_LOG_WARNING)
    to = TRITONSERVER_LOG_WARN;
  else if (level == LOOM_LOG_ERROR)
    to = TRITONSERVER_LOG_ERROR;
  else if (level == LOOM_LOG_DEBUG)
    to = TRITONSERVER_LOG_VERBOSE;
  log(to, std::string("loom") + (source && *source ? std::string(" ") + source : "") + ": " +
              (message ? message : ""));
}

// The settings of --backend-config=loom,KEY=VALUE, as the server gives them.
Json backend_settings(TRITONBACKEND_Backend* backend) {
  TRITONSERVER_Message* message = nullptr;
  check(TRITONBACKEND_BackendConfig(backend, &message), "backend configuration");
  const char* json = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* error = TRITONSERVER_MessageSerializeToJson(message, &json, &size);
  Json settings;
  if (error == nullptr) {
    try {
      Json all = Json::parse(std::string_view(json, size));
      if (const Json* cmdline = all.find("cmdline")) settings = *cmdline;
    } catch (const std::runtime_error& e) {
      error = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, e.what());
    }
  }
  // The message stays the server's (unlike a model's configuration).
  check(error, "backend configuration");
  return settings;
}

std::unique_ptr<BackendState> make_backend(TRITONBACKEND_Backend* backend) {
  uint32_t major = 0, minor = 0;
  check(TRITONBACKEND_ApiVersion(&major, &minor), "backend API version");
  if (major != LOOM_TRITON_API_MAJOR || minor < LOOM_TRITON_API_MINOR)
    throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                       "the loom backend needs TRITONBACKEND API " +
                           std::to_string(LOOM_TRITON_API_MAJOR) + "." +
                           std::to_string(LOOM_TRITON_API_MINOR) + " or a later " +
                           std::to_string(LOOM_TRITON_API_MAJOR) + ".x; this server speaks " +
                           std::to_string(major) + "." + std::to_string(minor));

  auto state = std::make_unique<BackendState>();
  Json settings = backend_settings(backend);
  // plugin-path: ':'-separated plugin files or directories, searched before LOOM_PLUGIN_PATH
  // and the install directory.
  std::vector<std::string> paths;
  if (const Json* value = settings.find("plugin-path")) {
    const std::string& text = value->text();
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(':', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) paths.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }
  // default-max-batch-size is also a server-wide setting Triton hands every backend.
  if (const Json* value = settings.find("default-max-batch-size")) {
    std::optional<int64_t> n = Json::number_text(value->text()).as_int();
    if (!n || *n < 0)
      throw BackendError(TRITONSERVER_ERROR_INVALID_ARG,
                         "default-max-batch-size is \"" + value->text() + "\", not a count");
    state->default_max_batch_size = *n;
  }

  std::vector<const char*> path_ptrs;
  for (const auto& p : paths) path_ptrs.push_back(p.c_str());
  loom_runtime_options_t options{};
  options.struct_size = sizeof options;
  options.num_plugin_paths = path_ptrs.size();
  options.plugin_paths = path_ptrs.data();
  options.use_env_path = true;
  options.use_default_paths = true;
  options.log_level =
      TRITONSERVER_LogIsEnabled(TRITONSERVER_LOG_VERBOSE) ? LOOM_LOG_INFO : LOOM_LOG_WARNING;
  options.log_fn = runtime_log;
  check(loom_runtime_create(&options, &state->runtime), "creating the Loom runtime");

  // A plugin that did not load is one line in the server's log, as infer-run --list-plugins
  // would show it: a model that needs it then fails with the runtime's own message.
  std::string loaded;
  for (size_t i = 0; i < loom_runtime_num_plugins(state->runtime); ++i) {
    loom_plugin_record_t record{};
    record.struct_size = sizeof record;
    if (loom_status_t* s = loom_runtime_plugin(state->runtime, i, &record)) {
      loom_status_free(s);
      continue;
    }
    if (record.loaded)
      loaded += (loaded.empty() ? "" : ", ") + std::string(record.name);
    else
      log(record.explicit_request ? TRITONSERVER_LOG_ERROR : TRITONSERVER_LOG_WARN,
          std::string("loom: plugin ") + record.path + " skipped: " + record.error);
  }
  log(TRITONSERVER_LOG_INFO,
      "loom backend: Loom " + std::string(loom_version()) + ", TRITONBACKEND API " +
          std::to_string(major) + "." + std::to_string(minor) + " (built for " +
          std::to_string(LOOM_TRITON_API_MAJOR) + "." + std::to_string(LOOM_TRITON_API_MINOR) +
          "), plugins: " + (loaded.empty() ? "none" : loaded));
  return state;
}

BackendState& backend_of(TRITONBACKEND_Model* model) {
  TRITONBACKEND_Backend* backend = nullptr;
  check(TRITONBACKEND_ModelBackend(model, &backend), "model's backend");
  void* state = nullptr;
  check(TRITONBACKEND_BackendState(backend, &state), "backend state");
  if (state == nullptr) throw BackendError(TRITONSERVER_ERROR_INTERNAL, "backend not initialized");
  return *static_cast<BackendState*>(state);
}

}  // namespace
}  // namespace loom::triton

using namespace loom::triton;

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  try {
    std::unique_ptr<BackendState> state = make_backend(backend);
    check(TRITONBACKEND_BackendSetState(backend, state.get()), "backend state");
    state.release();
    return nullptr;
  } catch (...) {
    return current_error();
  }
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend) {
  try {
    void* state = nullptr;
    check(TRITONBACKEND_BackendState(backend, &state), "backend state");
    delete static_cast<BackendState*>(state);
    return nullptr;
  } catch (...) {
    return current_error();
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  try {
    auto state = std::make_unique<ModelState>(model, backend_of(model));
    check(TRITONBACKEND_ModelSetState(model, state.get()), "model state");
    state.release();
    return nullptr;
  } catch (...) {
    return current_error();
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  try {
    void* state = nullptr;
    check(TRITONBACKEND_ModelState(model, &state), "model state");
    delete static_cast<ModelState*>(state);
    return nullptr;
  } catch (...) {
    return current_error();
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  try {
    TRITONBACKEND_Model* model = nullptr;
    check(TRITONBACKEND_ModelInstanceModel(instance, &model), "instance's model");
    void* model_state = nullptr;
    check(TRITONBACKEND_ModelState(model, &model_state), "model state");
    auto state = std::make_unique<InstanceState>(instance, *static_cast<ModelState*>(model_state));
    check(TRITONBACKEND_ModelInstanceSetState(instance, state.get()), "instance state");
    state.release();
    return nullptr;
  } catch (...) {
    return current_error();
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  try {
    void* state = nullptr;
    check(TRITONBACKEND_ModelInstanceState(instance, &state), "instance state");
    delete static_cast<InstanceState*>(state);
    return nullptr;
  } catch (...) {
    return current_error();
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       uint32_t request_count) {
  void* state = nullptr;
  // Before the requests are taken over: an error here leaves them with the server.
  if (TRITONSERVER_Error* error = TRITONBACKEND_ModelInstanceState(instance, &state)) return error;
  if (state == nullptr)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "loom: instance not initialized");
  static_cast<InstanceState*>(state)->execute(requests, request_count);
  return nullptr;
}

}  // extern "C"
