// loom._loom: the nanobind extension under the Python package `loom` (apps/python/src/loom).
//
// A thin layer over the public C API (loom/loom.h) and nothing else: the Python side
// (_session.py) maps onnxruntime-shaped arguments and NumPy dtypes onto what this module takes.
// Inputs are borrowed for the call (no copy: the core reads the NumPy buffers); outputs are NumPy
// arrays over the buffers the core allocated, owned by a capsule that releases the loom_value_t
// when the last array of the value dies. The GIL is released while the core loads plugins, loads
// a model, creates a session and runs. Inputs may also come through DLPack (dlpack_tensor: a
// torch tensor, a JAX array, ...), read in place when C-contiguous. The conversions of tensors
// between Python and the C API live in tensors.cpp.
#include <loom/loom.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensors.hpp"

namespace nb = nanobind;
using namespace loom::python;

namespace {

// A failed loom call: turned into the Python class registered for its code (loom._errors).
struct LoomFailure {
  int code;
  std::string message;
};

PyObject* g_error_classes = nullptr;  // dict code -> exception class, set by _set_error_classes

void check(loom_status_t* status) {
  if (!status) return;
  LoomFailure failure{static_cast<int>(loom_status_code(status)),
                      loom_status_message(status) ? loom_status_message(status) : ""};
  loom_status_free(status);
  throw failure;
}

std::string take_string(char* text) {
  std::string s = text ? text : "";
  loom_string_free(text);
  return s;
}

struct RuntimeDeleter {
  void operator()(loom_runtime_t* r) const { loom_runtime_destroy(r); }
};
using RuntimePtr = std::shared_ptr<loom_runtime_t>;

class Runtime {
 public:
  Runtime(const std::vector<std::string>& plugin_paths, bool use_env_path, bool use_default_paths,
          int log_level, bool isolate_plugin_probe, int allow_newer_opsets) {
    std::vector<const char*> paths;
    for (const auto& p : plugin_paths) paths.push_back(p.c_str());
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = paths.size();
    o.plugin_paths = paths.data();
    o.use_env_path = use_env_path;
    o.use_default_paths = use_default_paths;
    o.log_level = static_cast<loom_log_level_t>(log_level);
    o.isolate_plugin_probe = isolate_plugin_probe;
    o.allow_newer_opsets = allow_newer_opsets;
    loom_runtime_t* rt = nullptr;
    loom_status_t* status;
    {
      nb::gil_scoped_release release;
      status = loom_runtime_create(&o, &rt);
    }
    check(status);
    runtime_ = RuntimePtr(rt, RuntimeDeleter{});
  }

  nb::list plugins() const {
    nb::list out;
    size_t n = loom_runtime_num_plugins(runtime_.get());
    for (size_t i = 0; i < n; ++i) {
      loom_plugin_record_t r{};
      r.struct_size = sizeof r;
      check(loom_runtime_plugin(runtime_.get(), i, &r));
      nb::dict d;
      d["path"] = r.path ? r.path : "";
      d["loaded"] = r.loaded;
      d["explicit"] = r.explicit_request;
      d["name"] = r.name ? r.name : "";
      d["version"] = r.version ? r.version : "";
      d["abi_version"] = r.abi_version;
      d["registered"] = r.registered ? r.registered : "";
      d["error"] = r.error ? r.error : "";
      d["warnings"] = r.warnings ? r.warnings : "";
      out.append(d);
    }
    return out;
  }

  nb::list devices() const {
    nb::list out;
    loom_runtime_list_devices(
        runtime_.get(),
        [](void* user, const char* family, const loom_device_info_t* info) {
          nb::dict d;
          d["family"] = family ? family : "";
          d["name"] = info->name;
          d["description"] = info->description;
          d["available"] = info->available;
          d["unavailable_reason"] = info->unavailable_reason;
          d["host_memory"] = (info->flags & LOOM_DEVICE_HOST_MEMORY) != 0;
          static_cast<nb::list*>(user)->append(d);
        },
        &out);
    return out;
  }

  const RuntimePtr& get() const { return runtime_; }

