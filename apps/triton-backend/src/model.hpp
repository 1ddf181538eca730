// The backend's state (one Loom runtime for every model) and a model's state: its completed and
// checked configuration, the Loom model loaded from the repository, and the session options its
// instances use.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "json.hpp"
#include "triton_api.h"

namespace loom::triton {

// Created by TRITONBACKEND_Initialize, destroyed by TRITONBACKEND_Finalize (after every model).
struct BackendState {
  loom_runtime_t* runtime = nullptr;
  // max_batch_size given to a model whose config sets none and lists no tensors, when every
  // input and output of the model has a dynamic first dimension (--backend-config=
  // loom,default-max-batch-size=N; 0 turns the completion of max_batch_size off).
  int64_t default_max_batch_size = 4;

  ~BackendState();
};

// One input or output as the model configuration states it.
struct TensorSpec {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  TRITONSERVER_DataType triton_dtype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> dims;  // without the batch dimension when max_batch_size > 0
  // The shape the backend and the model see: reshape.shape when the configuration has one
  // (Triton reshapes inputs before the backend and outputs after it), otherwise dims.
  std::vector<int64_t> model_dims;
  size_t model_index = 0;  // its index among the Loom model's inputs or outputs
};

class ModelState {
 public:
  // Reads the configuration, loads the model file, completes the configuration from the model
  // when Triton allows it (reporting it with TRITONBACKEND_ModelSetConfig) and checks it against
  // the model. Throws BackendError with the reason, which Triton shows as the model's.
  ModelState(TRITONBACKEND_Model* triton_model, BackendState& backend);
  ~ModelState();
  ModelState(const ModelState&) = delete;
  ModelState& operator=(const ModelState&) = delete;

  const std::string& name() const { return name_; }
  int64_t max_batch_size() const { return max_batch_size_; }
  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  size_t num_model_outputs() const { return num_model_outputs_; }
  const std::vector<std::string>& model_output_names() const { return model_output_names_; }
  const TensorSpec* find_input(std::string_view name) const;

  // The session every instance runs on, made by the first instance: as many runs at once as the
  // configuration has instances (max_concurrent_runs), `threads` split among them.
  loom_session_t* session();

 private:
  void read_parameters(const Json& config);
  std::string find_model_file(const Json& config) const;
  bool complete_config(Json& config) const;  // true when it changed the configuration
  void check_config(const Json& config);

  TRITONBACKEND_Model* triton_model_;
  BackendState& backend_;
  std::string name_;
  uint64_t version_ = 0;
  std::string directory_;   // the model's directory in the repository
  std::string model_path_;  // the model file loaded
  struct ModelFree {
    void operator()(loom_model_t* model) const { loom_model_free(model); }
  };
  std::unique_ptr<loom_model_t, ModelFree> model_;  // freed also when the constructor throws
  int64_t max_batch_size_ = 0;
  std::vector<TensorSpec> inputs_;  // in the configuration's order
  std::vector<TensorSpec> outputs_;
  size_t num_model_outputs_ = 0;
  std::vector<std::string> model_output_names_;
  // Session options from the configuration's parameters.
  std::string devices_ = "cpu";
  int32_t threads_ = 0;
  std::string device_options_;
  int64_t instances_ = 1;  // the instance_group counts added up
  std::mutex session_mutex_;
  loom_session_t* session_ = nullptr;
};

}  // namespace loom::triton
