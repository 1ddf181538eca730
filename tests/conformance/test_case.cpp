#include "test_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <loom_apps/api.hpp>
#include <loom_apps/tensor_proto.hpp>
#include <map>
#include <stdexcept>

#include "tensor_compare.hpp"

namespace loom::conformance {
namespace fs = std::filesystem;
namespace {

// Numbered files "<prefix><N>.pb" of a data set, in N order.
std::vector<std::string> numbered_files(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (size_t k = 0;; ++k) {
    fs::path p = fs::path(dir) / fmt::format("{}{}.pb", prefix, k);
    if (!fs::exists(p)) break;
    files.push_back(p.string());
  }
  return files;
}

// A failure inside one data set, with the data set named.
struct CaseFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Maps the data set's input files to model inputs: by the TensorProto names when every file
// names an input, otherwise by position in the model's input order.
std::vector<std::string> input_names(const std::vector<loom::apps::NamedTensor>& files,
                                     const std::vector<loom_io_info_t>& model_inputs) {
  std::vector<std::string> names;
  bool by_name = !files.empty();
  for (const auto& f : files) {
    bool known = std::any_of(model_inputs.begin(), model_inputs.end(),
                             [&](const loom_io_info_t& in) { return f.name == in.name; });
    by_name = by_name && known;
  }
  if (by_name) {
    for (const auto& f : files) names.push_back(f.name);
    return names;
  }
  if (files.size() > model_inputs.size())
    throw CaseFailure(fmt::format("the test data has {} inputs, the model declares {}",
                                  files.size(), model_inputs.size()));
  for (size_t k = 0; k < files.size(); ++k) names.emplace_back(model_inputs[k].name);
  return names;
}

// NumPy has no bfloat16, so the ONNX test data stores bfloat16 tensors as uint16 holding the
// bit patterns. Where the model declares bfloat16, read such a tensor as what it is.
void bfloat16_from_bits(loom::apps::HostTensor& t, const loom_io_info_t& declared) {
  if (declared.dtype == LOOM_DTYPE_BFLOAT16 && t.dtype == LOOM_DTYPE_UINT16)
    t.dtype = LOOM_DTYPE_BFLOAT16;
}

void run_data_set(loom_session_t* session, const std::string& dir,
                  const std::vector<loom_io_info_t>& model_inputs,
                  const std::vector<loom_io_info_t>& model_outputs) {
  std::vector<loom::apps::NamedTensor> inputs, expected;
  for (const auto& file : numbered_files(dir, "input_"))
    inputs.push_back(loom::apps::read_tensor_proto(file));
  for (const auto& file : numbered_files(dir, "output_"))
    expected.push_back(loom::apps::read_tensor_proto(file));
  if (expected.size() > model_outputs.size())
    throw CaseFailure(fmt::format("the test data has {} outputs, the model declares {}",
                                  expected.size(), model_outputs.size()));

  std::vector<std::string> names = input_names(inputs, model_inputs);
  for (size_t k = 0; k < inputs.size(); ++k)
    for (const auto& info : model_inputs)
      if (names[k] == info.name) bfloat16_from_bits(inputs[k].tensor, info);
  for (size_t k = 0; k < expected.size(); ++k)
    bfloat16_from_bits(expected[k].tensor, model_outputs[k]);
  std::vector<const loom::apps::HostTensor*> tensors;
  for (const auto& in : inputs) tensors.push_back(&in.tensor);
  std::vector<loom::apps::HostTensor> actual;
  try {
    actual = loom::apps::run_session(session, model_outputs.size(), names, tensors);
  } catch (const loom::apps::ApiError& e) {
    throw CaseFailure(fmt::format("run: {}", e.what()));
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    if (auto diff = compare_tensors(actual[k], expected[k].tensor))
      throw CaseFailure(fmt::format("output '{}': {}", model_outputs[k].name, *diff));
  }
}

// Where the model holds sequences or optionals (test data as SequenceProto/OptionalProto):
// every file is read as the kind of the model input/output at its position, and the run goes
// through loom_session_run_values.
void run_value_data_set(loom_session_t* session, const std::string& dir,
                        const std::vector<loom_io_info_t>& model_inputs,
                        const std::vector<loom_io_info_t>& model_outputs,
                        const std::vector<loom::apps::ValueKind>& input_kinds,
                        const std::vector<loom::apps::ValueKind>& output_kinds) {
  std::vector<loom::apps::NamedValue> inputs, expected;
  std::vector<std::string> input_files = numbered_files(dir, "input_"),
                           output_files = numbered_files(dir, "output_");
  if (input_files.size() > model_inputs.size())
    throw CaseFailure(fmt::format("the test data has {} inputs, the model declares {}",
                                  input_files.size(), model_inputs.size()));
  if (output_files.size() > model_outputs.size())
    throw CaseFailure(fmt::format("the test data has {} outputs, the model declares {}",
                                  output_files.size(), model_outputs.size()));
  for (size_t k = 0; k < input_files.size(); ++k)
    inputs.push_back(loom::apps::read_value_proto(input_files[k], input_kinds[k]));
  for (size_t k = 0; k < output_files.size(); ++k)
    expected.push_back(loom::apps::read_value_proto(output_files[k], output_kinds[k]));
  std::vector<std::string> names;
  std::vector<const loom::apps::HostValue*> values;
  for (size_t k = 0; k < inputs.size(); ++k) {
    names.emplace_back(model_inputs[k].name);
    values.push_back(&inputs[k].value);
  }
  std::vector<loom::apps::HostValue> actual;
  try {
    actual = loom::apps::run_session_values(session, model_outputs.size(), names, values);
  } catch (const loom::apps::ApiError& e) {
    throw CaseFailure(fmt::format("run: {}", e.what()));
  }
  for (size_t k = 0; k < expected.size(); ++k)
    if (auto diff = compare_values(actual[k], expected[k].value))
      throw CaseFailure(fmt::format("output '{}': {}", model_outputs[k].name, *diff));
}

}  // namespace

std::vector<TestCase> discover_test_cases(const std::vector<std::string>& roots) {
  std::vector<TestCase> cases;
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      throw std::runtime_error(fmt::format("test root {} is not a directory", root));
    std::string suite = fs::path(root).lexically_normal().filename().string();
    if (suite.empty()) suite = fs::path(root).lexically_normal().parent_path().filename().string();
    for (const auto& entry : fs::directory_iterator(root)) {
      if (!entry.is_directory() || !fs::exists(entry.path() / "model.onnx")) continue;
      TestCase test{suite, entry.path().filename().string(), entry.path().string(), {}};
      std::vector<std::pair<int, std::string>> sets;
      for (const auto& sub : fs::directory_iterator(entry.path())) {
        std::string name = sub.path().filename().string();
        if (sub.is_directory() && name.rfind("test_data_set_", 0) == 0)
          sets.emplace_back(std::atoi(name.c_str() + 14), sub.path().string());
      }
      std::sort(sets.begin(), sets.end());
      for (auto& s : sets) test.data_sets.push_back(std::move(s.second));
      cases.push_back(std::move(test));
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const TestCase& a, const TestCase& b) { return a.id() < b.id(); });
  return cases;
}

