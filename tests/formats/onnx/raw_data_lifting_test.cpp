// The parser leaves the main graph's initializer raw_data in the file bytes instead of copying
// it into the ModelProto (so a model's weights are resident once while it loads). These tests
// check that what it reads that way is exactly what protobuf reads from the whole file, on
// exporters' layouts and on wire forms protobuf accepts but exporters never write.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "model_helpers.hpp"
#include "model_parser.hpp"
#include "wire_scan.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// A length-delimited field, spelled out on the wire.
std::string field(uint32_t number, const std::string& payload) {
  std::string out;
  put_varint(out, (uint64_t{number} << 3) | 2);
  put_varint(out, payload.size());
  return out + payload;
}

// `count` floats whose bytes differ from tensor to tensor.
std::string float_bytes(size_t count, float seed) {
  std::string s(count * sizeof(float), '\0');
  for (size_t i = 0; i < count; ++i) {
    float v = seed + static_cast<float>(i);
    std::memcpy(s.data() + i * sizeof(float), &v, sizeof v);
  }
  return s;
}

constexpr size_t kBig = 4096;  // floats: raw_data dominates the small test graph

// relu_model with a big raw_data initializer "w", a float_data one "f", an empty "e" and a
// Constant node whose tensor attribute carries raw_data (which stays in the proto).
::onnx::ModelProto mixed_model() {
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  add_initializer(*g, "w", TP::FLOAT, {64, 64}).set_raw_data(float_bytes(kBig, 1));
  TP& f = add_initializer(*g, "f", TP::FLOAT, {2});
  f.add_float_data(0.5f);
  f.add_float_data(-2.f);
  add_initializer(*g, "e", TP::FLOAT, {0}).set_raw_data("");
  auto& c = add_node(*g, "Constant", {}, {"c"});
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::FLOAT);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->set_raw_data(float_bytes(1, 9));
  return m;
}

// Parses `bytes` both ways and checks they agree: the lifted parse equals protobuf's parse with
// the main graph's raw_data moved out, and each lifted span holds protobuf's raw_data.
void expect_lifting_agrees(const std::string& bytes) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  ::onnx::ModelProto reference;
  ASSERT_TRUE(reference.ParseFromString(bytes));
  ::onnx::ModelProto lifted_model;
  std::vector<RawDataSpan> lifted;
  parse_model(data, bytes.size(), lifted_model, &lifted);
  ASSERT_EQ(lifted.size(), static_cast<size_t>(reference.graph().initializer_size()))
      << "the raw_data was not lifted (or not for every initializer)";
  for (int i = 0; i < reference.graph().initializer_size(); ++i) {
    TP& t = *reference.mutable_graph()->mutable_initializer(i);
    SCOPED_TRACE("initializer #" + std::to_string(i) + " " + t.name());
    EXPECT_EQ(lifted[i].has_value(), t.has_raw_data());
    if (lifted[i]) {
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(lifted[i]->data()), lifted[i]->size()),
                t.raw_data());
      EXPECT_GE(lifted[i]->data(), data);
      EXPECT_LE(lifted[i]->data() + lifted[i]->size(), data + bytes.size());
    }
    t.clear_raw_data();
  }
  EXPECT_EQ(lifted_model.SerializeAsString(), reference.SerializeAsString());
}

TEST(OnnxRawDataLifting, ExporterLayoutAgreesWithProtobuf) {
  expect_lifting_agrees(mixed_model().SerializeAsString());
}

TEST(OnnxRawDataLifting, LoadedInitializersAreTheFileBytes) {
  ::onnx::ModelProto m = mixed_model();
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* w = r.graph().initializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(std::string(w->bytes.begin(), w->bytes.end()), float_bytes(kBig, 1));
  EXPECT_EQ(r.graph().initializer("f")->as<float>(), (std::vector<float>{0.5f, -2.f}));
  ASSERT_NE(r.graph().initializer("e"), nullptr);
  EXPECT_TRUE(r.graph().initializer("e")->bytes.empty());
}

TEST(OnnxRawDataLifting, SmallWeightsStayInTheProto) {
  // When raw_data is not most of the file, a stripped copy would cost more than it saves.
  std::string bytes = relu_model().SerializeAsString();
  ::onnx::ModelProto m;
  std::vector<RawDataSpan> lifted;
  parse_model(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), m, &lifted);
  EXPECT_TRUE(lifted.empty());
}

