// Malformed convolution / pooling / resize / matrix-product operators: each is refused with one
// line naming the operator and the problem, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

constexpr int8_t kFloat32 = 0, kInt32 = 2, kInt8 = 9;

class MalformedConv : public ::testing::Test {
 protected:
  std::string error_of(const TestModel& model) {
    write_file(dir_ / "model.tflite", serialize(model));
    return load_error(runtime_.get(), dir_ / "model.tflite");
  }

  loom::apps::RuntimePtr runtime_ = make_runtime();
  TempDir dir_;
};

// A model with one operator `code`; tensors are added by the tests.
struct Builder {
  TestModel m;
  int32_t tensor(std::vector<int32_t> shape, int8_t type = kFloat32) {
    m.tensors.push_back(
        {std::move(shape), type, 0, "t" + std::to_string(m.tensors.size()), {}, {}, 0});
    return static_cast<int32_t>(m.tensors.size() - 1);
  }
  // A constant of `type` (4-byte elements for float32/int32, 1-byte for int8) filled with
  // `values` (repeated to the element count).
  int32_t constant(std::vector<int32_t> shape, int8_t type, std::vector<int32_t> values) {
    int64_t count = 1;
    for (int32_t d : shape) count *= d;
    std::vector<uint8_t> bytes;
    for (int64_t i = 0; i < count; ++i) {
      const int32_t v = values.empty() ? 0 : values[i % values.size()];
      if (type == kInt8) {
        bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
      } else if (type == kInt32) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        bytes.insert(bytes.end(), p, p + 4);
      } else {
        const float f = static_cast<float>(v);
        const auto* p = reinterpret_cast<const uint8_t*>(&f);
        bytes.insert(bytes.end(), p, p + 4);
      }
    }
    m.buffers.push_back(bytes);
    const int32_t t = tensor(std::move(shape), type);
    m.tensors.back().buffer = static_cast<uint32_t>(m.buffers.size() - 1);
    return t;
  }
  void op(int32_t code, std::vector<int32_t> inputs, std::vector<int32_t> outputs) {
    m.operators.push_back({code, "", std::move(inputs), std::move(outputs)});
  }
};

constexpr int32_t kFullyConnected = 9, kL2Pool = 12, kResizeBilinear = 23, kTransposeConv = 67,
                  kBatchMatmul = 126, kSequenceRnn = 35, kSequenceLstm = 44,
                  kBidirectionalLstm = 52;

void expect_error(const std::string& error, const std::string& part, loom_status_code_t code) {
  EXPECT_NE(error.find(part), std::string::npos) << error;
  EXPECT_EQ(error.rfind(std::to_string(code) + ":", 0), 0u) << error;
}

TEST_F(MalformedConv, TransposeConvNeedsAConstantOutputShape) {
  Builder b;
  const int32_t shape = b.tensor({4}, kInt32), x = b.tensor({1, 3, 3, 2});
  const int32_t w = b.constant({4, 3, 3, 2}, kFloat32, {1}), y = b.tensor({1, 6, 6, 4});
  b.op(kTransposeConv, {shape, w, x}, {y});
  b.m.inputs = {shape, x};
  b.m.outputs = {y};
  expect_error(error_of(b.m),
               "operator 0 (TRANSPOSE_CONV) producing tensor 't3': tensor 't0' "
               "must be a constant",
               LOOM_ERROR_UNSUPPORTED);
}

