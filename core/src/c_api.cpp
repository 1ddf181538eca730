// The public C API (loom/loom.h): thin wrappers that turn C++ errors into status objects.
#include "graph_simplify.hpp"
#include "model_loader.hpp"
#include "model_save.hpp"
#include "runtime.hpp"
#include "session.hpp"
#include "session_pool.hpp"
#include "status.hpp"

#include <loom/loom.h>

#include <algorithm>
#include <cstddef>
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
  std::unique_ptr<loom::core::Session> own;       // max_concurrent_runs <= 1
  std::unique_ptr<loom::core::SessionPool> pool;  // max_concurrent_runs > 1
  loom::core::Session* impl = nullptr;  // the session, or the pool's primary (plans, stats)
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
    // An application built against an older loom.h passes a smaller struct: read only what it
    // has, the rest takes its zero default.
    loom_runtime_options_t o;
    std::memset(&o, 0, sizeof o);
    std::memcpy(&o, options, std::min(options->struct_size, sizeof o));
    o.struct_size = sizeof o;
    *out = new loom_runtime_t(o);
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
    if (out->struct_size < offsetof(loom_plugin_record_t, warnings))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_runtime_plugin: struct_size is too small");
    // Fill what the caller's struct has room for (an older loom.h's is smaller).
    loom_plugin_record_t rec;
    std::memset(&rec, 0, sizeof rec);
    rec.path = r.path.c_str();
    rec.loaded = r.loaded;
    rec.explicit_request = r.explicit_request;
    rec.name = r.name.c_str();
    rec.version = r.version.c_str();
    rec.abi_version = r.abi_version;
    rec.registered = r.registered.c_str();
    rec.error = r.error.c_str();
    rec.warnings = r.warnings.c_str();
    const size_t size = std::min(out->struct_size, sizeof rec);
    rec.struct_size = size;
    std::memcpy(out, &rec, size);
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

LOOM_API loom_status_t* loom_model_load_memory(loom_runtime_t* runtime, const void* data,
                                               size_t size, const char* format,
                                               const char* base_directory, loom_model_t** out) {
  return guard_status([&] {
    if (!runtime || !out || (!data && size))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_model_load_memory: NULL argument");
    auto m = std::make_unique<loom_model_t>();
    m->model = loom::core::load_model_memory(runtime->impl, data, size, format ? format : "",
                                             base_directory ? base_directory : "");
    *out = m.release();
  });
}

LOOM_API void loom_model_free(loom_model_t* model) { delete model; }

LOOM_API int32_t loom_max_threads(void) { return loom::core::max_session_threads(); }

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
    if (opts.max_concurrent_runs < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "max_concurrent_runs = " + std::to_string(opts.max_concurrent_runs) +
               " is negative: give 0 or 1 (one run at a time) or the number of runs at once");
    auto s = std::make_unique<loom_session_t>();
    if (opts.max_concurrent_runs > 1) {
      s->pool = std::make_unique<loom::core::SessionPool>(runtime->impl, model->model, opts);
      s->impl = &s->pool->primary();
    } else {
      s->own = std::make_unique<loom::core::Session>(runtime->impl, model->model, opts);
      s->impl = s->own.get();
    }
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
    if (session->pool) {
      auto lease = session->pool->acquire();
      lease->run(num_inputs, input_names, inputs, num_outputs, outputs);
    } else {
      session->impl->run(num_inputs, input_names, inputs, num_outputs, outputs);
    }
  });
}

}  // extern "C"