 private:
  RuntimePtr runtime_;
};

// One graph input or output as the model declares it (copied: the model is freed once the
// session exists).
struct IoInfo {
  std::string name;
  int dtype = 0;
  int kind = 0;
  int rank = -1;
  std::vector<int64_t> dims;
  std::vector<std::optional<std::string>> dim_params;
};

IoInfo io_info(const loom_io_info_t& info, loom_value_kind_t kind) {
  IoInfo out;
  out.name = info.name ? info.name : "";
  out.dtype = static_cast<int>(info.dtype);
  out.kind = static_cast<int>(kind);
  out.rank = info.rank;
  for (int32_t d = 0; d < info.rank && d < LOOM_MAX_RANK; ++d) {
    out.dims.push_back(info.dims[d]);
    out.dim_params.push_back(info.dim_params[d] ? std::optional<std::string>(info.dim_params[d])
                                                : std::nullopt);
  }
  return out;
}

struct ModelDeleter {
  void operator()(loom_model_t* m) const { loom_model_free(m); }
};

// Where a model comes from: a file, or the application's bytes (loom_model_load_memory).
struct ModelSource {
  std::string path;                     // a file, when data is empty
  std::optional<Bytes> data;            // the bytes (borrowed: the core copies them)
  std::string format;                   // a format plugin's name for the bytes, "" to probe
  std::optional<std::string> base_dir;  // where the bytes' external data lives, if anywhere
};

loom_model_t* load_model(loom_runtime_t* runtime, const ModelSource& source) {
  loom_model_t* m = nullptr;
  loom_status_t* status;
  {
    nb::gil_scoped_release release;
    if (source.data)
      status = loom_model_load_memory(runtime, source.data->data(), source.data->shape(0),
                                      source.format.empty() ? nullptr : source.format.c_str(),
                                      source.base_dir ? source.base_dir->c_str() : nullptr, &m);
    else
      status = loom_model_load(runtime, source.path.c_str(), &m);
  }
  check(status);
  return m;
}

class Session {
 public:
  // The model comes from `data` (the bytes, with a format hint and a base directory for external
  // data) when given, else from the file `path`.
  Session(const Runtime& runtime, const std::string& path, std::optional<Bytes> data,
          const std::string& format, std::optional<std::string> base_dir,
          const std::string& devices, int threads, bool no_fallback,
          const std::string& device_options, const std::string& placements,
          const std::string& cost_model, const std::string& shape_overrides,
          int64_t plan_cache_entries, int64_t plan_cache_bytes, int64_t max_tensor_bytes,
          int64_t max_run_bytes, int64_t max_loop_iterations, int64_t deadline_ms,
          int32_t max_concurrent_runs)
      : runtime_(runtime.get()) {
    std::unique_ptr<loom_model_t, ModelDeleter> model(load_model(
        runtime_.get(), ModelSource{path, std::move(data), format, std::move(base_dir)}));
    for (size_t i = 0; i < loom_model_num_inputs(model.get()); ++i) {
      loom_io_info_t info{};
      info.struct_size = sizeof info;
      check(loom_model_input(model.get(), i, &info));
      inputs_.push_back(io_info(info, loom_model_input_kind(model.get(), i)));
    }
    for (size_t i = 0; i < loom_model_num_outputs(model.get()); ++i) {
      loom_io_info_t info{};
      info.struct_size = sizeof info;
      check(loom_model_output(model.get(), i, &info));
      outputs_.push_back(io_info(info, loom_model_output_kind(model.get(), i)));
    }
    format_ = loom_model_format(model.get()) ? loom_model_format(model.get()) : "";
    for (size_t i = 0; i < loom_model_num_metadata(model.get()); ++i) {
      const char* key = nullptr;
      const char* value = nullptr;
      loom_model_metadata(model.get(), i, &key, &value);
      metadata_.emplace_back(key ? key : "", value ? value : "");
    }

    loom_session_options_t so{};
    so.struct_size = sizeof so;
    so.devices = devices.c_str();
    so.threads = threads;
    so.no_fallback = no_fallback;
    so.device_options = device_options.c_str();
    so.placements = placements.c_str();
    so.cost_model = cost_model.c_str();
    so.shape_overrides = shape_overrides.c_str();
    so.plan_cache_entries = plan_cache_entries;
    so.plan_cache_bytes = plan_cache_bytes;
    so.max_tensor_bytes = max_tensor_bytes;
    so.max_run_bytes = max_run_bytes;
    so.max_loop_iterations = max_loop_iterations;
    so.deadline_ms = deadline_ms;
    so.max_concurrent_runs = max_concurrent_runs;
    loom_status_t* status;
    {
      nb::gil_scoped_release release;
      status = loom_session_create(runtime_.get(), model.get(), &so, &session_);
      // The session holds its own reference: without ours the weights its devices copied at
      // compile are not held twice.
      model.reset();
    }
    check(status);
  }
  ~Session() {
    if (session_) loom_session_destroy(session_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  const std::string& format() const { return format_; }
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

  // names[i] gets values[i] = (kind, has_value, elem_dtype, [(dtype, shape, data), ...]).
  // Returns one (kind, has_value, [(dtype, array or (shape, [bytes]))]) per output, in model
  // order.
  nb::list run(const std::vector<std::string>& names, const nb::list& values) {
    if (names.size() != values.size()) throw nb::value_error("internal: names and values differ");
    InputValues in;
    in.names = names;
    in.tensors.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      nb::tuple v = nb::cast<nb::tuple>(values[i]);
      if (v.size() != 4) throw nb::value_error("internal: a value is (kind, has_value, dtype, [])");
      nb::list tensors = nb::cast<nb::list>(v[3]);
      auto& ts = in.tensors[i];
      ts.resize(tensors.size());
      for (size_t k = 0; k < tensors.size(); ++k) fill_tensor(names[i], tensors[k], in, ts[k]);
      loom_value_t value{};
      value.struct_size = sizeof value;
      value.kind = static_cast<loom_value_kind_t>(nb::cast<int>(v[0]));
      value.has_value = nb::cast<bool>(v[1]);
      value.elem_dtype = static_cast<loom_dtype_t>(nb::cast<int>(v[2]));
      value.num_tensors = ts.size();
      value.tensors = ts.empty() ? nullptr : ts.data();
      in.values.push_back(value);
    }
    std::vector<const char*> cnames;
    for (const auto& n : in.names) cnames.push_back(n.c_str());
    std::vector<loom_value_t> outs(outputs_.size());
    for (auto& o : outs) o.struct_size = sizeof o;
    loom_status_t* status;
    {
      nb::gil_scoped_release release;
      status = loom_session_run_values(session_, cnames.size(), cnames.data(), in.values.data(),
                                       outs.size(), outs.data());
    }
    check(status);
    // Every output is owned from here on, even if handing one to NumPy fails.
    std::vector<ValuePtr> owned;
    for (auto& o : outs) owned.emplace_back(new loom_value_t(o), release_value);
    nb::list result;
    for (const ValuePtr& value : owned) {
      nb::list arrays;
      for (size_t k = 0; k < value->num_tensors; ++k) arrays.append(output_tensor(value, k));
      result.append(nb::make_tuple(static_cast<int>(value->kind), value->has_value, arrays));
    }
    return result;
  }

  // The fast path of InferenceSession.run (what most calls are): every input a C-contiguous
  // host array of a NumPy-native element type, every output a tensor of one (the caller checks
  // both). loom_session_run on the arrays' own buffers; the outputs are NumPy arrays owning
  // Loom's. No tuples per input, no value structs: the per-run cost stays near the C API's.
  nb::list run_tensors(const std::vector<std::string>& names, const nb::list& arrays) {
    using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
    const size_t n = names.size();
    if (arrays.size() != n) throw nb::value_error("internal: names and arrays differ");
    std::vector<Array> keep;
    keep.reserve(n);
    std::vector<loom_host_tensor_t> in(n);
    std::vector<const char*> cnames(n);
    for (size_t i = 0; i < n; ++i) {
      keep.push_back(nb::cast<Array>(arrays[i]));
      const Array& a = keep.back();
      loom_host_tensor_t& t = in[i];
      t.struct_size = sizeof t;
      t.dtype = loom_dtype(a.dtype());
      if (t.dtype == LOOM_DTYPE_UNDEFINED) throw nb::value_error("internal: not a fast-path array");
      if (a.ndim() > LOOM_MAX_RANK)
        throw nb::value_error(("input '" + names[i] + "' has rank " + std::to_string(a.ndim()) +
                               "; Loom takes at most " + std::to_string(LOOM_MAX_RANK))
                                  .c_str());
      t.rank = static_cast<int32_t>(a.ndim());
      for (size_t d = 0; d < a.ndim(); ++d) t.dims[d] = a.shape(d);
      t.data = const_cast<void*>(a.data());
      t.byte_size = a.nbytes();
      cnames[i] = names[i].c_str();
    }
    std::vector<loom_host_tensor_t> outs(outputs_.size());
    for (auto& o : outs) {
      o = loom_host_tensor_t{};
      o.struct_size = sizeof o;
    }
    loom_status_t* status;
    {
      nb::gil_scoped_release release;
      status = loom_session_run(session_, n, cnames.data(), in.data(), outs.size(), outs.data());
    }
    check(status);
    // Every output is owned from here on, even if handing one to NumPy fails.
    struct Release {
      std::vector<loom_host_tensor_t>& outs;
      ~Release() {
        for (auto& o : outs) loom_host_tensor_release(&o);
      }
    } release{outs};
    nb::list result;
    for (auto& o : outs) result.append(host_tensor_array(o));
    return result;
  }

  void cancel() { loom_session_cancel(session_); }

  std::string explain() {
    char* text = nullptr;
    check(loom_session_explain(session_, &text));
    return take_string(text);
  }
  std::string plan_json() {
    char* text = nullptr;
    check(loom_session_plan_json(session_, &text));
    return take_string(text);
  }
  // Profiling (loom_session_profile_*; docs/profiling.md).
  void profile_start(size_t max_events) { check(loom_session_profile_start(session_, max_events)); }
  void profile_stop() { loom_session_profile_stop(session_); }
  std::string profile_trace() {
    char* text = nullptr;
    check(loom_session_profile_trace(session_, &text));
    return take_string(text);
  }
  std::string profile_summary() {
    char* text = nullptr;
    check(loom_session_profile_summary(session_, &text));
    return take_string(text);
  }
  // The events as dicts, and how many were dropped past the event limit.
  nb::tuple profile_events() {
    nb::list events;
    const size_t dropped = loom_session_profile_events(
        session_,
        [](void* user, const loom_profile_event_t* e) {
          nb::dict d;
          d["category"] = e->category;
          d["name"] = e->name;
          d["op_type"] = e->op_type;
          d["device"] = e->device;
          d["nodes"] = e->nodes;
          d["shapes"] = e->shapes;
          d["detail"] = e->detail;
          d["run"] = e->run;
          d["thread"] = e->thread;
          d["start_ns"] = e->start_ns;
          d["end_ns"] = e->end_ns;
          d["counted"] = e->counted;
          static_cast<nb::list*>(user)->append(d);
        },
        &events);
    return nb::make_tuple(events, dropped);
  }
  std::string plan_dot() {
    char* text = nullptr;
    check(loom_session_plan_dot(session_, &text));
    return take_string(text);
  }
  size_t planned_peak_bytes() const { return loom_session_planned_peak_bytes(session_); }
  nb::dict plan_cache_stats() {
    loom_plan_cache_stats_t s{};
    s.struct_size = sizeof s;
    check(loom_session_plan_cache_stats(session_, &s));
    nb::dict d;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    d["capacity_entries"] = s.capacity_entries;
    d["capacity_bytes"] = s.capacity_bytes;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["evictions"] = s.evictions;
    return d;
  }

 private:
  RuntimePtr runtime_;  // outlives the session
  loom_session_t* session_ = nullptr;
  std::vector<IoInfo> inputs_, outputs_;
  std::string format_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace

NB_MODULE(_loom, m) {
  m.doc() = "Loom's C API (loom/loom.h) for the Python package loom; use `import loom`";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const LoomFailure& f) {
      PyObject* cls = nullptr;
      if (g_error_classes) {
        nb::object key = nb::int_(f.code);
        cls = PyDict_GetItem(g_error_classes, key.ptr());  // borrowed
      }
      PyErr_SetString(cls ? cls : PyExc_RuntimeError, f.message.c_str());
    }
  });

