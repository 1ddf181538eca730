#include "testdata_expectations.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "value_types.hpp"

namespace loom::onnx::testing {

namespace fs = std::filesystem;

std::vector<fs::path> find_testdata_models(const fs::path& root) {
  std::vector<fs::path> models;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return models;
  for (const auto& suite : fs::directory_iterator(root))
    for (const auto& test : fs::directory_iterator(suite.path()))
      if (fs::exists(test.path() / "model.onnx")) models.push_back(test.path() / "model.onnx");
  std::sort(models.begin(), models.end());
  return models;
}

namespace {

// Tensors, seq(tensor), optional(tensor) and optional(seq(tensor)) are what graph inputs and
// outputs may be (plugin ABI 1.2).
bool is_loadable_io_type(const ::onnx::TypeProto& type) {
  const ::onnx::TypeProto* t = &type;
  if (t->has_optional_type()) t = &t->optional_type().elem_type();
  if (t->has_sequence_type()) t = &t->sequence_type().elem_type();
  return t->has_tensor_type();
}

}  // namespace

std::string expected_refusal(const ::onnx::GraphProto& g) {
  for (const auto* list : {&g.input(), &g.output()})
    for (const auto& v : *list)
      if (v.has_type() && !is_loadable_io_type(v.type())) return describe_type(v.type());
  for (const auto& node : g.node())
    for (const auto& a : node.attribute()) {
      using A = ::onnx::AttributeProto;
      if (a.type() == A::TENSORS || a.type() == A::GRAPHS || a.type() == A::SPARSE_TENSORS ||
          a.type() == A::TYPE_PROTO || a.type() == A::TYPE_PROTOS)
        return "has type " + A::AttributeType_Name(a.type());
      if (a.has_g())
        if (std::string why = expected_refusal(a.g()); !why.empty()) return why;
    }
  return "";
}

std::vector<std::string> feedable_inputs(const ::onnx::GraphProto& g) {
  std::set<std::string> constants;
  for (const auto& t : g.initializer()) constants.insert(t.name());
  for (const auto& s : g.sparse_initializer()) constants.insert(s.values().name());
  std::vector<std::string> names;
  for (const auto& v : g.input())
    if (!constants.count(v.name())) names.push_back(v.name());
  return names;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace loom::onnx::testing
