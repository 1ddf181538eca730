// loom/loom.hpp -- header-only C++ wrapper of the public C API (loom/loom.h): RAII handles
// and exceptions. Everything here is inline over the C functions, so it adds no ABI.
#pragma once

#include <loom/loom.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace loom {

class Error : public std::runtime_error {
 public:
  Error(loom_status_code_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  loom_status_code_t code() const noexcept { return code_; }

 private:
  loom_status_code_t code_;
};

// Throws (and frees) an error status.
inline void check(loom_status_t* status) {
  if (!status) return;
  Error e(loom_status_code(status), loom_status_message(status));
  loom_status_free(status);
  throw e;
}

// An output tensor owned by the application.
class HostTensor {
 public:
  HostTensor() { t_.struct_size = sizeof t_; }
  ~HostTensor() { loom_host_tensor_release(&t_); }
  HostTensor(HostTensor&& o) noexcept : t_(o.t_) { o.t_.data = nullptr; }
  HostTensor& operator=(HostTensor&& o) noexcept {
    if (this != &o) {
      loom_host_tensor_release(&t_);
      t_ = o.t_;
      o.t_.data = nullptr;
    }
    return *this;
  }
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  loom_dtype_t dtype() const { return t_.dtype; }
  std::vector<int64_t> shape() const { return {t_.dims, t_.dims + t_.rank}; }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(t_.data);
  }
  size_t byte_size() const { return t_.byte_size; }
  loom_host_tensor_t* raw() { return &t_; }

 private:
  loom_host_tensor_t t_{};
};

class Runtime {
 public:
  // Default discovery: LOOM_PLUGIN_PATH, the install directory, the build tree; plus `plugins`.
  explicit Runtime(const std::vector<std::string>& plugins = {}, bool default_paths = true) {
    std::vector<const char*> paths;
    for (const std::string& p : plugins) paths.push_back(p.c_str());
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = paths.size();
    o.plugin_paths = paths.data();
    o.use_env_path = default_paths;
    o.use_default_paths = default_paths;
    o.log_level = LOOM_LOG_WARNING;
    loom_runtime_t* rt = nullptr;
    check(loom_runtime_create(&o, &rt));
    rt_.reset(rt);
  }
  loom_runtime_t* get() const { return rt_.get(); }

 private:
  struct Deleter {
    void operator()(loom_runtime_t* r) const { loom_runtime_destroy(r); }
  };
  std::unique_ptr<loom_runtime_t, Deleter> rt_;
};

class Model {
 public:
  Model(const Runtime& runtime, const std::string& path) {
    loom_model_t* m = nullptr;
    check(loom_model_load(runtime.get(), path.c_str(), &m));
    model_.reset(m);
  }
  loom_model_t* get() const { return model_.get(); }
  // Format-independent simplifications (loom_model_simplify).
  loom_simplify_report_t simplify(const Runtime& runtime) {
    loom_simplify_report_t report{};
    report.struct_size = sizeof report;
    check(loom_model_simplify(runtime.get(), get(), &report));
    return report;
  }
  // Writes the model with the named format plugin (loom_model_save), e.g. "loom".
  void save(const Runtime& runtime, const std::string& format, const std::string& path) const {
    check(loom_model_save(runtime.get(), get(), format.c_str(), path.c_str()));
  }
  size_t num_inputs() const { return loom_model_num_inputs(get()); }
  size_t num_outputs() const { return loom_model_num_outputs(get()); }
  loom_io_info_t input(size_t i) const {
    loom_io_info_t info{};
    info.struct_size = sizeof info;
    check(loom_model_input(get(), i, &info));
    return info;
  }
  loom_io_info_t output(size_t i) const {
    loom_io_info_t info{};
    info.struct_size = sizeof info;
    check(loom_model_output(get(), i, &info));
    return info;
  }

 private:
  struct Deleter {
    void operator()(loom_model_t* m) const { loom_model_free(m); }
  };
  std::unique_ptr<loom_model_t, Deleter> model_;
};

class Session {
 public:
  Session(const Runtime& runtime, const Model& model, const std::string& devices = "cpu",
          int threads = 0, bool no_fallback = false)
      : num_outputs_(model.num_outputs()) {
    loom_session_options_t o{};
    o.struct_size = sizeof o;
    o.devices = devices.c_str();
    o.threads = threads;
    o.no_fallback = no_fallback;
    loom_session_t* s = nullptr;
    check(loom_session_create(runtime.get(), model.get(), &o, &s));
    session_.reset(s);
  }
  // Every session option (placements, cost model, device options, ...).
  Session(const Runtime& runtime, const Model& model, const loom_session_options_t& options)
      : num_outputs_(model.num_outputs()) {
    loom_session_t* s = nullptr;
    check(loom_session_create(runtime.get(), model.get(), &options, &s));
    session_.reset(s);
  }

  // Inputs are borrowed for the call; outputs come back in the model's output order.
  std::vector<HostTensor> run(const std::vector<std::pair<std::string, loom_host_tensor_t>>& inputs) {
    std::vector<const char*> names;
    std::vector<loom_host_tensor_t> tensors;
    for (const auto& [name, t] : inputs) {
      names.push_back(name.c_str());
      tensors.push_back(t);
    }
    std::vector<HostTensor> outputs(num_outputs_);
    std::vector<loom_host_tensor_t> raw(num_outputs_);
    check(loom_session_run(session_.get(), names.size(), names.data(), tensors.data(), raw.size(),
                           raw.data()));
    for (size_t i = 0; i < raw.size(); ++i) *outputs[i].raw() = raw[i];
    return outputs;
  }

  std::string explain() const {
    char* text = nullptr;
    check(loom_session_explain(session_.get(), &text));
    std::string s = text;
    loom_string_free(text);
    return s;
  }

  // The plan as a Graphviz digraph (loom_session_plan_dot).
  std::string plan_dot() const {
    char* text = nullptr;
    check(loom_session_plan_dot(session_.get(), &text));
    std::string s = text;
    loom_string_free(text);
    return s;
  }

 private:
  struct Deleter {
    void operator()(loom_session_t* s) const { loom_session_destroy(s); }
  };
  std::unique_ptr<loom_session_t, Deleter> session_;
  size_t num_outputs_;
};

}  // namespace loom
