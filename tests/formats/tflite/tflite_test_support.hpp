// Helpers of the tflite format tests: a runtime with the tflite and cpu (optionally onednn)
// plugins, files, running a model, and a small builder of (possibly malformed) .tflite files.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <filesystem>
#include <loom_apps/api.hpp>
#include <loom_apps/host_tensor.hpp>
#include <string>
#include <vector>

namespace loom::tflite::testing {

// Runtime with the tflite and cpu plugins of the build, plus onednn when `with_onednn` and the
// build has it.
loom::apps::RuntimePtr make_runtime(bool with_onednn = false);
bool have_onednn();
std::filesystem::path models_dir();

// "CODE: message" of loading `path` ("" when it loads).
std::string load_error(loom_runtime_t* runtime, const std::filesystem::path& path);

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& bytes);

// A fresh directory, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Runs `model` with `devices` on its inputs (in the model's input order), returns the outputs.
std::vector<loom::apps::HostTensor> run(loom_runtime_t* runtime, loom_model_t* model,
                                        const std::string& devices,
                                        const std::vector<loom::apps::HostTensor>& inputs);

// ---- a tiny model description, serialized with the schema subset's generated C++ ----------

struct TestTensor {
  std::vector<int32_t> shape;
  int8_t type = 0;      // TFLite TensorType (0 = FLOAT32)
  uint32_t buffer = 0;  // index into TestModel::buffers (0 = none)
  std::string name;
  std::vector<float> scales;  // quantization, empty = none
  std::vector<int64_t> zero_points;
  int32_t quantized_dimension = 0;
};

struct TestOperator {
  int32_t builtin_code = 19;  // RELU
  std::string custom_code;    // with builtin_code 32 (CUSTOM)
  std::vector<int32_t> inputs, outputs;
};

struct TestModel {
  std::vector<TestTensor> tensors;
  std::vector<std::vector<uint8_t>> buffers = {{}};  // buffer 0: the empty sentinel
  std::vector<TestOperator> operators;
  std::vector<int32_t> inputs, outputs;
  uint32_t version = 3;
};

// input [1, 4] float -> RELU -> output [1, 4]; tests break one thing at a time.
TestModel relu_model();
std::string serialize(const TestModel& model);

}  // namespace loom::tflite::testing
