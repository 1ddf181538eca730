// What the ONNX backend test data should do in Loom, judged from the file with protobuf alone
// (independently of the plugin's own code paths).
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <vector>

namespace loom::onnx::testing {

// Every <suite>/<test>/model.onnx under `root`, sorted; empty if `root` does not exist.
std::vector<std::filesystem::path> find_testdata_models(const std::filesystem::path& root);

// Why Loom must refuse the graph ("seq(tensor(float32))", "attribute type TENSORS"), or "" if
// it holds only what Loom represents.
std::string expected_refusal(const ::onnx::GraphProto& graph);

// Graph inputs that are not also initializers: what an application feeds.
std::vector<std::string> feedable_inputs(const ::onnx::GraphProto& graph);

std::string read_file(const std::filesystem::path& path);

}  // namespace loom::onnx::testing
