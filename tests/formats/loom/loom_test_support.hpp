// Helpers of the .loom format tests: a runtime with the onnx, loom and cpu plugins, small ONNX
// models written with the protobuf classes, files, and running a model on the cpu device.
#pragma once

#include <loom/loom.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <loom_apps/api.hpp>
#include <loom_apps/host_tensor.hpp>
#include <string>
#include <vector>

namespace loom::loomfmt::testing {

// Runtime with exactly the given plugin files (default: onnx, loom and cpu of this build).
loom::apps::RuntimePtr make_runtime(const std::vector<std::string>& plugins = {});
std::string onnx_plugin();
std::string loom_plugin();
std::string cpu_plugin();

// Status of a C API call as "CODE: message" ("" for success); frees the status.
std::string take_error(loom_status_t* status);

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

// Loads `in`, optionally simplifies, saves as .loom at `out`; returns the error or "".
std::string convert(loom_runtime_t* runtime, const std::string& in, const std::string& out,
                    bool simplify);

// Runs `model` on the cpu device with inputs in model input order.
std::vector<loom::apps::HostTensor> run_cpu(loom_runtime_t* runtime, loom_model_t* model,
                                            const std::vector<loom::apps::HostTensor>& inputs);

// Byte-exact equality of two tensors (NaNs with equal payload compare equal); "" or a message.
std::string compare_exact(const loom::apps::HostTensor& a, const loom::apps::HostTensor& b);

// ONNX building blocks (opset 17 unless set otherwise).
::onnx::ModelProto new_model(int64_t opset = 17);
void add_value(::onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
               const std::vector<int64_t>& dims);
::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs);
void add_float_initializer(::onnx::GraphProto* g, const std::string& name,
                           const std::vector<int64_t>& dims, const std::vector<float>& values);
void save_onnx(const ::onnx::ModelProto& model, const std::filesystem::path& path);

loom::apps::HostTensor float_tensor(const std::vector<int64_t>& dims,
                                    const std::vector<float>& values);

}  // namespace loom::loomfmt::testing