TEST_F(MalformedConv, TransposeConvOutputShapeMustMatchTheOutput) {
  Builder b;
  const int32_t shape = b.constant({4}, kInt32, {1, 7, 6, 4}), x = b.tensor({1, 3, 3, 2});
  const int32_t w = b.constant({4, 3, 3, 2}, kFloat32, {1}), y = b.tensor({1, 6, 6, 4});
  b.op(kTransposeConv, {shape, w, x}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m), "output_shape [1, 7, 6, 4] disagrees with the output tensor's shape",
               LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, TransposeConvChannelsMustMatch) {
  Builder b;
  const int32_t shape = b.constant({4}, kInt32, {1, 6, 6, 4}), x = b.tensor({1, 3, 3, 3});
  const int32_t w = b.constant({4, 3, 3, 2}, kFloat32, {1}), y = b.tensor({1, 6, 6, 4});
  b.op(kTransposeConv, {shape, w, x}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m), "filter input channels 2 differ from the input's 3",
               LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, TransposeConvMissingInputAndOptions) {
  Builder b;
  const int32_t shape = b.constant({4}, kInt32, {1, 6, 6, 4}), x = b.tensor({1, 3, 3, 2});
  const int32_t w = b.constant({4, 3, 3, 2}, kFloat32, {1}), y = b.tensor({1, 6, 6, 4});
  b.op(kTransposeConv, {shape, w}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m), "input 2 is missing (the operator has 2 inputs)",
               LOOM_ERROR_INVALID_MODEL);
  b.m.operators[0].inputs = {shape, w, x};
  expect_error(error_of(b.m), "TRANSPOSE_CONV without options", LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, TransposeConvBiasShape) {
  Builder b;
  const int32_t shape = b.constant({4}, kInt32, {1, 6, 6, 4}), x = b.tensor({1, 3, 3, 2});
  const int32_t w = b.constant({4, 3, 3, 2}, kFloat32, {1}), y = b.tensor({1, 6, 6, 4});
  const int32_t bias = b.constant({3}, kFloat32, {1});
  b.op(kTransposeConv, {shape, w, x, bias}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m), "the bias must have shape [4]", LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, L2PoolWithoutOptionsOrOfTheWrongRank) {
  Builder b;
  const int32_t x = b.tensor({1, 4, 4, 2}), y = b.tensor({1, 2, 2, 2});
  b.op(kL2Pool, {x}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m),
               "operator 0 (L2_POOL_2D) producing tensor 't1': pooling without "
               "options",
               LOOM_ERROR_INVALID_MODEL);
  b.m.tensors[0].shape = {4, 4, 2};
  expect_error(error_of(b.m), "input 't0' must have rank 4 (NHWC), not 3",
               LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, ResizeSizeMustBeTwoConstantValues) {
  Builder b;
  const int32_t x = b.tensor({1, 4, 4, 2}), size = b.constant({3}, kInt32, {8, 8, 8});
  const int32_t y = b.tensor({1, 8, 8, 2});
  b.op(kResizeBilinear, {x, size}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m), "the size operand must hold two positive values",
               LOOM_ERROR_INVALID_MODEL);
  const int32_t dynamic = b.tensor({2}, kInt32);
  b.m.operators[0].inputs = {x, dynamic};
  b.m.inputs = {x, dynamic};
  expect_error(error_of(b.m), "must be a constant", LOOM_ERROR_UNSUPPORTED);
}

TEST_F(MalformedConv, FullyConnectedShapesAreChecked) {
  Builder b;
  const int32_t x = b.tensor({2, 7}), w = b.constant({3, 4}, kFloat32, {1});
  const int32_t y = b.tensor({2, 3});
  b.op(kFullyConnected, {x, w, -1}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m),
               "operator 0 (FULLY_CONNECTED) producing tensor 't2': the input's "
               "14 elements do not split into rows of the weights' 4 inputs",
               LOOM_ERROR_INVALID_MODEL);
  b.m.tensors[0].shape = {2, 4};
  const int32_t bias = b.constant({5}, kFloat32, {0});
  b.m.operators[0].inputs = {x, w, bias};
  expect_error(error_of(b.m), "the bias must have shape [3]", LOOM_ERROR_INVALID_MODEL);
  b.m.operators[0].inputs = {x, w, -1};
  b.m.tensors[y].shape = {2, 5};
  expect_error(error_of(b.m), "the output's last dimension must be the weights' 3 units",
               LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, HybridFullyConnectedNeedsPerTensorInt8Weights) {
  Builder b;
  const int32_t x = b.tensor({2, 4}), w = b.constant({3, 4}, kInt8, {5}), y = b.tensor({2, 3});
  b.m.tensors[w].scales = {0.1f, 0.2f, 0.3f};
  b.m.tensors[w].zero_points = {0, 0, 0};
  b.op(kFullyConnected, {x, w, -1}, {y});
  b.m.inputs = {x};
  b.m.outputs = {y};
  expect_error(error_of(b.m),
               "hybrid FULLY_CONNECTED with per-channel weight scales is not supported",
               LOOM_ERROR_UNSUPPORTED);
  b.m.tensors[w].scales = {0.1f};
  b.m.tensors[w].zero_points = {3};
  expect_error(error_of(b.m), "hybrid FULLY_CONNECTED weights must be symmetric (zero point 0)",
               LOOM_ERROR_INVALID_MODEL);
  b.m.tensors[w].type = 3;  // UINT8
  expect_error(error_of(b.m), "needs constant int8 weights, not uint8", LOOM_ERROR_UNSUPPORTED);
}

