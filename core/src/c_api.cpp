// The public C API (loom/loom.h): thin wrappers that turn C++ errors into status objects.
#include "graph_simplify.hpp"
#include "model_loader.hpp"
#include "model_save.hpp"
#include "runtime.hpp"
#include "session.hpp"
#include "status.hpp"

#include <loom/loom.h>

#include <algorithm>
#include <cstring>

#ifndef LOOM_VERSION_STRING
#define LOOM_VERSION_STRING "0.0.0"
#endif

using loom::core::fail;
using loom::core::guard_status;

struct loom_runtime_t {
  loom::core::Runtime impl;
  explicit loom_runtime_t(const loom_runtime_options_t& o) : impl(o) {}
};
struct loom_model_t {
  std::shared_ptr<loom::core::Model> model;
  std::vector<std::string> input_names, output_names;  // non-constant inputs, outputs
};
struct loom_session_t {
  std::unique_ptr<loom::core::Session> impl;
};

namespace {

void fill_io(const loom::core::Graph& g, int id, loom_io_info_t* out) {
  const loom::core::Value& v = g.values[id];
  std::memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->name = v.name.c_str();
  out->dtype = v.dtype;
  out->rank = v.shape.rank;
  for (int32_t i = 0; i < v.shape.rank && i < LOOM_MAX_RANK; ++i) {
    out->dims[i] = v.shape.dims[i];
    if (static_cast<size_t>(i) < v.shape.dim_params.size() && !v.shape.dim_params[i].empty())
      out->dim_params[i] = v.shape.dim_params[i].c_str();
  }
}

// Inputs the application may feed: declared graph inputs that are not initializers.
std::vector<int> feedable_inputs(const loom::core::Graph& g) {
  std::vector<int> ids;
  for (int id : g.inputs)
    if (!g.values[id].constant) ids.push_back(id);
  return ids;
}

}  // namespace

