// Hostile and broken files: each ends in a one-line error with the right code, never a crash,
// hang or huge allocation.
#include <gtest/gtest.h>

#include <random>

#include "model_helpers.hpp"
#include "model_parser.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;

std::string serialized(const ::onnx::ModelProto& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  return s;
}

TEST(OnnxMalformed, EmptyFile) {
  Loaded r = load_bytes("");
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "the model file is empty");
}

TEST(OnnxMalformed, TruncatedAtEveryLength) {
  ::onnx::ModelProto m = relu_model();
  TP& w = add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {16});
  w.set_raw_data(std::string(64, '\1'));
  const std::string full = serialized(m);
  int refused = 0;
  for (size_t len = 1; len < full.size(); ++len) {
    Loaded r = load_bytes(full.substr(0, len));
    ASSERT_NE(r.outcome.code, LOOM_OK) << "truncated to " << len << " bytes loaded";
    EXPECT_EQ(r.outcome.message.find('\n'), std::string::npos);
    if (r.outcome.code == LOOM_ERROR_INVALID_MODEL) ++refused;
  }
  EXPECT_EQ(refused, static_cast<int>(full.size()) - 1);
  Loaded cut = load_bytes(full.substr(0, full.size() - 10));
  EXPECT_NE(cut.outcome.message.find("remain (file truncated?)"), std::string::npos)
      << cut.outcome.message;
}

TEST(OnnxMalformed, RandomBytes) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 500; ++i) {
    std::string bytes(1 + rng() % 512, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    Loaded r = load_bytes(bytes);
    EXPECT_NE(r.outcome.code, LOOM_OK) << "random input " << i << " loaded";
    EXPECT_FALSE(r.outcome.message.empty());
  }
  EXPECT_EQ(live_statuses(), 0);
}

TEST(OnnxMalformed, WrongWireTypeForKnownField) {
  // Field 7 (graph) as a varint, field 1 (ir_version) as a length-delimited string.
  Loaded r = load_bytes(std::string("\x08\x08\x38\x05", 4));
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "not a valid ONNX model (protobuf ModelProto): field 'graph' at byte 2 has wire type "
            "0, expected 2");
  Loaded s =
      load_bytes(std::string("\x0a\x03"
                             "abc",
                             5));
  EXPECT_EQ(s.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(s.outcome.message.find("field 'ir_version' at byte 0 has wire type 2"),
            std::string::npos);
}

TEST(OnnxMalformed, WrongTypeInsideNestedMessage) {
  // A TensorProto whose dims field (int64) also holds a string: protobuf reads its bytes as
  // packed varints, so the shape no longer matches the data and the load must say so.
  ::onnx::ModelProto m = relu_model();
  TP& w = add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {2});
  w.add_float_data(1.f);
  w.add_float_data(2.f);
  w.mutable_unknown_fields()->AddLengthDelimited(1, "not a dim");  // dims = field 1
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL) << r.outcome.message;
}

