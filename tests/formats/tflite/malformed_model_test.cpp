// Malformed and unsupported .tflite files: each gets one clear error naming the problem, never
// a crash. Files are built with the schema subset's generated C++ (tflite_test_support) or
// made by damaging a committed model.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

class Malformed : public ::testing::Test {
 protected:
  // The load error of `bytes` written as a .tflite file.
  std::string error_of(const std::string& bytes) {
    write_file(dir_ / "model.tflite", bytes);
    return load_error(runtime_.get(), dir_ / "model.tflite");
  }
  std::string error_of(const TestModel& model) { return error_of(serialize(model)); }

  loom::apps::RuntimePtr runtime_ = make_runtime();
  TempDir dir_;
};

std::string committed_model() {
  return read_file(models_dir() / "float_cnn.tflite");
}

TEST_F(Malformed, TheValidBaseModelLoads) {
  EXPECT_EQ(error_of(relu_model()), "");
}

TEST_F(Malformed, TruncatedFile) {
  const std::string bytes = committed_model();
  const std::string error = error_of(bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(error.find("failed verification"), std::string::npos) << error;
  EXPECT_EQ(error.rfind(std::to_string(LOOM_ERROR_INVALID_MODEL) + ":", 0), 0u) << error;
}

TEST_F(Malformed, TooShortForAFlatbuffer) {
  const std::string error = error_of(read_file(models_dir() / "float_cnn.tflite").substr(0, 8));
  EXPECT_NE(error.find("tflite: the flatbuffer failed verification"), std::string::npos) << error;
}

TEST_F(Malformed, BadMagicIsNotTakenForTflite) {
  std::string bytes = committed_model();
  std::memcpy(&bytes[4], "XXXX", 4);
  const std::string error = error_of(bytes);
  EXPECT_NE(error.find("not in a model format the installed plugins recognize"), std::string::npos)
      << error;
}

TEST_F(Malformed, RootOffsetOutsideTheFile) {
  std::string bytes = committed_model();
  const uint32_t huge = 0x7ffffff0u;
  std::memcpy(&bytes[0], &huge, 4);
  const std::string error = error_of(bytes);
  EXPECT_NE(error.find("failed verification"), std::string::npos) << error;
}

TEST_F(Malformed, EveryTruncationIsRefusedCleanly) {
  const std::string bytes = committed_model();
  for (size_t size = 0; size < bytes.size(); size += 97)
    EXPECT_NE(error_of(bytes.substr(0, size)), "") << "truncated to " << size << " bytes";
}

TEST_F(Malformed, BufferSizeDisagreesWithShape) {
  TestModel m = relu_model();
  m.tensors.push_back({{2, 2}, 0, 1, "w", {}, {}, 0});
  m.buffers.push_back(std::vector<uint8_t>(12, 0));
  const std::string error = error_of(m);
  EXPECT_NE(error.find("tensor 2 'w' has 12 bytes of data but its shape and type need 16"),
            std::string::npos)
      << error;
}

TEST_F(Malformed, BufferIndexOutOfRange) {
  TestModel m = relu_model();
  m.tensors[0].buffer = 9;
  const std::string error = error_of(m);
  EXPECT_NE(error.find("refers to buffer 9, but the model has 1 buffers"), std::string::npos)
      << error;
}

TEST_F(Malformed, OperatorTensorIndexOutOfRange) {
  TestModel m = relu_model();
  m.operators[0].inputs = {7};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 0 (RELU) names tensor 7, but the subgraph has 2 tensors"),
            std::string::npos)
      << error;
}

TEST_F(Malformed, GraphOutputIndexOutOfRange) {
  TestModel m = relu_model();
  m.outputs = {-4};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("graph output names tensor -4"), std::string::npos) << error;
}

TEST_F(Malformed, OperatorsOutOfOrderOrCyclic) {
  TestModel m = relu_model();
  m.tensors.push_back({{1, 4}, 0, 0, "z", {}, {}, 0});
  // op 0 reads z, which op 1 writes from y, which op 0 writes: a cycle.
  m.operators = {{19, "", {2}, {1}}, {19, "", {1}, {2}}};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 0 (RELU) reads tensor 2 'z' before any operator writes it"),
            std::string::npos)
      << error;
}

TEST_F(Malformed, TensorWrittenTwice) {
  TestModel m = relu_model();
  m.operators.push_back({19, "", {0}, {1}});
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 1 (RELU) writes tensor 1 'y', which is already"),
            std::string::npos)
      << error;
}

TEST_F(Malformed, AbsurdDimensions) {
  TestModel m = relu_model();
  m.tensors[1].shape = {65536, 65536, 65536};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("tensor 1 'y' has more than 2^31 elements"), std::string::npos) << error;
}

TEST_F(Malformed, NegativeDimension) {
  TestModel m = relu_model();
  m.tensors[0].shape = {1, -3};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("tensor 0 'x' has dimension 1 = -3"), std::string::npos) << error;
}

TEST_F(Malformed, PerChannelScalesDisagreeWithTheShape) {
  TestModel m = relu_model();
  m.tensors[0].type = 9;  // INT8
  m.tensors[0].scales = {0.1f, 0.2f, 0.3f};
  m.tensors[0].zero_points = {0, 0, 0};
  m.tensors[0].quantized_dimension = 1;
  const std::string error = error_of(m);
  EXPECT_NE(error.find("has 3 per-channel scales but dimension 1 has 4 entries"), std::string::npos)
      << error;
}

TEST_F(Malformed, NonPositiveScale) {
  TestModel m = relu_model();
  m.tensors[0].type = 9;
  m.tensors[0].scales = {-1.f};
  m.tensors[0].zero_points = {0};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("scales must be finite and positive"), std::string::npos) << error;
}

TEST_F(Malformed, WrongSchemaVersion) {
  TestModel m = relu_model();
  m.version = 2;
  const std::string error = error_of(m);
  EXPECT_NE(error.find("schema version 2 (only version 3 is read)"), std::string::npos) << error;
}

TEST_F(Malformed, UnsupportedBuiltinOperatorIsNamedWithItsTensor) {
  TestModel m = relu_model();
  m.operators[0].builtin_code = 136;  // HASHTABLE: a TF resource op Loom does not run
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 0 (HASHTABLE) producing tensor 'y': the operator is "
                       "not supported"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.rfind(std::to_string(LOOM_ERROR_UNSUPPORTED) + ":", 0), 0u) << error;
}

TEST_F(Malformed, UnknownBuiltinCodeIsNamedByNumber) {
  TestModel m = relu_model();
  m.operators[0].builtin_code = 250;  // newer than the schema the plugin knows
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 0 (builtin operator 250) producing tensor 'y'"),
            std::string::npos)
      << error;
}

TEST_F(Malformed, CustomOperatorIsNamed) {
  TestModel m = relu_model();
  m.operators[0].builtin_code = 32;
  m.operators[0].custom_code = "MyOp";
  const std::string error = error_of(m);
  // Handed over as tflite.custom::MyOp, which no loaded plugin provides: the model check names
  // it (formats cannot ask the host which kernels exist, see convert_custom.cpp).
  EXPECT_NE(error.find("MyOp (domain tflite.custom, opset 1)"), std::string::npos) << error;
  EXPECT_NE(error.find("install a kernel plugin that provides them"), std::string::npos) << error;
}

TEST_F(Malformed, MissingOperatorInput) {
  TestModel m = relu_model();
  m.operators[0].builtin_code = 0;  // ADD needs two inputs
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 0 (ADD) producing tensor 'y': input 1 is missing"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace loom::tflite::testing