  m.def("_set_error_classes", [](nb::dict classes) {
    Py_XDECREF(g_error_classes);
    g_error_classes = classes.ptr();
    Py_INCREF(g_error_classes);  // kept for the life of the process
  });
  m.def("version", [] { return std::string(loom_version()); });
  m.def("dtype_name",
        [](int dtype) { return std::string(loom_dtype_name(static_cast<loom_dtype_t>(dtype))); });
  m.def("dtype_size", [](int dtype) { return loom_dtype_size(static_cast<loom_dtype_t>(dtype)); });

  nb::class_<Runtime>(m, "Runtime")
      .def(nb::init<const std::vector<std::string>&, bool, bool, int, bool, int>(),
           nb::arg("plugin_paths"), nb::arg("use_env_path"), nb::arg("use_default_paths"),
           nb::arg("log_level"), nb::arg("isolate_plugin_probe"), nb::arg("allow_newer_opsets"))
      .def("plugins", &Runtime::plugins)
      .def("devices", &Runtime::devices);

  nb::class_<IoInfo>(m, "IoInfo")
      .def_ro("name", &IoInfo::name)
      .def_ro("dtype", &IoInfo::dtype)
      .def_ro("kind", &IoInfo::kind)
      .def_ro("rank", &IoInfo::rank)
      .def_ro("dims", &IoInfo::dims)
      .def_ro("dim_params", &IoInfo::dim_params);

