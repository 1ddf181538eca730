// Thin C++ ownership and error handling over the public C API (loom/loom.h), shared by
// infer-run and the conformance runner. Applications use nothing of the core but this API.
#pragma once

#include <loom/loom.h>

#include <loom_apps/host_tensor.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::apps {

// A failed loom_* call: the core's status code and its one-line message.
class ApiError : public std::runtime_error {
 public:
  ApiError(loom_status_code_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  loom_status_code_t code() const { return code_; }

 private:
  loom_status_code_t code_;
};

// Frees `status`; throws ApiError when it is an error.
void check(loom_status_t* status);

struct RuntimeDeleter {
  void operator()(loom_runtime_t* r) const { loom_runtime_destroy(r); }
};
struct ModelDeleter {
  void operator()(loom_model_t* m) const { loom_model_free(m); }
};
struct SessionDeleter {
  void operator()(loom_session_t* s) const { loom_session_destroy(s); }
};
using RuntimePtr = std::unique_ptr<loom_runtime_t, RuntimeDeleter>;
using ModelPtr = std::unique_ptr<loom_model_t, ModelDeleter>;
using SessionPtr = std::unique_ptr<loom_session_t, SessionDeleter>;

RuntimePtr create_runtime(const loom_runtime_options_t& options);
ModelPtr load_model(loom_runtime_t* runtime, const std::string& path);
SessionPtr create_session(loom_runtime_t* runtime, loom_model_t* model,
                          const loom_session_options_t& options);

std::vector<loom_plugin_record_t> plugin_records(const loom_runtime_t* runtime);
std::vector<loom_io_info_t> model_inputs(const loom_model_t* model);
std::vector<loom_io_info_t> model_outputs(const loom_model_t* model);

// Declared dims of an io as a vector (-1 = dynamic); empty with rank < 0 means unknown rank.
std::vector<int64_t> io_dims(const loom_io_info_t& info);

// Takes a string from the core (loom_session_explain / plan_json) and frees it.
std::string take_string(char* text);

// Runs the session on named host tensors and returns the outputs in model order.
// STRING inputs are passed as arrays of loom_string_t viewing the HostTensor's strings.
std::vector<HostTensor> run_session(loom_session_t* session, size_t num_outputs,
                                    const std::vector<std::string>& input_names,
                                    const std::vector<const HostTensor*>& inputs);

// What graph input/output `index` holds (loom_model_input_kind / loom_model_output_kind).
ValueKind model_input_kind(const loom_model_t* model, size_t index);
ValueKind model_output_kind(const loom_model_t* model, size_t index);

// Runs the session on named values of any kind (loom_session_run_values) and returns the
// outputs in model order.
std::vector<HostValue> run_session_values(loom_session_t* session, size_t num_outputs,
                                          const std::vector<std::string>& input_names,
                                          const std::vector<const HostValue*>& inputs);

}  // namespace loom::apps
