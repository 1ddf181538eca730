// Builds small ONNX models with the protobuf classes and loads them through the format's ABI
// entry points into a FakeBuilder.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "fake_builder.hpp"

namespace loom::onnx::testing {

// A dimension: a fixed extent or a symbolic name.
using Dim = std::variant<int64_t, std::string>;

// ir_version 8, default-domain opset 17, graph "main": x float32 [N,3] -> Relu -> y.
::onnx::ModelProto relu_model();

void set_tensor_type(::onnx::ValueInfoProto& v, const std::string& name, int32_t elem_type,
                     std::initializer_list<Dim> dims);
::onnx::ValueInfoProto& add_input(::onnx::GraphProto& g, const std::string& name, int32_t elem_type,
                                  std::initializer_list<Dim> dims);
::onnx::ValueInfoProto& add_output(::onnx::GraphProto& g, const std::string& name,
                                   int32_t elem_type, std::initializer_list<Dim> dims);
::onnx::NodeProto& add_node(::onnx::GraphProto& g, const std::string& op,
                            std::initializer_list<std::string> inputs,
                            std::initializer_list<std::string> outputs,
                            const std::string& name = "");
::onnx::TensorProto& add_initializer(::onnx::GraphProto& g, const std::string& name,
                                     int32_t data_type, std::initializer_list<int64_t> dims);

struct Loaded {
  Outcome outcome;
  std::unique_ptr<FakeBuilder> builder;
  RecordedGraph& graph() { return builder->graph(); }
  bool ok() const { return outcome.code == LOOM_OK; }
};

// Probes and loads through format_descriptor() (the path the core takes).
Loaded load_bytes(const std::string& bytes, const char* directory = nullptr);
Loaded load_model(const ::onnx::ModelProto& model, const char* directory = nullptr);

// A fresh directory under the test temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& bytes) const;

 private:
  std::filesystem::path path_;
};

}  // namespace loom::onnx::testing