TEST(OnnxRawDataLifting, RepeatedRawDataKeepsTheLast) {
  // protobuf keeps the last occurrence of a singular field; so must the lifted parse.
  ::onnx::ModelProto m = relu_model();
  TP t;
  t.set_name("w");
  t.set_data_type(TP::FLOAT);
  t.add_dims(static_cast<int64_t>(kBig));
  std::string tensor =
      t.SerializeAsString() + field(9, float_bytes(kBig, 100)) + field(9, float_bytes(kBig, 200));
  std::string graph = m.graph().SerializeAsString() + field(5, tensor);
  m.clear_graph();
  std::string bytes = m.SerializeAsString() + field(7, graph);
  expect_lifting_agrees(bytes);
  Loaded r = load_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* w = r.graph().initializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(std::string(w->bytes.begin(), w->bytes.end()), float_bytes(kBig, 200));
}

TEST(OnnxRawDataLifting, SplitGraphFieldsMerge) {
  // Two graph fields merge into one graph: the initializers of both, in file order.
  ::onnx::ModelProto m = relu_model();
  ::onnx::GraphProto second;
  add_initializer(second, "w2", TP::FLOAT, {static_cast<int64_t>(kBig)})
      .set_raw_data(float_bytes(kBig, 2));
  add_initializer(*m.mutable_graph(), "w1", TP::FLOAT, {static_cast<int64_t>(kBig)})
      .set_raw_data(float_bytes(kBig, 1));
  std::string bytes = m.SerializeAsString() + field(7, second.SerializeAsString());
  expect_lifting_agrees(bytes);
  Loaded r = load_bytes(bytes);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  ASSERT_NE(r.graph().initializer("w1"), nullptr);
  ASSERT_NE(r.graph().initializer("w2"), nullptr);
  const auto& w2 = r.graph().initializer("w2")->bytes;
  EXPECT_EQ(std::string(w2.begin(), w2.end()), float_bytes(kBig, 2));
}

TEST(OnnxRawDataLifting, RawDataWithTheWrongWireTypeIsNotRawData) {
  // Field 9 as a varint is an unknown field to protobuf, not raw_data: the tensor has no data.
  ::onnx::ModelProto m = relu_model();
  TP t;
  t.set_name("w");
  t.set_data_type(TP::FLOAT);
  t.add_dims(static_cast<int64_t>(kBig));
  std::string tensor = t.SerializeAsString() + std::string("\x48\x01", 2);  // field 9, varint 1
  add_initializer(*m.mutable_graph(), "big", TP::FLOAT, {static_cast<int64_t>(kBig)})
      .set_raw_data(float_bytes(kBig, 3));
  std::string graph = m.graph().SerializeAsString() + field(5, tensor);
  m.clear_graph();
  std::string bytes = m.SerializeAsString() + field(7, graph);
  expect_lifting_agrees(bytes);
  Loaded r = load_bytes(bytes);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("holds no data"), std::string::npos) << r.outcome.message;
}

TEST(OnnxRawDataLifting, WrongSizeIsStillNamed) {
  ::onnx::ModelProto m = relu_model();
  add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {static_cast<int64_t>(kBig + 1)})
      .set_raw_data(float_bytes(kBig, 1));
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("raw_data has " + std::to_string(kBig * 4) + " bytes"),
            std::string::npos)
      << r.outcome.message;
}

TEST(OnnxRawDataLifting, TruncatedWeightsGetTheWireDiagnosis) {
  std::string bytes = mixed_model().SerializeAsString();
  bytes.resize(bytes.size() / 2);  // inside w's raw_data
  EXPECT_FALSE(strip_initializer_raw_data(reinterpret_cast<const uint8_t*>(bytes.data()),
                                          bytes.size(), false));
  Loaded r = load_bytes(bytes);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("field 'graph'"), std::string::npos) << r.outcome.message;
  EXPECT_NE(r.outcome.message.find("truncated"), std::string::npos) << r.outcome.message;
}

TEST(OnnxRawDataLifting, SurveyCountsWithoutCopying) {
  std::string bytes = mixed_model().SerializeAsString();
  auto survey = strip_initializer_raw_data(reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size(), false);
  ASSERT_TRUE(survey);
  EXPECT_TRUE(survey->bytes.empty());
  EXPECT_EQ(survey->raw_data_bytes, kBig * sizeof(float));
  ASSERT_EQ(survey->raw_data.size(), 3u);  // w, f, e
  EXPECT_TRUE(survey->raw_data[0].present);
  EXPECT_FALSE(survey->raw_data[1].present);
  EXPECT_TRUE(survey->raw_data[2].present);
  EXPECT_EQ(survey->raw_data[2].size, 0u);
}

}  // namespace
}  // namespace loom::onnx::testing
