#include "tflite_test_support.hpp"

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "tflite_subset_generated.h"

namespace loom::tflite::testing {
namespace fb = loom::tflite_schema;

bool have_onednn() {
  return std::string(LOOM_TEST_ONEDNN_PLUGIN).size() > 0;
}

std::filesystem::path models_dir() {
  return LOOM_TEST_TFLITE_MODELS;
}

loom::apps::RuntimePtr make_runtime(bool with_onednn) {
  std::vector<const char*> paths = {LOOM_TEST_TFLITE_PLUGIN, LOOM_TEST_CPU_PLUGIN};
  if (with_onednn && have_onednn()) paths.push_back(LOOM_TEST_ONEDNN_PLUGIN);
  // The custom-operator kernels (tflite.custom), for the models with MediaPipe operators; ""
  // when the build has them off (LOOM_WITH_TFLITE_MOBILE_KERNELS).
  if (*LOOM_TEST_TFLITE_MOBILE_PLUGIN) paths.push_back(LOOM_TEST_TFLITE_MOBILE_PLUGIN);
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = paths.size();
  o.plugin_paths = paths.data();
  o.log_level = LOOM_LOG_ERROR;
  return loom::apps::create_runtime(o);
}

std::string load_error(loom_runtime_t* runtime, const std::filesystem::path& path) {
  loom_model_t* model = nullptr;
  loom_status_t* status = loom_model_load(runtime, path.c_str(), &model);
  if (!status) {
    loom_model_free(model);
    return "";
  }
  std::string text = std::to_string(loom_status_code(status)) + ": " + loom_status_message(status);
  loom_status_free(status);
  return text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("loom-tflite-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<loom::apps::HostTensor> run(loom_runtime_t* runtime, loom_model_t* model,
                                        const std::string& devices,
                                        const std::vector<loom::apps::HostTensor>& inputs) {
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = devices.c_str();
  so.threads = 1;
  auto session = loom::apps::create_session(runtime, model, so);
  auto infos = loom::apps::model_inputs(model);
  if (infos.size() != inputs.size())
    throw std::runtime_error("the model has " + std::to_string(infos.size()) + " inputs, " +
                             std::to_string(inputs.size()) + " given");
  std::vector<std::string> names;
  std::vector<const loom::apps::HostTensor*> values;
  for (size_t i = 0; i < infos.size(); ++i) {
    names.push_back(infos[i].name);
    values.push_back(&inputs[i]);
  }
  return loom::apps::run_session(session.get(), loom_model_num_outputs(model), names, values);
}

TestModel relu_model() {
  TestModel m;
  m.tensors = {{{1, 4}, 0, 0, "x", {}, {}, 0}, {{1, 4}, 0, 0, "y", {}, {}, 0}};
  m.operators = {{19, "", {0}, {1}}};
  m.inputs = {0};
  m.outputs = {1};
  return m;
}

std::string serialize(const TestModel& model) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const auto& data : model.buffers)
    buffers.push_back(fb::CreateBuffer(b, data.empty() ? 0 : b.CreateVector(data)));
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const auto& t : model.tensors) {
    flatbuffers::Offset<fb::QuantizationParameters> quant = 0;
    if (!t.scales.empty())
      quant = fb::CreateQuantizationParameters(
          b, 0, 0, b.CreateVector(t.scales), b.CreateVector(t.zero_points),
          fb::QuantizationDetails::NONE, 0, t.quantized_dimension);
    tensors.push_back(fb::CreateTensor(b, b.CreateVector(t.shape),
                                       static_cast<fb::TensorType>(t.type), t.buffer,
                                       b.CreateString(t.name), quant));
  }
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes;
  std::vector<flatbuffers::Offset<fb::Operator>> operators;
  for (const auto& op : model.operators) {
    codes.push_back(fb::CreateOperatorCode(
        b, static_cast<int8_t>(std::min(op.builtin_code, 127)),
        op.custom_code.empty() ? 0 : b.CreateString(op.custom_code), 1, op.builtin_code));
    operators.push_back(fb::CreateOperator(b, static_cast<uint32_t>(codes.size() - 1),
                                           b.CreateVector(op.inputs), b.CreateVector(op.outputs)));
  }
  auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(model.inputs),
                                     b.CreateVector(model.outputs), b.CreateVector(operators),
                                     b.CreateString("main"));
  auto root = fb::CreateModel(b, model.version, b.CreateVector(codes),
                              b.CreateVector(std::vector{subgraph}), b.CreateString("test"),
                              b.CreateVector(buffers));
  fb::FinishModelBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

}  // namespace loom::tflite::testing