TEST(OnnxMalformed, MissingIrVersionOrGraph) {
  ::onnx::ModelProto no_ir = relu_model();
  no_ir.clear_ir_version();
  Loaded r = load_model(no_ir);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("no ir_version"), std::string::npos);

  ::onnx::ModelProto no_graph = relu_model();
  no_graph.clear_graph();
  Loaded g = load_model(no_graph);
  EXPECT_EQ(g.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(g.outcome.message, "the model has no graph");

  ::onnx::ModelProto no_opset = relu_model();
  no_opset.clear_opset_import();
  Loaded o = load_model(no_opset);
  EXPECT_EQ(o.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(o.outcome.message, "the model imports no opset (opset_import is empty)");
}

TEST(OnnxMalformed, AbsurdDimensionsAreRefusedBeforeAllocating) {
  ::onnx::ModelProto m = relu_model();
  TP& w =
      add_initializer(*m.mutable_graph(), "huge", TP::FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  w.set_raw_data("abcd");
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'huge': shape 1099511627776x1099511627776 has too many elements");

  // Fits int64 elements but not bytes.
  ::onnx::ModelProto m2 = relu_model();
  add_initializer(*m2.mutable_graph(), "big", TP::DOUBLE, {int64_t{1} << 61}).set_raw_data("x");
  Loaded r2 = load_model(m2);
  EXPECT_EQ(r2.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r2.outcome.message.find("needs more bytes than addressable"), std::string::npos)
      << r2.outcome.message;

  // Plausible element count but no data behind it: compared before anything is allocated.
  ::onnx::ModelProto m3 = relu_model();
  add_initializer(*m3.mutable_graph(), "lie", TP::FLOAT, {1 << 30}).add_float_data(1.f);
  Loaded r3 = load_model(m3);
  EXPECT_EQ(r3.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r3.outcome.message,
            "initializer 'lie': float_data has 1 values but shape 1073741824 float32 needs "
            "1073741824");
}

TEST(OnnxMalformed, TooManyDimensions) {
  ::onnx::ModelProto m = relu_model();
  TP& w = add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {});
  for (int i = 0; i < 17; ++i) w.add_dims(1);
  w.add_float_data(1.f);
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "initializer 'w': rank 17 exceeds Loom's maximum of 16");
}

// A chain of If nodes, each holding the next as its then_branch, `depth` graphs deep.
::onnx::ModelProto nested_ifs(int depth) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::GraphProto* g = m.mutable_graph();
  for (int i = 0; i < depth; ++i) {
    ::onnx::NodeProto* n = g->add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(i));
    n->add_input("cond");
    n->add_output("r" + std::to_string(i));
    ::onnx::AttributeProto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(::onnx::AttributeProto::GRAPH);
    g = a->mutable_g();
    g->set_name("level" + std::to_string(i + 1));
  }
  return m;
}

TEST(OnnxMalformed, NestingAtTheLimitLoads) {
  Loaded r = load_model(nested_ifs(kMaxGraphDepth));
  ASSERT_TRUE(r.ok()) << r.outcome.message;
}

TEST(OnnxMalformed, GraphNestingBombIsRefusedClearly) {
  Loaded r = load_model(nested_ifs(kMaxGraphDepth + 1));
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("graph attributes are nested more than 64 levels deep"),
            std::string::npos)
      << r.outcome.message;
  EXPECT_LT(r.outcome.message.size(), 400u);
}

TEST(OnnxMalformed, ProtobufRecursionBombIsRefused) {
  // 5000 nested graphs: far past the parser's recursion limit, so protobuf itself refuses it.
  std::string bytes;
  {
    ::onnx::ModelProto m = nested_ifs(5000);
    ASSERT_TRUE(m.SerializeToString(&bytes));
  }
  Loaded r = load_bytes(bytes);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("nested more than"), std::string::npos) << r.outcome.message;
}

TEST(OnnxMalformed, NamesAreEscapedInMessages) {
  ::onnx::ModelProto m = relu_model();
  add_initializer(*m.mutable_graph(), "evil\nname", TP::FLOAT, {2}).add_float_data(1.f);
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message.find('\n'), std::string::npos);
  EXPECT_NE(r.outcome.message.find("'evil\\x0aname'"), std::string::npos) << r.outcome.message;
}

TEST(OnnxMalformed, UnnamedValuesAreRefused) {
  ::onnx::ModelProto m = relu_model();
  add_initializer(*m.mutable_graph(), "", TP::FLOAT, {1}).add_float_data(1.f);
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "initializer #0 has no name");

  ::onnx::ModelProto m2 = relu_model();
  m2.mutable_graph()->mutable_node(0)->clear_op_type();
  Loaded r2 = load_model(m2);
  EXPECT_EQ(r2.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r2.outcome.message, "node 'relu' (?): op_type is empty");
}

}  // namespace
}  // namespace loom::onnx::testing