extern "C" {

LOOM_API const char* loom_version(void) { return LOOM_VERSION_STRING; }

LOOM_API loom_status_code_t loom_status_code(const loom_status_t* s) { return s ? s->code : LOOM_OK; }
LOOM_API const char* loom_status_message(const loom_status_t* s) { return s ? s->message.c_str() : ""; }
LOOM_API void loom_status_free(loom_status_t* s) { delete s; }

LOOM_API loom_status_t* loom_runtime_create(const loom_runtime_options_t* options,
                                            loom_runtime_t** out) {
  return guard_status([&] {
    if (!options || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_runtime_create: NULL argument");
    *out = new loom_runtime_t(*options);
  });
}

LOOM_API void loom_runtime_destroy(loom_runtime_t* runtime) { delete runtime; }

LOOM_API size_t loom_runtime_num_plugins(const loom_runtime_t* runtime) {
  return runtime ? runtime->impl.records.size() : 0;
}

LOOM_API loom_status_t* loom_runtime_plugin(const loom_runtime_t* runtime, size_t index,
                                            loom_plugin_record_t* out) {
  return guard_status([&] {
    if (!runtime || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_runtime_plugin: NULL argument");
    if (index >= runtime->impl.records.size()) fail(LOOM_ERROR_INVALID_ARGUMENT, "plugin index out of range");
    const loom::core::PluginRecord& r = runtime->impl.records[index];
    std::memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->path = r.path.c_str();
    out->loaded = r.loaded;
    out->explicit_request = r.explicit_request;
    out->name = r.name.c_str();
    out->version = r.version.c_str();
    out->abi_version = r.abi_version;
    out->registered = r.registered.c_str();
    out->error = r.error.c_str();
  });
}

LOOM_API void loom_runtime_list_devices(loom_runtime_t* runtime,
                                        void (*fn)(void*, const char*, const loom_device_info_t*),
                                        void* user) {
  if (!runtime || !fn) return;
  for (const loom::core::DeviceEntry& d : runtime->impl.devices) {
    struct Ctx {
      void (*fn)(void*, const char*, const loom_device_info_t*);
      void* user;
      const char* family;
    } ctx{fn, user, d.api.name};
    d.api.enumerate(
        d.api.user,
        [](void* c, const loom_device_info_t* info) {
          auto* x = static_cast<Ctx*>(c);
          x->fn(x->user, x->family, info);
        },
        &ctx);
  }
}

LOOM_API loom_status_t* loom_model_load(loom_runtime_t* runtime, const char* path,
                                        loom_model_t** out) {
  return guard_status([&] {
    if (!runtime || !path || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_model_load: NULL argument");
    auto m = std::make_unique<loom_model_t>();
    m->model = loom::core::load_model(runtime->impl, path);
    *out = m.release();
  });
}

LOOM_API void loom_model_free(loom_model_t* model) { delete model; }

LOOM_API loom_status_t* loom_model_simplify(loom_runtime_t* runtime, loom_model_t* model,
                                            loom_simplify_report_t* report) {
  return guard_status([&] {
    if (!runtime || !model) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_model_simplify: NULL argument");
    loom::core::SimplifyStats stats;
    // A new Model: sessions made earlier hold the old one and keep running it unchanged.
    model->model = loom::core::simplify_model(*model->model, stats);
    if (report) {
      size_t size = report->struct_size;
      loom_simplify_report_t r{};
      r.struct_size = sizeof r;
      r.identities = stats.identities;
      r.dropouts = stats.dropouts;
      r.dead_nodes = stats.dead_nodes;
      r.unused_constants = stats.unused_constants;
      r.constant_nodes = stats.constant_nodes;
      std::memcpy(report, &r, std::min(size, sizeof r));
    }
  });
}

LOOM_API loom_status_t* loom_model_save(loom_runtime_t* runtime, const loom_model_t* model,
                                        const char* format, const char* path) {
  return guard_status([&] {
    if (!runtime || !model || !format || !path)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_model_save: NULL argument");
    loom::core::save_model(runtime->impl, *model->model, format, path);
  });
}

LOOM_API size_t loom_model_num_inputs(const loom_model_t* m) {
  return m ? feedable_inputs(*m->model->graph).size() : 0;
}
LOOM_API size_t loom_model_num_outputs(const loom_model_t* m) {
  return m ? m->model->graph->outputs.size() : 0;
}
LOOM_API loom_status_t* loom_model_input(const loom_model_t* m, size_t index, loom_io_info_t* out) {
  return guard_status([&] {
    if (!m || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_model_input: NULL argument");
    std::vector<int> ids = feedable_inputs(*m->model->graph);
    if (index >= ids.size()) fail(LOOM_ERROR_INVALID_ARGUMENT, "input index out of range");
    fill_io(*m->model->graph, ids[index], out);
  });
}
LOOM_API loom_status_t* loom_model_output(const loom_model_t* m, size_t index, loom_io_info_t* out) {
  return guard_status([&] {
    if (!m || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_model_output: NULL argument");
    const auto& outs = m->model->graph->outputs;
    if (index >= outs.size()) fail(LOOM_ERROR_INVALID_ARGUMENT, "output index out of range");
    fill_io(*m->model->graph, outs[index], out);
  });
}
LOOM_API const char* loom_model_format(const loom_model_t* m) { return m ? m->model->format.c_str() : ""; }
LOOM_API size_t loom_model_num_nodes(const loom_model_t* m) { return m ? m->model->graph->nodes.size() : 0; }
LOOM_API size_t loom_model_num_initializers(const loom_model_t* m) {
  return m ? m->model->graph->num_initializers() : 0;
}
LOOM_API size_t loom_model_num_metadata(const loom_model_t* m) { return m ? m->model->metadata.size() : 0; }
LOOM_API void loom_model_metadata(const loom_model_t* m, size_t index, const char** key,
                                  const char** value) {
  if (!m || index >= m->model->metadata.size()) {
    if (key) *key = nullptr;
    if (value) *value = nullptr;
    return;
  }
  if (key) *key = m->model->metadata[index].first.c_str();
  if (value) *value = m->model->metadata[index].second.c_str();
}

LOOM_API loom_status_t* loom_session_create(loom_runtime_t* runtime, loom_model_t* model,
                                            const loom_session_options_t* options,
                                            loom_session_t** out) {
  return guard_status([&] {
    if (!runtime || !model || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_create: NULL argument");
    loom_session_options_t opts;
    std::memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    if (options) std::memcpy(&opts, options, std::min(options->struct_size, sizeof opts));
    auto s = std::make_unique<loom_session_t>();
    s->impl = std::make_unique<loom::core::Session>(runtime->impl, model->model, opts);
    *out = s.release();
  });
}

LOOM_API void loom_session_destroy(loom_session_t* session) { delete session; }

LOOM_API void loom_host_tensor_release(loom_host_tensor_t* t) {
  if (!t) return;
  std::free(t->data);
  t->data = nullptr;
  t->byte_size = 0;
}

LOOM_API loom_status_t* loom_session_run(loom_session_t* session, size_t num_inputs,
                                         const char* const* input_names,
                                         const loom_host_tensor_t* inputs, size_t num_outputs,
                                         loom_host_tensor_t* outputs) {
  return guard_status([&] {
    if (!session) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_run: session is NULL");
    session->impl->run(num_inputs, input_names, inputs, num_outputs, outputs);
  });
}

static char* dup_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory");
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

LOOM_API loom_status_t* loom_session_explain(loom_session_t* session, char** text) {
  return guard_status([&] {
    if (!session || !text) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_explain: NULL argument");
    *text = dup_string(session->impl->explain());
  });
}
LOOM_API loom_status_t* loom_session_plan_json(loom_session_t* session, char** json) {
  return guard_status([&] {
    if (!session || !json) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_plan_json: NULL argument");
    *json = dup_string(session->impl->plan_json());
  });
}
LOOM_API loom_status_t* loom_session_plan_dot(loom_session_t* session, char** dot) {
  return guard_status([&] {
    if (!session || !dot) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_plan_dot: NULL argument");
    *dot = dup_string(session->impl->plan_dot());
  });
}
LOOM_API size_t loom_session_planned_peak_bytes(const loom_session_t* session) {
  return session ? session->impl->planned_peak() : 0;
}
LOOM_API void loom_string_free(char* text) { std::free(text); }

LOOM_API size_t loom_dtype_size(loom_dtype_t dtype) { return loom::core::dtype_size(dtype); }
LOOM_API const char* loom_dtype_name(loom_dtype_t dtype) { return loom::core::dtype_name(dtype); }

}  // extern "C"