TEST_F(MalformedConv, BatchMatmulInnerDimensionsMustAgree) {
  Builder b;
  const int32_t a = b.tensor({2, 3, 4}), m = b.tensor({2, 5, 6}), y = b.tensor({2, 3, 6});
  b.op(kBatchMatmul, {a, m}, {y});
  b.m.inputs = {a, m};
  b.m.outputs = {y};
  expect_error(error_of(b.m),
               "operator 0 (BATCH_MATMUL) producing tensor 't2': the operands' "
               "inner dimensions differ (4 and 5)",
               LOOM_ERROR_INVALID_MODEL);
  b.m.tensors[a].shape = {4};
  expect_error(error_of(b.m), "BATCH_MATMUL operands need rank >= 2", LOOM_ERROR_INVALID_MODEL);
}

// input [2, 4, 3] -> RNN with 4 units -> [2, 4, 4]; the hidden state is a graph input.
Builder rnn_model() {
  Builder b;
  const int32_t x = b.tensor({2, 4, 3}), w = b.constant({4, 3}, kFloat32, {1});
  const int32_t r = b.constant({4, 4}, kFloat32, {1}), bias = b.constant({4}, kFloat32, {0});
  const int32_t h = b.tensor({2, 4}), y = b.tensor({2, 4, 4});
  b.op(kSequenceRnn, {x, w, r, bias, h}, {y});
  b.m.inputs = {x, h};
  b.m.outputs = {y};
  return b;
}

TEST_F(MalformedConv, SequenceRnnOperandsAreChecked) {
  Builder b = rnn_model();
  expect_error(error_of(b.m),
               "operator 0 (UNIDIRECTIONAL_SEQUENCE_RNN) producing tensor 't5': "
               "UNIDIRECTIONAL_SEQUENCE_RNN without options",
               LOOM_ERROR_INVALID_MODEL);
  b.m.operators[0].inputs.pop_back();
  expect_error(error_of(b.m), "needs 5 inputs", LOOM_ERROR_INVALID_MODEL);
  b = rnn_model();
  b.m.tensors[3].shape = {3};
  b.m.buffers[b.m.tensors[3].buffer].resize(12);
  expect_error(error_of(b.m), "bias 't3' has shape [3], expected [4]", LOOM_ERROR_INVALID_MODEL);
  b = rnn_model();
  const int32_t dynamic = b.tensor({4, 4});
  b.m.operators[0].inputs[2] = dynamic;
  b.m.inputs.push_back(dynamic);
  expect_error(error_of(b.m), "recurrent weights 't6' must be a constant", LOOM_ERROR_UNSUPPORTED);
  b = rnn_model();
  b.m.tensors[0].shape = {2, 4};
  expect_error(error_of(b.m), "the input must have rank 3", LOOM_ERROR_INVALID_MODEL);
}

TEST_F(MalformedConv, SequenceRnnNeedsFloat) {
  Builder b = rnn_model();
  b.m.tensors[0].type = kInt8;
  b.m.tensors[0].scales = {0.1f};
  b.m.tensors[0].zero_points = {0};
  expect_error(error_of(b.m), "only float32 recurrent operators are supported",
               LOOM_ERROR_UNSUPPORTED);
}

// input [2, 4, 3] -> LSTM with 5 units (no peepholes, projection or layer norm) -> [2, 4, 5].
Builder lstm_model() {
  Builder b;
  const int32_t x = b.tensor({2, 4, 3});
  std::vector<int32_t> inputs = {x};
  for (int g = 0; g < 4; ++g) inputs.push_back(b.constant({5, 3}, kFloat32, {1}));
  for (int g = 0; g < 4; ++g) inputs.push_back(b.constant({5, 5}, kFloat32, {1}));
  for (int g = 0; g < 3; ++g) inputs.push_back(-1);
  for (int g = 0; g < 4; ++g) inputs.push_back(b.constant({5}, kFloat32, {0}));
  inputs.push_back(-1);
  inputs.push_back(-1);
  const int32_t h = b.tensor({2, 5}), c = b.tensor({2, 5}), y = b.tensor({2, 4, 5});
  inputs.push_back(h);
  inputs.push_back(c);
  b.op(kSequenceLstm, inputs, {y});
  b.m.inputs = {x, h, c};
  b.m.outputs = {y};
  return b;
}

