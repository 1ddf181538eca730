// TFLite builtin operator codes (BuiltinOperator in the official schema.fbs). The plugin's
// schema subset stores the code as a plain int so that codes it does not know still parse and
// can be named in the "unsupported operator" error.
#pragma once

#include <cstdint>

namespace loom::tflite {

enum class BuiltinOp : int32_t {
  kAdd = 0,
  kAveragePool2d = 1,
  kConcatenation = 2,
  kConv2d = 3,
  kDepthwiseConv2d = 4,
  kDequantize = 6,
  kFullyConnected = 9,
  kLogistic = 14,
  kMaxPool2d = 17,
  kMul = 18,
  kRelu = 19,
  kReluN1To1 = 20,
  kRelu6 = 21,
  kReshape = 22,
  kResizeBilinear = 23,
  kSoftmax = 25,
  kTanh = 28,
  kPad = 34,
  kGather = 36,
  kTranspose = 39,
  kMean = 40,
  kSub = 41,
  kDiv = 42,
  kSqueeze = 43,
  kStridedSlice = 45,
  kExp = 47,
  kMaximum = 55,
  kMinimum = 57,
  kPadV2 = 60,
  kResizeNearestNeighbor = 97,
  kLeakyRelu = 98,
  kQuantize = 114,
  kHardSwish = 117,
  kBatchMatMul = 126,
  // Codes above 127 live only in OperatorCode.builtin_code; 127 in the deprecated byte says so.
  kPlaceholderForGreaterOpCodes = 127,
};

// The official name of a builtin code ("CONV_2D"), or "" when this table does not know it.
const char* builtin_op_name(int32_t code);

}  // namespace loom::tflite
