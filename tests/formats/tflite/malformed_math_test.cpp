// Malformed math, comparison, reduction and normalization operators (tflite issue #27): wrong
// operand counts, non-constant or out-of-range axes, shapes that do not broadcast, wrong types
// and bad option values each get one error line naming the operator and the problem.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tflite_subset_generated.h"
#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

namespace fb = loom::tflite_schema;

constexpr int8_t kFloat32 = 0, kInt32 = 2, kBool = 6;

// Builds the options table of one operator.
using OptionsFn = std::function<std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>>(
    flatbuffers::FlatBufferBuilder&)>;

// serialize() with an options table for operator 0 (TestModel has none).
std::string serialize_with(const TestModel& model, const OptionsFn& options) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const auto& data : model.buffers)
    buffers.push_back(fb::CreateBuffer(b, data.empty() ? 0 : b.CreateVector(data)));
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const auto& t : model.tensors)
    tensors.push_back(fb::CreateTensor(b, b.CreateVector(t.shape),
                                       static_cast<fb::TensorType>(t.type), t.buffer,
                                       b.CreateString(t.name)));
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes;
  std::vector<flatbuffers::Offset<fb::Operator>> operators;
  for (size_t i = 0; i < model.operators.size(); ++i) {
    const auto& op = model.operators[i];
    codes.push_back(fb::CreateOperatorCode(b, static_cast<int8_t>(std::min(op.builtin_code, 127)),
                                           0, 1, op.builtin_code));
    auto opts = i == 0 && options ? options(b)
                                  : std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>>{
                                        fb::BuiltinOptions::NONE, 0};
    operators.push_back(fb::CreateOperator(b, static_cast<uint32_t>(i), b.CreateVector(op.inputs),
                                           b.CreateVector(op.outputs), opts.first, opts.second));
  }
  auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(model.inputs),
                                     b.CreateVector(model.outputs), b.CreateVector(operators),
                                     b.CreateString("main"));
  auto root = fb::CreateModel(b, model.version, b.CreateVector(codes),
                              b.CreateVector(std::vector{subgraph}), b.CreateString("test"),
                              b.CreateVector(buffers));
  fb::FinishModelBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

TestTensor t(std::vector<int32_t> shape, int8_t type, uint32_t buffer, std::string name) {
  TestTensor tensor;
  tensor.shape = std::move(shape);
  tensor.type = type;
  tensor.buffer = buffer;
  tensor.name = std::move(name);
  return tensor;
}

