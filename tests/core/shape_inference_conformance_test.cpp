// Shape inference against the ONNX backend node tests: for every single-node test in
// libonnx-testdata, inference must agree with the expected outputs' types and shapes.
#include "shape_inference_test_util.hpp"

namespace {

// ---- conformance with the ONNX backend node tests ---------------------------------------

template <typename T>
void append_as(std::vector<char>& bytes, double x) {
  T v = static_cast<T>(x);
  const char* p = reinterpret_cast<const char*>(&v);
  bytes.insert(bytes.end(), p, p + sizeof v);
}

// Encodes `values` in `dtype`; false for types the dump does not carry values of.
bool encode(loom_dtype_t dtype, const std::vector<double>& values, std::vector<char>& bytes) {
  for (double x : values) {
    switch (dtype) {
      case LOOM_DTYPE_FLOAT32:
        append_as<float>(bytes, x);
        break;
      case LOOM_DTYPE_FLOAT64:
        append_as<double>(bytes, x);
        break;
      case LOOM_DTYPE_INT64:
        append_as<int64_t>(bytes, x);
        break;
      case LOOM_DTYPE_INT32:
        append_as<int32_t>(bytes, x);
        break;
      case LOOM_DTYPE_INT16:
        append_as<int16_t>(bytes, x);
        break;
      case LOOM_DTYPE_INT8:
        append_as<int8_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT8:
        append_as<uint8_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT16:
        append_as<uint16_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT32:
        append_as<uint32_t>(bytes, x);
        break;
      case LOOM_DTYPE_UINT64:
        append_as<uint64_t>(bytes, x);
        break;
      default:
        return false;
    }
  }
  return true;
}

Dims read_dims(std::istream& in) {
  size_t rank = 0;
  in >> rank;
  Dims dims(rank);
  for (int64_t& d : dims) in >> d;
  return dims;
}

// Runs the inference of every single-node ONNX backend test (as dumped by
// core/src/schemas/dump_onnx_node_tests.py from Debian's libonnx-testdata) and compares it
// with the shapes of the expected outputs: no result may contradict them and no valid node may
// be rejected; extents that depend on data (NonZero, Unique...) may stay unknown.
TEST(ShapeInferenceConformance, MatchesOnnxNodeTests) {
  const char* data = "/usr/share/libonnx-testdata/data/node";
  std::filesystem::path tool =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "core" / "src" /
      "schemas" / "dump_onnx_node_tests.py";
  if (!std::filesystem::exists(data) || !std::filesystem::exists(tool) ||
      !std::filesystem::exists("/usr/bin/python3"))
    GTEST_SKIP() << "needs libonnx-testdata, python3-onnx and the source tree";
  std::string command = "/usr/bin/python3 " + tool.string() + " " + data + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string text;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  if (pclose(pipe) != 0 || text.empty())
    GTEST_SKIP() << "python3-onnx could not read the test data";

  std::istringstream lines(text);
  std::string line, name;
  std::optional<TestNode> node;
  std::vector<std::optional<std::pair<loom_dtype_t, Dims>>> expected;
  int cases = 0, exact = 0, inferable = 0;
  std::vector<std::string> problems;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "TEST") {
      in >> name;
      expected.clear();
    } else if (key == "OP") {
      std::string op, domain;
      int64_t opset;
      in >> op >> domain >> opset;
      node.emplace(op, opset, domain == "-" ? "" : domain);
    } else if (key == "IN") {
      std::string type;
      in >> type;
      if (type == "-") {
        node->omitted();
        continue;
      }
      auto dtype = static_cast<loom_dtype_t>(std::stoi(type));
      Dims dims = read_dims(in);
      std::string marker;
      std::vector<double> values;
      if (in >> marker && marker == "CONST") {
        size_t count;
        in >> count;
        values.resize(count);
        for (double& v : values) in >> v;
        std::vector<char> bytes;
        if (encode(dtype, values, bytes)) {
          node->const_input(dtype, bytes.data(), bytes.size(), dims);
          continue;
        }
      }
      node->input(dtype, dims);
    } else if (key == "ATTR") {
      std::string attr, type;
      in >> attr >> type;
      if (type == "INT") {
        int64_t i;
        in >> i;
        node->attr(attr.c_str(), i);
      } else if (type == "FLOAT") {
        float f;
        in >> f;
        node->attr(attr.c_str(), f);
      } else if (type == "STRING") {
        std::string rest;
        std::getline(in, rest);
        node->attr(attr.c_str(), rest.empty() ? "" : rest.substr(1).c_str());
      } else if (type == "INTS") {
        node->attr_ints(attr.c_str(), read_dims(in));
      } else if (type == "FLOATS") {
        size_t n;
        in >> n;
        std::vector<float> floats(n);
        for (float& f : floats) in >> f;
        node->attr_floats(attr.c_str(), std::move(floats));
      } else if (type == "STRINGS") {
        size_t n;
        in >> n;
        node->attr_strings(attr.c_str(), n);
      } else if (type == "TENSOR") {
        int dtype;
        in >> dtype;
        node->attr_tensor(attr.c_str(), static_cast<loom_dtype_t>(dtype), read_dims(in));
      }
    } else if (key == "OUT") {
      std::string type;
      in >> type;
      if (type == "-")
        expected.emplace_back();
      else
        expected.emplace_back(std::pair{static_cast<loom_dtype_t>(std::stoi(type)), read_dims(in)});
    } else if (key == "END") {
      ++cases;
      node->outputs(expected.size());
      std::vector<loom_inferred_t> got;
      try {
        got = node->infer();
      } catch (const loom::sdk::Error& e) {
        problems.push_back(name + ": rejected: " + e.what());
        continue;
      } catch (const std::runtime_error&) {
        continue;  // no schema or no inference for this op (training and text ops)
      }
      ++inferable;
      bool complete = true;
      for (size_t i = 0; i < expected.size(); ++i) {
        if (!expected[i]) continue;
        const auto& [dtype, dims] = *expected[i];
        const loom_inferred_t& o = got[i];
        if (o.dtype != LOOM_DTYPE_UNDEFINED && o.dtype != dtype)
          problems.push_back(name + ": output " + std::to_string(i) + " dtype " +
                             std::to_string(o.dtype) + ", expected " + std::to_string(dtype));
        complete = complete && o.dtype != LOOM_DTYPE_UNDEFINED && o.rank >= 0;
        if (o.rank < 0) continue;
        Dims inferred = dims_of(o);
        bool agrees = inferred.size() == dims.size();
        for (size_t k = 0; agrees && k < dims.size(); ++k) {
          agrees = inferred[k] == U || inferred[k] == dims[k];
          complete = complete && inferred[k] != U;
        }
        if (!agrees)
          problems.push_back(name + ": output " + std::to_string(i) + " inferred " +
                             testing::PrintToString(inferred) + ", expected " +
                             testing::PrintToString(dims));
      }
      if (complete) ++exact;
    }
  }
  for (const std::string& p : problems) ADD_FAILURE() << p;
  EXPECT_GT(cases, 500) << "the dump lost most of the test data";
  // Everything but data-dependent extents is known statically.
  EXPECT_GE(exact * 100, inferable * 95) << exact << " of " << inferable << " cases fully inferred";
}

}  // namespace
