// Integration: every model of the ONNX backend test data through the public C API
// (loom_runtime_create with the build's plugin directory, loom_model_load). The core's graph
// must match what protobuf reads from the file (nodes, feedable inputs, outputs, initializers),
// or the load must fail with LOOM_ERROR_UNSUPPORTED and a message naming what is missing.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <cstdio>
#include <map>
#include <string>

#include "testdata_expectations.hpp"

namespace loom::onnx::testing {
namespace {

namespace fs = std::filesystem;

struct RuntimeDeleter {
  void operator()(loom_runtime_t* r) const { loom_runtime_destroy(r); }
};
using Runtime = std::unique_ptr<loom_runtime_t, RuntimeDeleter>;

std::string take_message(loom_status_t* s) {
  std::string m = s ? loom_status_message(s) : "";
  loom_status_free(s);
  return m;
}

void quiet_log(void*, loom_log_level_t, const char*, const char*) {}

Runtime make_runtime() {
  const char* paths[] = {LOOM_TEST_PLUGIN_DIR};
  loom_runtime_options_t options{};
  options.struct_size = sizeof options;
  options.num_plugin_paths = 1;
  options.plugin_paths = paths;
  options.use_env_path = false;
  options.use_default_paths = false;
  options.log_level = LOOM_LOG_ERROR;
  options.log_fn = quiet_log;
  loom_runtime_t* runtime = nullptr;
  loom_status_t* s = loom_runtime_create(&options, &runtime);
  EXPECT_EQ(s, nullptr) << take_message(s);
  return Runtime(runtime);
}

TEST(OnnxTestdataLoad, EveryModelThroughThePublicApi) {
  const std::vector<fs::path> models = find_testdata_models(LOOM_ONNX_TESTDATA_DIR);
  if (models.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  Runtime runtime = make_runtime();
  ASSERT_TRUE(runtime);

  bool onnx_loaded = false;
  for (size_t i = 0; i < loom_runtime_num_plugins(runtime.get()); ++i) {
    loom_plugin_record_t rec{};
    rec.struct_size = sizeof rec;
    ASSERT_EQ(loom_runtime_plugin(runtime.get(), i, &rec), nullptr);
    if (std::string(rec.name) == "onnx") {
      EXPECT_TRUE(rec.loaded) << rec.error;
      onnx_loaded = rec.loaded;
    }
  }
  ASSERT_TRUE(onnx_loaded) << "loom_onnx.so did not load from " << LOOM_TEST_PLUGIN_DIR;

  int loaded = 0, refused_by_plugin = 0, refused_by_core = 0;
  std::map<std::string, int> core_reasons;  // first words of the core's refusals, for the log
  for (const fs::path& path : models) {
    SCOPED_TRACE(path.string());
    ::onnx::ModelProto reference;
    ASSERT_TRUE(reference.ParseFromString(read_file(path)));
    const ::onnx::GraphProto& g = reference.graph();
    const std::string plugin_refusal = expected_refusal(g);

    loom_model_t* model = nullptr;
    loom_status_t* status = loom_model_load(runtime.get(), path.c_str(), &model);
    if (status) {
      loom_status_code_t code = loom_status_code(status);
      std::string message = take_message(status);
      // Loom refuses only what it does not support, and says what that is.
      EXPECT_EQ(code, LOOM_ERROR_UNSUPPORTED) << message;
      EXPECT_FALSE(message.empty());
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      if (!plugin_refusal.empty()) {
        EXPECT_NE(message.find(plugin_refusal.substr(0, plugin_refusal.find('('))),
                  std::string::npos)
            << message;
        ++refused_by_plugin;
      } else {
        ++refused_by_core;
        // The core prefixes "'<path>': "; group by what follows.
        size_t at = message.find("': ");
        ++core_reasons[at == std::string::npos ? message : message.substr(at + 3, 90)];
      }
      continue;
    }
    EXPECT_TRUE(plugin_refusal.empty()) << "loaded although it has " << plugin_refusal;
    EXPECT_STREQ(loom_model_format(model), "onnx");
    EXPECT_EQ(loom_model_num_nodes(model), static_cast<size_t>(g.node_size()));
    EXPECT_EQ(loom_model_num_initializers(model),
              static_cast<size_t>(g.initializer_size() + g.sparse_initializer_size()));
    const std::vector<std::string> inputs = feedable_inputs(g);
    EXPECT_EQ(loom_model_num_inputs(model), inputs.size());
    for (size_t i = 0; i < inputs.size() && i < loom_model_num_inputs(model); ++i) {
      loom_io_info_t info{};
      info.struct_size = sizeof info;
      ASSERT_EQ(loom_model_input(model, i, &info), nullptr);
      EXPECT_EQ(info.name, inputs[i]);
    }
    EXPECT_EQ(loom_model_num_outputs(model), static_cast<size_t>(g.output_size()));
    for (int i = 0; i < g.output_size() && static_cast<size_t>(i) < loom_model_num_outputs(model);
         ++i) {
      loom_io_info_t info{};
      info.struct_size = sizeof info;
      ASSERT_EQ(loom_model_output(model, static_cast<size_t>(i), &info), nullptr);
      EXPECT_EQ(info.name, g.output(i).name());
    }
    loom_model_free(model);
    ++loaded;
  }
  std::printf(
      "onnx_testdata_load: %zu models: %d loaded, %d refused by the onnx plugin, %d "
      "refused by the core\n",
      models.size(), loaded, refused_by_plugin, refused_by_core);
  for (const auto& [reason, n] : core_reasons) std::printf("  %4d x %s\n", n, reason.c_str());
  EXPECT_GT(loaded, static_cast<int>(models.size()) / 2);
}

TEST(OnnxTestdataLoad, TorchModuleFunctionsThroughThePublicApi) {
  const fs::path dir = LOOM_ONNX_EXPORTED_DIR;
  if (dir.empty() || !fs::exists(dir / "functions.onnx"))
    GTEST_SKIP() << "exporter models were not generated (needs /usr/bin/python3 with torch)";
  Runtime runtime = make_runtime();
  ASSERT_TRUE(runtime);
  size_t nodes[2] = {0, 0};
  const char* files[2] = {"plain.onnx", "functions.onnx"};
  for (int i = 0; i < 2; ++i) {
    loom_model_t* model = nullptr;
    loom_status_t* s = loom_model_load(runtime.get(), (dir / files[i]).c_str(), &model);
    ASSERT_EQ(s, nullptr) << files[i] << ": " << take_message(s);
    nodes[i] = loom_model_num_nodes(model);
    EXPECT_EQ(loom_model_num_inputs(model), 1u);
    loom_model_free(model);
  }
  EXPECT_EQ(nodes[1], nodes[0]);
  EXPECT_GT(nodes[0], 20u);
}

}  // namespace
}  // namespace loom::onnx::testing
