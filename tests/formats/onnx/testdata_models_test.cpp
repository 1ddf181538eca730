// Every model of the ONNX backend test data (Debian libonnx-testdata: files written by the
// ONNX exporters' own test generators and by torch.onnx) loads into the fake builder with the
// same structure protobuf reads, or is refused for a feature Loom lacks, which the test
// confirms independently.
#include <gtest/gtest.h>

#include <filesystem>

#include "model_helpers.hpp"
#include "testdata_expectations.hpp"

namespace loom::onnx::testing {
namespace {

namespace fs = std::filesystem;

size_t count_nodes(const RecordedGraph& g) {
  size_t n = g.nodes.size();
  for (const auto& node : g.nodes)
    for (const RecordedAttr& a : node->attrs)
      if (a.graph) n += count_nodes(*a.graph);
  return n;
}

size_t count_nodes(const ::onnx::GraphProto& g) {
  size_t n = static_cast<size_t>(g.node_size());
  for (const auto& node : g.node())
    for (const auto& a : node.attribute()) {
      if (a.has_g()) n += count_nodes(a.g());
    }
  return n;
}

TEST(OnnxTestdata, EveryModelLoadsWithTheStructureProtobufReads) {
  const std::vector<fs::path> models = find_testdata_models(LOOM_ONNX_TESTDATA_DIR);
  if (models.empty())
    GTEST_SKIP() << "libonnx-testdata is not installed at " << LOOM_ONNX_TESTDATA_DIR;
  int loaded = 0, refused = 0;
  for (const fs::path& path : models) {
    const std::string bytes = read_file(path);
    ::onnx::ModelProto reference;
    ASSERT_TRUE(reference.ParseFromString(bytes)) << path;
    const std::string why = expected_refusal(reference.graph());

    Loaded r = load_bytes(bytes, path.parent_path().c_str());
    SCOPED_TRACE(path.string());
    if (!why.empty()) {
      EXPECT_EQ(r.outcome.code, LOOM_ERROR_UNSUPPORTED) << r.outcome.message;
      EXPECT_NE(r.outcome.message.find(why.substr(0, why.find('('))), std::string::npos)
          << r.outcome.message << " (expected to name " << why << ")";
      ++refused;
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.outcome.message;
    const ::onnx::GraphProto& g = reference.graph();
    RecordedGraph& out = r.graph();
    EXPECT_EQ(out.nodes.size(), static_cast<size_t>(g.node_size()));
    EXPECT_EQ(count_nodes(out), count_nodes(g));
    ASSERT_EQ(out.inputs.size(), static_cast<size_t>(g.input_size()));
    for (int i = 0; i < g.input_size(); ++i) EXPECT_EQ(out.inputs[i].name, g.input(i).name());
    ASSERT_EQ(out.outputs.size(), static_cast<size_t>(g.output_size()));
    for (int i = 0; i < g.output_size(); ++i) EXPECT_EQ(out.outputs[i].name, g.output(i).name());
    EXPECT_EQ(out.initializers.size(),
              static_cast<size_t>(g.initializer_size() + g.sparse_initializer_size()));
    EXPECT_EQ(out.opsets.size(), static_cast<size_t>(reference.opset_import_size()));
    ++loaded;
  }
  std::printf("onnx testdata: %d models, %d loaded, %d refused as unsupported\n",
              static_cast<int>(models.size()), loaded, refused);
  EXPECT_GT(loaded, static_cast<int>(models.size()) * 9 / 10);
}

}  // namespace
}  // namespace loom::onnx::testing