std::vector<uint8_t> int32_bytes(const std::vector<int32_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// One operator `code` over `ins` tensors producing `outs`; tensors are listed in `tensors`,
// non-constant ones not produced by the operator become graph inputs.
TestModel one_op(int32_t code, std::vector<TestTensor> tensors, std::vector<int32_t> ins,
                 std::vector<int32_t> outs, std::vector<std::vector<uint8_t>> buffers = {}) {
  TestModel m;
  m.tensors = std::move(tensors);
  for (auto& data : buffers) m.buffers.push_back(std::move(data));
  m.operators = {{code, "", ins, outs}};
  for (int32_t i : ins)
    if (i >= 0 && m.tensors[i].buffer == 0) m.inputs.push_back(i);
  m.outputs = outs;
  return m;
}

class MalformedMath : public ::testing::Test {
 protected:
  std::string error_of(const TestModel& model, const OptionsFn& options = {}) {
    write_file(dir_ / "model.tflite", serialize_with(model, options));
    return load_error(runtime_.get(), dir_ / "model.tflite");
  }
  void expect_error(const TestModel& model, const std::string& text,
                    const OptionsFn& options = {}) {
    const std::string error = error_of(model, options);
    EXPECT_NE(error.find(text), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }

  loom::apps::RuntimePtr runtime_ = make_runtime();
  TempDir dir_;
};

constexpr int32_t kPrelu = 54, kSum = 74, kSquaredDifference = 99, kLrn = 13, kArgMax = 56,
                  kLogicalAnd = 86, kSelect = 64, kLog = 73, kReduceAny = 91, kCumsum = 128,
                  kAddN = 106, kLess = 58, kSqrt = 75, kL2Norm = 11, kZerosLike = 93;

TEST_F(MalformedMath, ValidLrnLoads) {
  const TestModel m = one_op(
      kLrn, {t({1, 2, 2, 4}, kFloat32, 0, "x"), t({1, 2, 2, 4}, kFloat32, 0, "y")}, {0}, {1});
  EXPECT_EQ(
      error_of(m,
               [](auto& b) {
                 return std::pair{
                     fb::BuiltinOptions::LocalResponseNormalizationOptions,
                     fb::CreateLocalResponseNormalizationOptions(b, 2, 1.f, 0.1f, 0.5f).Union()};
               }),
      "");
}

TEST_F(MalformedMath, PreluWithOneInput) {
  const TestModel m =
      one_op(kPrelu, {t({1, 4}, kFloat32, 0, "x"), t({1, 4}, kFloat32, 0, "y")}, {0}, {1});
  expect_error(m, "operator 0 (PRELU) producing tensor 'y': expects 2 inputs, the operator has 1");
}

TEST_F(MalformedMath, PreluAlphaWiderThanTheInput) {
  const TestModel m = one_op(
      kPrelu,
      {t({1, 4}, kFloat32, 0, "x"), t({2, 4}, kFloat32, 1, "alpha"), t({2, 4}, kFloat32, 0, "y")},
      {0, 1}, {2}, {std::vector<uint8_t>(32, 0)});
  expect_error(m, "alpha [2,4] must broadcast to the input shape [1,4]");
}

TEST_F(MalformedMath, SquaredDifferenceShapesDoNotBroadcast) {
  const TestModel m =
      one_op(kSquaredDifference,
             {t({2, 3}, kFloat32, 0, "a"), t({4}, kFloat32, 0, "b"), t({2, 3}, kFloat32, 0, "y")},
             {0, 1}, {2});
  expect_error(m,
               "(SQUARED_DIFFERENCE) producing tensor 'y': operand shapes [2,3] [4] do not "
               "broadcast");
}

TEST_F(MalformedMath, OutputShapeDisagrees) {
  const TestModel m =
      one_op(kSqrt, {t({2, 3}, kFloat32, 0, "x"), t({3, 2}, kFloat32, 0, "y")}, {0}, {1});
  expect_error(m, "(SQRT) producing tensor 'y': output 'y' has shape [3,2], expected [2,3]");
}

TEST_F(MalformedMath, SumAxesNotConstant) {
  const TestModel m = one_op(
      kSum, {t({2, 3}, kFloat32, 0, "x"), t({1}, kInt32, 0, "axes"), t({2}, kFloat32, 0, "y")},
      {0, 1}, {2});
  expect_error(m, "(SUM) producing tensor 'y': tensor 'axes' must be a constant");
}

TEST_F(MalformedMath, SumAxisOutOfRange) {
  const TestModel m = one_op(
      kSum, {t({2, 3}, kFloat32, 0, "x"), t({1}, kInt32, 1, "axes"), t({2}, kFloat32, 0, "y")},
      {0, 1}, {2}, {int32_bytes({5})});
  expect_error(m, "(SUM) producing tensor 'y': axis 5 is outside rank 2");
}

TEST_F(MalformedMath, ReduceAnyOfFloats) {
  const TestModel m = one_op(
      kReduceAny, {t({2, 3}, kFloat32, 0, "x"), t({1}, kInt32, 1, "axes"), t({2}, kBool, 0, "y")},
      {0, 1}, {2}, {int32_bytes({1})});
  expect_error(m, "REDUCE_ANY/REDUCE_ALL need bool input and output");
}

TEST_F(MalformedMath, LrnNegativeRadius) {
  const TestModel m = one_op(
      kLrn, {t({1, 2, 2, 4}, kFloat32, 0, "x"), t({1, 2, 2, 4}, kFloat32, 0, "y")}, {0}, {1});
  expect_error(
      m, "(LOCAL_RESPONSE_NORMALIZATION) producing tensor 'y': radius -1 is outside [0, 2^20]",
      [](auto& b) {
        return std::pair{
            fb::BuiltinOptions::LocalResponseNormalizationOptions,
            fb::CreateLocalResponseNormalizationOptions(b, -1, 1.f, 1.f, 0.5f).Union()};
      });
}

TEST_F(MalformedMath, LrnNeedsRank4) {
  const TestModel m =
      one_op(kLrn, {t({2, 4}, kFloat32, 0, "x"), t({2, 4}, kFloat32, 0, "y")}, {0}, {1});
  expect_error(m, "needs a rank-4 input, got rank 2");
}

TEST_F(MalformedMath, L2NormalizationOfAScalar) {
  const TestModel m = one_op(kL2Norm, {t({}, kFloat32, 0, "x"), t({}, kFloat32, 0, "y")}, {0}, {1});
  expect_error(m, "(L2_NORMALIZATION) producing tensor 'y': needs an input of rank >= 1");
}

TEST_F(MalformedMath, ArgMaxWithTwoAxes) {
  const TestModel m = one_op(
      kArgMax, {t({2, 3}, kFloat32, 0, "x"), t({2}, kInt32, 1, "axis"), t({2}, kInt32, 0, "y")},
      {0, 1}, {2}, {int32_bytes({0, 1})});
  expect_error(m, "(ARG_MAX) producing tensor 'y': the axis operand must hold one value, it has 2");
}

TEST_F(MalformedMath, ArgMaxFloatOutput) {
  const TestModel m = one_op(
      kArgMax, {t({2, 3}, kFloat32, 0, "x"), t({1}, kInt32, 1, "axis"), t({2}, kFloat32, 0, "y")},
      {0, 1}, {2}, {int32_bytes({1})});
  expect_error(m, "the output must be int32 or int64, not float32");
}

TEST_F(MalformedMath, CumsumAxisOutOfRange) {
  const TestModel m = one_op(
      kCumsum, {t({2, 3}, kFloat32, 0, "x"), t({}, kInt32, 1, "axis"), t({2, 3}, kFloat32, 0, "y")},
      {0, 1}, {2}, {int32_bytes({-3})});
  expect_error(m, "(CUMSUM) producing tensor 'y': axis -3 is outside rank 2");
}

TEST_F(MalformedMath, LogicalAndOfFloats) {
  const TestModel m =
      one_op(kLogicalAnd, {t({4}, kFloat32, 0, "a"), t({4}, kBool, 0, "b"), t({4}, kBool, 0, "y")},
             {0, 1}, {2});
  expect_error(m, "(LOGICAL_AND) producing tensor 'y': operand 'a' is not bool");
}

TEST_F(MalformedMath, LessWithFloatOutput) {
  const TestModel m =
      one_op(kLess, {t({4}, kFloat32, 0, "a"), t({4}, kFloat32, 0, "b"), t({4}, kFloat32, 0, "y")},
             {0, 1}, {2});
  expect_error(m, "(LESS) producing tensor 'y': the output must be bool");
}

TEST_F(MalformedMath, SelectConditionShape) {
  const TestModel m = one_op(kSelect,
                             {t({3}, kBool, 0, "cond"), t({2, 3}, kFloat32, 0, "a"),
                              t({2, 3}, kFloat32, 0, "b"), t({2, 3}, kFloat32, 0, "y")},
                             {0, 1, 2}, {3});
  expect_error(m,
               "the condition [3] must have the operands' shape [2,3] or be a vector over "
               "their first dimension");
}

TEST_F(MalformedMath, SelectWithTwoInputs) {
  const TestModel m = one_op(
      kSelect, {t({2}, kBool, 0, "cond"), t({2}, kFloat32, 0, "a"), t({2}, kFloat32, 0, "y")},
      {0, 1}, {2});
  expect_error(m, "(SELECT) producing tensor 'y': expects 3 inputs, the operator has 2");
}

TEST_F(MalformedMath, AddNShapesDiffer) {
  const TestModel m = one_op(
      kAddN,
      {t({2, 3}, kFloat32, 0, "a"), t({3, 2}, kFloat32, 0, "b"), t({2, 3}, kFloat32, 0, "y")},
      {0, 1}, {2});
  expect_error(m, "ADD_N needs inputs of one shape, got [2,3] and [3,2]");
}

TEST_F(MalformedMath, LogOfIntegers) {
  const TestModel m = one_op(kLog, {t({4}, kInt32, 0, "x"), t({4}, kInt32, 0, "y")}, {0}, {1});
  expect_error(m,
               "(LOG) producing tensor 'y': a int32 operand (float32 or quantized int8/uint8 "
               "only)");
}

TEST_F(MalformedMath, ZerosLikeChangesType) {
  const TestModel m =
      one_op(kZerosLike, {t({4}, kFloat32, 0, "x"), t({4}, kInt32, 0, "y")}, {0}, {1});
  expect_error(m, "(ZEROS_LIKE) producing tensor 'y': the output type differs from the input type");
}

TEST_F(MalformedMath, ZerosLikeOfBool) {
  const TestModel m = one_op(kZerosLike, {t({4}, kBool, 0, "x"), t({4}, kBool, 0, "y")}, {0}, {1});
  expect_error(m, "(ZEROS_LIKE) producing tensor 'y': a bool operand");
}

// The elementwise operators of convert_elementwise.cpp check their operand count too.
TEST_F(MalformedMath, ReluWithTwoInputs) {
  const TestModel m =
      one_op(19, {t({4}, kFloat32, 0, "a"), t({4}, kFloat32, 0, "b"), t({4}, kFloat32, 0, "y")},
             {0, 1}, {2});
  expect_error(m, "operator 0 (RELU) producing tensor 'y': expects 1 input, the operator has 2");
}

TEST_F(MalformedMath, AddWithThreeInputs) {
  const TestModel m = one_op(0,
                             {t({4}, kFloat32, 0, "a"), t({4}, kFloat32, 0, "b"),
                              t({4}, kFloat32, 0, "c"), t({4}, kFloat32, 0, "y")},
                             {0, 1, 2}, {3});
  expect_error(m, "operator 0 (ADD) producing tensor 'y': expects 2 inputs, the operator has 3");
}

}  // namespace
}  // namespace loom::tflite::testing