TEST_F(MalformedConv, SequenceLstmOperandsAreChecked) {
  Builder b = lstm_model();
  expect_error(error_of(b.m), "UNIDIRECTIONAL_SEQUENCE_LSTM without options",
               LOOM_ERROR_INVALID_MODEL);
  b.m.operators[0].inputs.pop_back();
  expect_error(error_of(b.m), "UNIDIRECTIONAL_SEQUENCE_LSTM needs 20 or 24 inputs, not 19",
               LOOM_ERROR_INVALID_MODEL);
  b = lstm_model();
  b.m.operators[0].inputs[11] = b.constant({5}, kFloat32, {1});  // cell_to_output only
  expect_error(error_of(b.m), "the peephole weights must be all present or all absent",
               LOOM_ERROR_INVALID_MODEL);
  b = lstm_model();
  b.m.operators[0].inputs[1] = -1;  // CIFG without dropping the input gate's bias
  expect_error(error_of(b.m), "must be all present or all absent (CIFG)", LOOM_ERROR_INVALID_MODEL);
  b = lstm_model();
  b.m.operators[0].inputs[7] = b.constant({5, 4}, kFloat32, {1});
  expect_error(error_of(b.m), "cell gate recurrent weights 't16' has shape [5, 4], expected [5, 5]",
               LOOM_ERROR_INVALID_MODEL);
  b = lstm_model();
  b.m.operators[0].inputs[17] = b.constant({5}, kFloat32, {1});
  expect_error(error_of(b.m), "a projection bias without projection weights",
               LOOM_ERROR_INVALID_MODEL);
}

// input [2, 4, 3] -> bidirectional LSTM with 5 units per direction, merged -> [2, 4, 10].
Builder bidirectional_model() {
  Builder b;
  const int32_t x = b.tensor({2, 4, 3});
  std::vector<int32_t> inputs = {x};
  for (int direction = 0; direction < 2; ++direction) {
    for (int g = 0; g < 4; ++g) inputs.push_back(b.constant({5, 3}, kFloat32, {1}));
    for (int g = 0; g < 4; ++g) inputs.push_back(b.constant({5, 5}, kFloat32, {1}));
    for (int g = 0; g < 3; ++g) inputs.push_back(-1);
    for (int g = 0; g < 4; ++g) inputs.push_back(b.constant({5}, kFloat32, {0}));
    inputs.push_back(-1);
    inputs.push_back(-1);
  }
  std::vector<int32_t> states;
  for (int i = 0; i < 4; ++i) states.push_back(b.tensor({2, 5}));
  inputs.insert(inputs.end(), states.begin(), states.end());
  for (int i = 0; i < 9; ++i) inputs.push_back(-1);
  const int32_t y = b.tensor({2, 4, 10});
  b.op(kBidirectionalLstm, inputs, {y});
  b.m.inputs = {x};
  b.m.inputs.insert(b.m.inputs.end(), states.begin(), states.end());
  b.m.outputs = {y};
  return b;
}

TEST_F(MalformedConv, BidirectionalLstmOperandsAreChecked) {
  Builder b = bidirectional_model();
  expect_error(error_of(b.m), "BIDIRECTIONAL_SEQUENCE_LSTM without options",
               LOOM_ERROR_INVALID_MODEL);
  b.m.operators[0].inputs.pop_back();
  expect_error(error_of(b.m), "BIDIRECTIONAL_SEQUENCE_LSTM needs 48 inputs, not 47",
               LOOM_ERROR_INVALID_MODEL);
  b = bidirectional_model();
  b.m.operators[0].inputs[39] = b.m.inputs[0];
  expect_error(error_of(b.m), "the auxiliary input (inputs 39-47) is not supported",
               LOOM_ERROR_UNSUPPORTED);
  b = bidirectional_model();
  b.m.operators[0].inputs[20] = b.constant({5, 2}, kFloat32, {1});  // backward cell gate
  expect_error(error_of(b.m), "cell gate input weights 't30' has shape [5, 2], expected [5, 3]",
               LOOM_ERROR_INVALID_MODEL);
}

}  // namespace
}  // namespace loom::tflite::testing
