// Models written by the real exporters (torch.onnx, onnx.save_model with external data), made
// at build time by export_reference_models.py when /usr/bin/python3 has torch and onnx.
#include <gtest/gtest.h>

#include <filesystem>

#include "model_helpers.hpp"
#include "testdata_expectations.hpp"

namespace loom::onnx::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = LOOM_ONNX_EXPORTED_DIR;

Loaded load_file(const fs::path& path) {
  return load_bytes(read_file(path), path.parent_path().c_str());
}

#define REQUIRE_EXPORTED_MODELS()                                                          \
  if (kDir.empty() || !fs::exists(kDir / "plain.onnx"))                                    \
  GTEST_SKIP() << "exporter models were not generated (needs /usr/bin/python3 with torch " \
                  "and onnx at configure time)"

TEST(OnnxExporters, TorchModuleFunctionsInlineToThePlainExport) {
  REQUIRE_EXPORTED_MODELS();
  Loaded plain = load_file(kDir / "plain.onnx");
  Loaded functions = load_file(kDir / "functions.onnx");
  ASSERT_TRUE(plain.ok()) << plain.outcome.message;
  ASSERT_TRUE(functions.ok()) << functions.outcome.message;
  const auto& a = plain.graph().nodes;
  const auto& b = functions.graph().nodes;
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i]->op_type, a[i]->op_type) << "node " << i;
    EXPECT_EQ(b[i]->domain, "") << "node " << i << " still calls a function";
    EXPECT_EQ(b[i]->inputs.size(), a[i]->inputs.size()) << "node " << i;
    EXPECT_EQ(b[i]->attrs.size(), a[i]->attrs.size()) << "node " << i << " " << a[i]->op_type;
  }
  EXPECT_EQ(functions.graph().initializers.size(), plain.graph().initializers.size());
  EXPECT_EQ(functions.graph().outputs[0].name, "y");
  EXPECT_EQ(functions.graph().inputs[0].dim_params[0], "batch");
}

TEST(OnnxExporters, ExternalDataSavedByOnnxMatchesEmbeddedWeights) {
  REQUIRE_EXPORTED_MODELS();
  Loaded plain = load_file(kDir / "plain.onnx");
  Loaded external = load_file(kDir / "external" / "model.onnx");
  ASSERT_TRUE(plain.ok()) << plain.outcome.message;
  ASSERT_TRUE(external.ok()) << external.outcome.message;
  ASSERT_EQ(external.graph().initializers.size(), plain.graph().initializers.size());
  ASSERT_FALSE(plain.graph().initializers.empty());
  for (const RecordedTensor& t : plain.graph().initializers) {
    const RecordedTensor* e = external.graph().initializer(t.name);
    ASSERT_NE(e, nullptr) << t.name;
    EXPECT_EQ(e->dtype, t.dtype) << t.name;
    EXPECT_EQ(e->dims, t.dims) << t.name;
    EXPECT_EQ(e->bytes, t.bytes) << t.name;
  }
}

}  // namespace
}  // namespace loom::onnx::testing