bool is_unclaimed_node_error(loom_status_code_t code, const std::string& message) {
  return code == LOOM_ERROR_UNSUPPORTED &&
         message.find("nodes are supported by none of the devices") != std::string::npos;
}

CaseResult run_test_case(loom_runtime_t* runtime, const TestCase& test,
                         const RunSettings& settings) {
  if (test.data_sets.empty()) return {Outcome::kSkip, "no test_data_set directories"};
  std::string stage = "load";
  try {
    loom::apps::ModelPtr model = loom::apps::load_model(runtime, test.dir + "/model.onnx");
    auto inputs = loom::apps::model_inputs(model.get());
    auto outputs = loom::apps::model_outputs(model.get());
    stage = "session";
    loom_session_options_t options{};
    options.struct_size = sizeof(options);
    options.devices = settings.devices.c_str();
    options.threads = settings.threads;
    options.no_fallback = settings.no_fallback;
    options.device_options = "";
    loom::apps::SessionPtr session;
    try {
      session = loom::apps::create_session(runtime, model.get(), options);
    } catch (const loom::apps::ApiError& e) {
      if (settings.no_fallback && settings.skip_unclaimed &&
          is_unclaimed_node_error(e.code(), e.what()))
        return {Outcome::kSkip, e.what()};
      throw;
    }
    std::vector<loom::apps::ValueKind> input_kinds, output_kinds;
    bool tensors_only = true;
    for (size_t k = 0; k < inputs.size(); ++k)
      input_kinds.push_back(loom::apps::model_input_kind(model.get(), k));
    for (size_t k = 0; k < outputs.size(); ++k)
      output_kinds.push_back(loom::apps::model_output_kind(model.get(), k));
    for (auto kind : input_kinds)
      tensors_only = tensors_only && kind == loom::apps::ValueKind::kTensor;
    for (auto kind : output_kinds)
      tensors_only = tensors_only && kind == loom::apps::ValueKind::kTensor;
    for (const auto& dir : test.data_sets) {
      stage = fs::path(dir).filename().string();
      try {
        if (tensors_only)
          run_data_set(session.get(), dir, inputs, outputs);
        else
          run_value_data_set(session.get(), dir, inputs, outputs, input_kinds, output_kinds);
      } catch (const loom::apps::ApiError& e) {
        // A model with symbolic inputs is placed for each run's shapes, so nodes no device
        // claims may only show at the first run.
        if (settings.no_fallback && settings.skip_unclaimed &&
            is_unclaimed_node_error(e.code(), e.what()))
          return {Outcome::kSkip, e.what()};
        throw;
      }
    }
    return {Outcome::kPass, ""};
  } catch (const std::exception& e) {
    // Paths inside the test directory are noise in a one-line reason.
    std::string reason = fmt::format("{}: {}", stage, e.what());
    for (size_t at; (at = reason.find(test.dir + "/")) != std::string::npos;)
      reason.erase(at, test.dir.size() + 1);
    return {Outcome::kFail, reason};
  }
}

}  // namespace loom::conformance
