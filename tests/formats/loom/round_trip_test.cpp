// Round trips through the .loom format: every ONNX backend test model that loads is converted,
// read back and written again (the two files must be byte-identical, so nothing of the graph
// is lost or changed), and the converted model, simplified, must give exactly the outputs of
// its source on the cpu device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <loom_apps/tensor_proto.hpp>
#include <set>
#include <string>
#include <vector>

#include "loom_test_support.hpp"

namespace loom::loomfmt::testing {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> backend_test_models() {
  std::vector<fs::path> models;
  std::error_code ec;
  for (const char* group : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    fs::path dir = fs::path(LOOM_TEST_ONNX_TESTDATA_DIR) / group;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (fs::is_regular_file(entry.path() / "model.onnx", ec)) models.push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  return models;
}

std::vector<loom::apps::HostTensor> read_inputs(const fs::path& data_set) {
  std::vector<loom::apps::HostTensor> inputs;
  for (int i = 0;; ++i) {
    fs::path p = data_set / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    inputs.push_back(loom::apps::read_tensor_proto(p.string()).tensor);
  }
  return inputs;
}

// True when every input and output of `path` is a tensor: models with sequence or optional
// values need SequenceProto/OptionalProto test data and loom_session_run_values, which the
// conformance runner covers; here they are compared structurally only.
bool tensors_only(loom_runtime_t* rt, const std::string& path) {
  auto model = loom::apps::load_model(rt, path);
  for (size_t i = 0; i < loom_model_num_inputs(model.get()); ++i)
    if (loom_model_input_kind(model.get(), i) != LOOM_VALUE_KIND_TENSOR) return false;
  for (size_t i = 0; i < loom_model_num_outputs(model.get()); ++i)
    if (loom_model_output_kind(model.get(), i) != LOOM_VALUE_KIND_TENSOR) return false;
  return true;
}

// Outputs of `path` on the cpu device, or nothing when the model cannot run here.
bool try_run(loom_runtime_t* rt, const std::string& path,
             const std::vector<loom::apps::HostTensor>& inputs,
             std::vector<loom::apps::HostTensor>& outputs, std::string& error) {
  try {
    auto model = loom::apps::load_model(rt, path);
    outputs = run_cpu(rt, model.get(), inputs);
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

// True when the graph (or a subgraph) draws random numbers without a seed attribute: its
// outputs differ from run to run, yet two runs can agree by chance (a 10-element Bernoulli
// repeats about once in 60 runs), so a second run alone cannot tell.
bool draws_unseeded_random(const onnx::GraphProto& graph) {
  static const std::set<std::string> random_ops = {
      "Bernoulli",     "Dropout",          "Multinomial",      "RandomNormal",
      "RandomUniform", "RandomNormalLike", "RandomUniformLike"};
  for (const onnx::NodeProto& node : graph.node()) {
    bool seeded = false;
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "seed") seeded = true;
      if (attr.has_g() && draws_unseeded_random(attr.g())) return true;
      for (const onnx::GraphProto& g : attr.graphs())
        if (draws_unseeded_random(g)) return true;
    }
    // Dropout draws only in training mode, which needs its third input.
    const bool dropout_in_inference =
        node.op_type() == "Dropout" && (node.input_size() < 3 || node.input(2).empty());
    if (random_ops.count(node.op_type()) && !seeded && !dropout_in_inference) return true;
  }
  return false;
}

bool draws_unseeded_random(const fs::path& model_file) {
  onnx::ModelProto model;
  std::ifstream in(model_file, std::ios::binary);
  if (!model.ParseFromIstream(&in)) return true;  // unreadable here: do not compare outputs
  if (draws_unseeded_random(model.graph())) return true;
  for (const onnx::FunctionProto& f : model.functions()) {
    onnx::GraphProto body;
    *body.mutable_node() = f.node();
    if (draws_unseeded_random(body)) return true;
  }
  return false;
}

bool same_outputs(const std::vector<loom::apps::HostTensor>& a,
                  const std::vector<loom::apps::HostTensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!compare_exact(a[i], b[i]).empty()) return false;
  return true;
}

TEST(LoomRoundTrip, EveryBackendTestModel) {
  auto models = backend_test_models();
  if (models.empty())
    GTEST_SKIP() << "no ONNX backend test data at " << LOOM_TEST_ONNX_TESTDATA_DIR;
  auto rt = make_runtime();
  TempDir tmp;
  std::vector<std::string> failures;
  std::set<std::string> converted, compared;
  for (const fs::path& dir : models) {
    const std::string name = dir.filename().string();
    const std::string source = (dir / "model.onnx").string();
    const std::string first = (tmp / "first.loom").string();
    const std::string second = (tmp / "second.loom").string();
    const std::string simplified = (tmp / "simplified.loom").string();
    std::string err = convert(rt.get(), source, first, false);
    if (err.rfind("load:", 0) == 0) continue;  // the core cannot load the source: not ours
    if (!err.empty()) {
      failures.push_back(name + ": " + err);
      continue;
    }
    err = convert(rt.get(), first, second, false);
    if (!err.empty()) {
      failures.push_back(name + ": re-reading the .loom file: " + err);
      continue;
    }
    if (read_file(first) != read_file(second)) {
      failures.push_back(name + ": the .loom file changes when read and written again");
      continue;
    }
    converted.insert(name);

    fs::path data_set = dir / "test_data_set_0";
    if (!fs::is_directory(data_set) || draws_unseeded_random(source) ||
        !tensors_only(rt.get(), source))
      continue;
    std::vector<loom::apps::HostTensor> inputs = read_inputs(data_set), expected, actual;
    std::string run_error;
    if (!try_run(rt.get(), source, inputs, expected, run_error)) continue;  // not runnable here
    // Random draws inside an op (or one this check does not know) also show as two runs that
    // differ; such models are only compared structurally.
    std::vector<loom::apps::HostTensor> again;
    if (!try_run(rt.get(), source, inputs, again, run_error) || !same_outputs(expected, again))
      continue;
    err = convert(rt.get(), source, simplified, true);
    if (!err.empty()) {
      failures.push_back(name + ": simplified conversion: " + err);
      continue;
    }
    if (!try_run(rt.get(), simplified, inputs, actual, run_error)) {
      failures.push_back(name + ": the source runs but the converted model fails: " + run_error);
      continue;
    }
    if (actual.size() != expected.size()) {
      failures.push_back(name + ": output count differs");
      continue;
    }
    for (size_t i = 0; i < actual.size(); ++i) {
      std::string diff = compare_exact(expected[i], actual[i]);
      if (!diff.empty()) failures.push_back(name + ": output " + std::to_string(i) + ": " + diff);
    }
    compared.insert(name);
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
  // The suite must have exercised what the format has to carry: nested graphs (If, Loop,
  // Scan), string attributes, and many models overall.
  for (const char* must : {"test_if", "test_loop11", "test_scan9_sum",
                           "test_strnormalizer_export_monday_casesensintive_lower"})
    EXPECT_TRUE(converted.count(must)) << must << " was not converted";
  EXPECT_GT(converted.size(), 500u);
  EXPECT_GT(compared.size(), 300u);
  std::printf("converted %zu backend test models, compared outputs of %zu\n", converted.size(),
              compared.size());
}

}  // namespace
}  // namespace loom::loomfmt::testing