  m.def("dlpack_tensor", &dlpack_tensor, nb::arg("tensor"),
        "(Loom dtype, shape, 1-D uint8 array over the tensor's bytes) for a CPU DLPack tensor; "
        "the array reads the tensor in place when it is C-contiguous, else a contiguous copy");

  nb::class_<Session>(m, "Session")
      .def(nb::init<const Runtime&, const std::string&, std::optional<Bytes>, const std::string&,
                    std::optional<std::string>, const std::string&, int, bool, const std::string&,
                    const std::string&, const std::string&, const std::string&, int64_t, int64_t,
                    int64_t, int64_t, int64_t, int64_t, int32_t>(),
           nb::arg("runtime"), nb::arg("path"), nb::arg("data").none(), nb::arg("format"),
           nb::arg("base_dir").none(), nb::arg("devices"), nb::arg("threads"),
           nb::arg("no_fallback"), nb::arg("device_options"), nb::arg("placements"),
           nb::arg("cost_model"), nb::arg("shape_overrides"), nb::arg("plan_cache_entries"),
           nb::arg("plan_cache_bytes"), nb::arg("max_tensor_bytes"), nb::arg("max_run_bytes"),
           nb::arg("max_loop_iterations"), nb::arg("deadline_ms"), nb::arg("max_concurrent_runs"))
      .def("inputs", &Session::inputs)
      .def("outputs", &Session::outputs)
      .def("format", &Session::format)
      .def("metadata", &Session::metadata)
      .def("run", &Session::run, nb::arg("names"), nb::arg("values"))
      .def("run_tensors", &Session::run_tensors, nb::arg("names"), nb::arg("arrays"))
      .def("cancel", &Session::cancel)
      .def("explain", &Session::explain)
      .def("plan_json", &Session::plan_json)
      .def("plan_dot", &Session::plan_dot)
      .def("profile_start", &Session::profile_start, nb::arg("max_events"))
      .def("profile_stop", &Session::profile_stop)
      .def("profile_trace", &Session::profile_trace)
      .def("profile_summary", &Session::profile_summary)
      .def("profile_events", &Session::profile_events)
      .def("planned_peak_bytes", &Session::planned_peak_bytes)
      .def("plan_cache_stats", &Session::plan_cache_stats);
}