namespace {

loom_value_kind_t public_kind(loom::core::ValueKind k) {
  switch (k) {
    case loom::core::ValueKind::kTensor:
      return LOOM_VALUE_KIND_TENSOR;
    case loom::core::ValueKind::kSequence:
      return LOOM_VALUE_KIND_SEQUENCE;
    case loom::core::ValueKind::kOptionalTensor:
      return LOOM_VALUE_KIND_OPTIONAL_TENSOR;
    case loom::core::ValueKind::kOptionalSequence:
      return LOOM_VALUE_KIND_OPTIONAL_SEQUENCE;
  }
  return LOOM_VALUE_KIND_TENSOR;
}

// The application's value as a host value; tensors are borrowed.
loom::core::HostValue borrow_value(const std::string& name, const loom_value_t& v) {
  using loom::core::HostValue;
  using loom::core::ValueKind;
  if (v.struct_size < sizeof(loom_value_t))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "input '" + name + "': loom_value_t.struct_size is too small");
  if (v.num_tensors && !v.tensors)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has tensors = NULL");
  auto element = [&](size_t i) {
    return loom::core::borrow_host_tensor(name + "' element '" + std::to_string(i), v.tensors[i]);
  };
  HostValue h;
  h.present = true;
  h.elem_dtype = v.elem_dtype;
  switch (v.kind) {
    case LOOM_VALUE_KIND_TENSOR:
      if (v.num_tensors != 1)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' is a tensor value with " +
                                              std::to_string(v.num_tensors) + " tensors (needs 1)");
      return loom::core::borrow_host_tensor(name, v.tensors[0]);
    case LOOM_VALUE_KIND_SEQUENCE:
    case LOOM_VALUE_KIND_OPTIONAL_SEQUENCE: {
      HostValue seq;
      seq.present = true;
      seq.kind = ValueKind::kSequence;
      seq.elem_dtype = v.elem_dtype;
      for (size_t i = 0; i < v.num_tensors; ++i) seq.elements.push_back(element(i));
      if (v.kind == LOOM_VALUE_KIND_SEQUENCE) return seq;
      h.kind = ValueKind::kOptionalSequence;
      if (v.has_value)
        h.elements.push_back(seq);
      else if (v.num_tensors)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' is an empty optional with tensors");
      return h;
    }
    case LOOM_VALUE_KIND_OPTIONAL_TENSOR:
      h.kind = ValueKind::kOptionalTensor;
      if (v.num_tensors != (v.has_value ? 1u : 0u))
        fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' is an optional tensor with " +
                                              std::to_string(v.num_tensors) + " tensors (needs " +
                                              (v.has_value ? "1" : "0") + ")");
      if (v.has_value) h.elements.push_back(element(0));
      return h;
  }
  fail(LOOM_ERROR_INVALID_ARGUMENT,
       "input '" + name + "' has an unknown kind " + std::to_string(static_cast<int>(v.kind)));
}

// Copies `tensors` into a malloc'd array of malloc'd host tensors in `out` (struct already
// zeroed and typed by the caller).
void fill_tensors(const std::vector<const loom_tensor_t*>& tensors, loom_value_t& out) {
  if (tensors.empty()) return;
  auto* array =
      static_cast<loom_host_tensor_t*>(std::calloc(tensors.size(), sizeof(loom_host_tensor_t)));
  if (!array) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory copying an output");
  out.tensors = array;
  for (const loom_tensor_t* t : tensors) {
    loom::core::copy_to_host_tensor(*t, array[out.num_tensors]);
    ++out.num_tensors;  // counted only once copied, so a release frees exactly these
  }
}

void to_public_value(const loom::core::HostValue& h, loom_value_t& out) {
  using loom::core::ValueKind;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.kind = public_kind(h.kind);
  std::vector<const loom_tensor_t*> tensors;
  if (h.is_tensor()) {
    out.elem_dtype = h.t.dtype;
    out.has_value = true;
    tensors.push_back(&h.t);
  } else {
    out.elem_dtype = h.elem_dtype;
    out.has_value = h.kind == ValueKind::kSequence || !h.elements.empty();
    const std::vector<loom::core::HostValue>& elements =
        h.kind == ValueKind::kOptionalSequence
            ? (h.elements.empty() ? h.elements : h.elements[0].elements)
            : h.elements;
    for (const loom::core::HostValue& e : elements) tensors.push_back(&e.t);
  }
  fill_tensors(tensors, out);
}

}  // namespace

extern "C" {

LOOM_API loom_value_kind_t loom_model_input_kind(const loom_model_t* m, size_t index) {
  if (!m) return LOOM_VALUE_KIND_TENSOR;
  std::vector<int> ids = feedable_inputs(*m->model->graph);
  return index < ids.size() ? public_kind(m->model->graph->values[ids[index]].kind)
                            : LOOM_VALUE_KIND_TENSOR;
}

LOOM_API loom_value_kind_t loom_model_output_kind(const loom_model_t* m, size_t index) {
  if (!m) return LOOM_VALUE_KIND_TENSOR;
  const auto& g = *m->model->graph;
  return index < g.outputs.size() ? public_kind(g.values[g.outputs[index]].kind)
                                  : LOOM_VALUE_KIND_TENSOR;
}

LOOM_API void loom_value_release(loom_value_t* value) {
  if (!value) return;
  for (size_t i = 0; i < value->num_tensors && value->tensors; ++i)
    std::free(value->tensors[i].data);
  std::free(value->tensors);
  value->tensors = nullptr;
  value->num_tensors = 0;
}

LOOM_API loom_status_t* loom_session_run_values(loom_session_t* session, size_t num_inputs,
                                                const char* const* input_names,
                                                const loom_value_t* inputs, size_t num_outputs,
                                                loom_value_t* outputs) {
  size_t touched = 0;  // outputs zeroed so far (emitted in order)
  loom_status_t* status = guard_status([&] {
    if (!session) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_run_values: session is NULL");
    if (num_inputs && (!input_names || !inputs))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input names or values are NULL");
    size_t count = session->impl->num_outputs();
    if (num_outputs < count || (count && !outputs))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "room for " + std::to_string(count) + " outputs is needed");
    std::vector<std::string> names;
    std::vector<loom::core::HostValue> values;
    for (size_t i = 0; i < num_inputs; ++i) {
      names.push_back(input_names[i] ? input_names[i] : "");
      values.push_back(borrow_value(names.back(), inputs[i]));
    }
    auto emit = [&](size_t i, const loom::core::HostValue& v) {
      std::memset(&outputs[i], 0, sizeof outputs[i]);
      touched = i + 1;  // a partly filled output is released below too
      to_public_value(v, outputs[i]);
    };
    if (session->pool) {
      auto lease = session->pool->acquire();
      lease->run_values(names, values, emit);
    } else {
      session->impl->run_values(names, values, emit);
    }
  });
  if (status)
    for (size_t i = 0; i < touched; ++i) loom_value_release(&outputs[i]);
  return status;
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
LOOM_API void loom_session_cancel(loom_session_t* session) {
  if (!session) return;
  if (session->pool)
    session->pool->cancel();
  else
    session->impl->cancel();
}
LOOM_API size_t loom_session_planned_peak_bytes(const loom_session_t* session) {
  return session ? session->impl->planned_peak() : 0;
}
LOOM_API loom_status_t* loom_session_plan_cache_stats(loom_session_t* session,
                                                      loom_plan_cache_stats_t* stats) {
  return guard_status([&] {
    if (!session || !stats)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_plan_cache_stats: NULL argument");
    if (stats->struct_size < sizeof(loom_plan_cache_stats_t))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "loom_session_plan_cache_stats: struct_size is smaller than this library's struct");
    *stats = session->impl->plan_cache_stats();
  });
}
LOOM_API loom_status_t* loom_session_profile_start(loom_session_t* session, size_t max_events) {
  return guard_status([&] {
    if (!session) fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_profile_start: NULL session");
    if (session->pool)
      session->pool->profile_start(max_events);
    else
      session->impl->profile_start(max_events);
  });
}
LOOM_API void loom_session_profile_stop(loom_session_t* session) {
  if (!session) return;
  if (session->pool)
    session->pool->profile_stop();
  else
    session->impl->profile_stop();
}
LOOM_API size_t loom_session_profile_events(loom_session_t* session,
                                            void (*fn)(void* user,
                                                       const loom_profile_event_t* event),
                                            void* user) {
  if (!session || !fn) return 0;
  auto profiler = session->impl->profiler();
  if (!profiler) return 0;
  return profiler->events([&](const loom_profile_event_t& e) { fn(user, &e); });
}
LOOM_API loom_status_t* loom_session_profile_trace(loom_session_t* session, char** json) {
  return guard_status([&] {
    if (!session || !json)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_profile_trace: NULL argument");
    auto profiler = session->impl->profiler();
    if (!profiler)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "the session was never profiled: call loom_session_profile_start before its runs");
    *json = dup_string(profiler->chrome_trace());
  });
}
LOOM_API loom_status_t* loom_session_profile_summary(loom_session_t* session, char** text) {
  return guard_status([&] {
    if (!session || !text)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "loom_session_profile_summary: NULL argument");
    auto profiler = session->impl->profiler();
    if (!profiler)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "the session was never profiled: call loom_session_profile_start before its runs");
    *text = dup_string(profiler->summary());
  });
}

LOOM_API void loom_string_free(char* text) { std::free(text); }

LOOM_API size_t loom_dtype_size(loom_dtype_t dtype) { return loom::core::dtype_size(dtype); }
LOOM_API const char* loom_dtype_name(loom_dtype_t dtype) { return loom::core::dtype_name(dtype); }

}  // extern "C"
