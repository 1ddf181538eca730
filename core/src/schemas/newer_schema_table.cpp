// GENERATED FILE, do not edit. Regenerate with
//   BUILD/onnx-current-venv/bin/python core/src/schemas/generate_newer_schema_table.py
// from onnx 1.23.2: the versions of opsets 20..28 and ai.onnx.ml 4+.
// Columns: domain, op_type, since_version, min/max inputs, min/max outputs (-1 =
// variadic), deprecated; the comment says what the version changed.
#include "schema_rows.hpp"

namespace loom::core {
namespace {

constexpr SchemaRow kNewerRows[] = {
    {"", "Acos", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Acosh", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "AffineGrid", 20, 2, 2, 1, 1, false},  // new op
    {"", "Asin", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Asinh", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Atan", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Atanh", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Attention", 23, 3, 6, 1, 4, false},  // new op
    {"", "Attention", 24, 3, 7, 1, 4, false},  // inputs now Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen
    {"", "Attention", 25, 3, 7, 1, 4, false},  // attributes left_window_size, right_window_size added
    {"", "AveragePool", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Bernoulli", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "BitCast", 26, 1, 1, 1, 1, false},  // new op
    {"", "BitShift", 28, 2, 2, 1, 1, false},  // types int16, int32, int64, int8 added
    {"", "Cast", 21, 1, 1, 1, 1, false},  // types int4, uint4 added
    {"", "Cast", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "Cast", 24, 1, 1, 1, 1, false},  // attributes round_mode added
    {"", "Cast", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "Cast", 28, 1, 1, 1, 1, false},  // types float6e2m3, float6e3m2 added
    {"", "CastLike", 21, 2, 2, 1, 1, false},  // types int4, uint4 added
    {"", "CastLike", 23, 2, 2, 1, 1, false},  // types float4e2m1 added
    {"", "CastLike", 24, 2, 2, 1, 1, false},  // attributes round_mode added
    {"", "CastLike", 25, 2, 2, 1, 1, false},  // types int2, uint2 added
    {"", "CausalConvWithState", 27, 2, 4, 2, 2, false},  // new op
    {"", "Celu", 28, 1, 1, 1, 1, false},  // types bfloat16, double, float16 added
    {"", "Compress", 28, 2, 2, 1, 1, false},  // types bfloat16 added
    {"", "Constant", 21, 0, 0, 1, 1, false},  // types int4, uint4 added
    {"", "Constant", 23, 0, 0, 1, 1, false},  // types float4e2m1 added
    {"", "Constant", 24, 0, 0, 1, 1, false},  // types float8e8m0 added
    {"", "Constant", 25, 0, 0, 1, 1, false},  // types int2, uint2 added
    {"", "ConstantOfShape", 20, 1, 1, 1, 1, false},  // types bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz added
    {"", "ConstantOfShape", 21, 1, 1, 1, 1, false},  // types int4, uint4 added
    {"", "ConstantOfShape", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "ConstantOfShape", 24, 1, 1, 1, 1, false},  // types float8e8m0 added
    {"", "ConstantOfShape", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "Conv", 22, 2, 3, 1, 1, false},  // types bfloat16 added
    {"", "ConvTranspose", 22, 2, 3, 1, 1, false},  // types bfloat16 added
    {"", "Cos", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Cosh", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "CumProd", 26, 2, 2, 1, 1, false},  // new op
    {"", "DFT", 20, 1, 3, 1, 1, false},  // attributes axis removed; inputs now input, dft_length, axis
    {"", "DeformConv", 22, 3, 5, 1, 1, false},  // types bfloat16 added
    {"", "DepthToSpace", 28, 1, 1, 1, 1, false},  // documentation only
    {"", "DequantizeLinear", 21, 2, 3, 1, 1, false},  // attributes block_size added
    {"", "DequantizeLinear", 23, 2, 3, 1, 1, false},  // attributes output_dtype added
    {"", "DequantizeLinear", 24, 2, 3, 1, 1, false},  // types float8e8m0 added
    {"", "DequantizeLinear", 25, 2, 3, 1, 1, false},  // types int2, uint2 added
    {"", "DequantizeLinear", 28, 2, 3, 1, 1, false},  // types float6e2m3, float6e3m2 added
    {"", "Det", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Dropout", 22, 1, 3, 1, 2, false},  // types bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz added
    {"", "Einsum", 28, 1, -1, 1, 1, false},  // types bfloat16 added
    {"", "Elu", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "EyeLike", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Flatten", 21, 1, 1, 1, 1, false},  // types float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4 added
    {"", "Flatten", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "Flatten", 24, 1, 1, 1, 1, false},  // types float8e8m0 added
    {"", "Flatten", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "GRU", 22, 3, 6, 0, 2, false},  // types bfloat16 added
    {"", "Gelu", 20, 1, 1, 1, 1, false},  // new op
    {"", "GlobalAveragePool", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "GlobalLpPool", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "GlobalMaxPool", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "GridSample", 20, 2, 2, 1, 1, false},  // documentation only
    {"", "GridSample", 22, 2, 2, 1, 1, false},  // types bfloat16 added
    {"", "GroupNormalization", 21, 3, 3, 1, 1, false},  // attributes stash_type added
    {"", "HardSigmoid", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "HardSwish", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Identity", 21, 1, 1, 1, 1, false},  // types int4, uint4 added
    {"", "Identity", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "Identity", 24, 1, 1, 1, 1, false},  // types float8e8m0 added
    {"", "Identity", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "If", 21, 1, 1, 1, -1, false},  // types int4, optional(int4, optional(uint4, seq(int4, seq(uint4, uint4 added
    {"", "If", 23, 1, 1, 1, -1, false},  // types float4e2m1, optional(float4e2m1, seq(float4e2m1 added
    {"", "If", 24, 1, 1, 1, -1, false},  // types float8e8m0, optional(float8e8m0, seq(float8e8m0 added
    {"", "If", 25, 1, 1, 1, -1, false},  // types int2, optional(int2, optional(uint2, seq(int2, seq(uint2, uint2 added
    {"", "ImageDecoder", 20, 1, 1, 1, 1, false},  // new op
    {"", "InstanceNormalization", 22, 3, 3, 1, 1, false},  // types bfloat16 added
    {"", "IsInf", 20, 1, 1, 1, 1, false},  // types bfloat16, float16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz added
    {"", "IsNaN", 20, 1, 1, 1, 1, false},  // types float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz added
    {"", "LSTM", 22, 3, 8, 0, 3, false},  // types bfloat16 added
    {"", "LinearAttention", 27, 3, 6, 2, 2, false},  // new op
    {"", "Loop", 21, 2, -1, 1, -1, false},  // types int4, optional(int4, optional(uint4, seq(int4, seq(uint4, uint4 added
    {"", "Loop", 23, 2, -1, 1, -1, false},  // types float4e2m1, optional(float4e2m1, seq(float4e2m1 added
    {"", "Loop", 24, 2, -1, 1, -1, false},  // types float8e8m0, optional(float8e8m0, seq(float8e8m0 added
    {"", "Loop", 25, 2, -1, 1, -1, false},  // types int2, optional(int2, optional(uint2, seq(int2, seq(uint2, uint2 added
    {"", "LpNormalization", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "LpPool", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "MaxPool", 22, 1, 1, 1, 2, false},  // types bfloat16 added
    {"", "MaxRoiPool", 22, 2, 2, 1, 1, false},  // types bfloat16 added
    {"", "MaxUnpool", 22, 2, 3, 1, 1, false},  // types bfloat16 added
    {"", "Mish", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Mod", 28, 2, 2, 1, 1, false},  // documentation only
    {"", "Multinomial", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "NegativeLogLikelihoodLoss", 22, 2, 3, 1, 1, false},  // types bfloat16 added
    {"", "OneHot", 28, 3, 3, 1, 1, false},  // types bfloat16 added
    {"", "Optional", 28, 0, 1, 1, 1, false},  // types bfloat16, float4e2m1, float6e2m3, float6e3m2, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0, int2, int4, optional(bfloat16, optional(float4e2m1, optional(float6e2m3, optional(float6e3m2, optional(float8e4m3fn, optional(float8e4m3fnuz, optional(float8e5m2, optional(float8e5m2fnuz, optional(float8e8m0, optional(int2, optional(int4, optional(seq(bfloat16, optional(seq(float4e2m1, optional(seq(float6e2m3, optional(seq(float6e3m2, optional(seq(float8e4m3fn, optional(seq(float8e4m3fnuz, optional(seq(float8e5m2, optional(seq(float8e5m2fnuz, optional(seq(float8e8m0, optional(seq(int2, optional(seq(int4, optional(seq(uint2, optional(seq(uint4, optional(uint2, optional(uint4, seq(bfloat16, seq(float4e2m1, seq(float6e2m3, seq(float6e3m2, seq(float8e4m3fn, seq(float8e4m3fnuz, seq(float8e5m2, seq(float8e5m2fnuz, seq(float8e8m0, seq(int2, seq(int4, seq(uint2, seq(uint4, uint2, uint4 added
    {"", "OptionalGetElement", 28, 1, 1, 1, 1, false},  // types bfloat16, float4e2m1, float6e2m3, float6e3m2, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0, int2, int4, optional(bfloat16, optional(float4e2m1, optional(float6e2m3, optional(float6e3m2, optional(float8e4m3fn, optional(float8e4m3fnuz, optional(float8e5m2, optional(float8e5m2fnuz, optional(float8e8m0, optional(int2, optional(int4, optional(seq(bfloat16, optional(seq(float4e2m1, optional(seq(float6e2m3, optional(seq(float6e3m2, optional(seq(float8e4m3fn, optional(seq(float8e4m3fnuz, optional(seq(float8e5m2, optional(seq(float8e5m2fnuz, optional(seq(float8e8m0, optional(seq(int2, optional(seq(int4, optional(seq(uint2, optional(seq(uint4, optional(uint2, optional(uint4, seq(bfloat16, seq(float4e2m1, seq(float6e2m3, seq(float6e3m2, seq(float8e4m3fn, seq(float8e4m3fnuz, seq(float8e5m2, seq(float8e5m2fnuz, seq(float8e8m0, seq(int2, seq(int4, seq(uint2, seq(uint4, uint2, uint4 added
    {"", "OptionalHasElement", 28, 0, 1, 1, 1, false},  // types bfloat16, float4e2m1, float6e2m3, float6e3m2, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0, int2, int4, optional(bfloat16, optional(float4e2m1, optional(float6e2m3, optional(float6e3m2, optional(float8e4m3fn, optional(float8e4m3fnuz, optional(float8e5m2, optional(float8e5m2fnuz, optional(float8e8m0, optional(int2, optional(int4, optional(seq(bfloat16, optional(seq(float4e2m1, optional(seq(float6e2m3, optional(seq(float6e3m2, optional(seq(float8e4m3fn, optional(seq(float8e4m3fnuz, optional(seq(float8e5m2, optional(seq(float8e5m2fnuz, optional(seq(float8e8m0, optional(seq(int2, optional(seq(int4, optional(seq(uint2, optional(seq(uint4, optional(uint2, optional(uint4, seq(bfloat16, seq(float4e2m1, seq(float6e2m3, seq(float6e3m2, seq(float8e4m3fn, seq(float8e4m3fnuz, seq(float8e5m2, seq(float8e5m2fnuz, seq(float8e8m0, seq(int2, seq(int4, seq(uint2, seq(uint4, uint2, uint4 added
    {"", "Pad", 21, 2, 4, 1, 1, false},  // types float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4 added
    {"", "Pad", 23, 2, 4, 1, 1, false},  // types float4e2m1 added
    {"", "Pad", 24, 2, 4, 1, 1, false},  // types float8e8m0 added
    {"", "Pad", 25, 2, 4, 1, 1, false},  // types int2, uint2 added
    {"", "QLinearMatMul", 21, 8, 8, 1, 1, false},  // types bfloat16, float, float16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz added
    {"", "QuantizeLinear", 21, 2, 3, 1, 1, false},  // attributes block_size, output_dtype added
    {"", "QuantizeLinear", 23, 2, 3, 1, 1, false},  // attributes precision added
    {"", "QuantizeLinear", 24, 2, 3, 1, 1, false},  // types float8e8m0 added
    {"", "QuantizeLinear", 25, 2, 3, 1, 1, false},  // types int2, uint2 added
    {"", "QuantizeLinear", 28, 2, 3, 1, 1, false},  // types float6e2m3, float6e3m2 added
    {"", "RMSNormalization", 23, 2, 2, 1, 1, false},  // new op
    {"", "RNN", 22, 3, 6, 0, 2, false},  // types bfloat16 added
    {"", "RandomNormal", 22, 0, 0, 1, 1, false},  // types bfloat16 added
    {"", "RandomNormalLike", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "RandomUniform", 22, 0, 0, 1, 1, false},  // types bfloat16 added
    {"", "RandomUniformLike", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Range", 27, 3, 3, 1, 1, false},  // attributes stash_type added
    {"", "ReduceLogSum", 28, 1, 2, 1, 1, false},  // documentation only
    {"", "ReduceLogSumExp", 28, 1, 2, 1, 1, false},  // documentation only
    {"", "ReduceMax", 20, 1, 2, 1, 1, false},  // types bool added
    {"", "ReduceMin", 20, 1, 2, 1, 1, false},  // types bool added
    {"", "RegexFullMatch", 20, 1, 1, 1, 1, false},  // new op
    {"", "Reshape", 21, 2, 2, 1, 1, false},  // types int4, uint4 added
    {"", "Reshape", 23, 2, 2, 1, 1, false},  // types float4e2m1 added
    {"", "Reshape", 24, 2, 2, 1, 1, false},  // types float8e8m0 added
    {"", "Reshape", 25, 2, 2, 1, 1, false},  // types int2, uint2 added
    {"", "ReverseSequence", 28, 2, 2, 1, 1, false},  // types bfloat16 added
    {"", "RoiAlign", 22, 3, 3, 1, 1, false},  // types bfloat16 added
    {"", "RotaryEmbedding", 23, 3, 4, 1, 1, false},  // new op
    {"", "Round", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Scan", 21, 1, -1, 1, -1, false},  // types int4, uint4 added
    {"", "Scan", 23, 1, -1, 1, -1, false},  // types float4e2m1 added
    {"", "Scan", 24, 1, -1, 1, -1, false},  // types float8e8m0 added
    {"", "Scan", 25, 1, -1, 1, -1, false},  // types int2, uint2 added
    {"", "Selu", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Shape", 21, 1, 1, 1, 1, false},  // types int4, uint4 added
    {"", "Shape", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "Shape", 24, 1, 1, 1, 1, false},  // types float8e8m0 added
    {"", "Shape", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "Sin", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Sinh", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Size", 21, 1, 1, 1, 1, false},  // types int4, uint4 added
    {"", "Size", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "Size", 24, 1, 1, 1, 1, false},  // types float8e8m0 added
    {"", "Size", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "Softplus", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "Softsign", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "SpaceToDepth", 28, 1, 1, 1, 1, false},  // attributes mode added
    {"", "SplitToSequence", 24, 1, 2, 1, 1, false},  // types bfloat16, seq(bfloat16 added
    {"", "Squeeze", 21, 1, 2, 1, 1, false},  // types float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4 added
    {"", "Squeeze", 23, 1, 2, 1, 1, false},  // types float4e2m1 added
    {"", "Squeeze", 24, 1, 2, 1, 1, false},  // types float8e8m0 added
    {"", "Squeeze", 25, 1, 2, 1, 1, false},  // types int2, uint2 added
    {"", "StringConcat", 20, 2, 2, 1, 1, false},  // new op
    {"", "StringSplit", 20, 1, 1, 2, 2, false},  // new op
    {"", "SwiGLU", 28, 2, 2, 1, 1, false},  // new op
    {"", "Swish", 24, 1, 1, 1, 1, false},  // new op
    {"", "Tan", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "TensorScatter", 24, 2, 3, 1, 1, false},  // new op
    {"", "ThresholdedRelu", 22, 1, 1, 1, 1, false},  // types bfloat16 added
    {"", "TopK", 24, 2, 2, 2, 2, false},  // types bfloat16 added
    {"", "Transpose", 21, 1, 1, 1, 1, false},  // types float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4 added
    {"", "Transpose", 23, 1, 1, 1, 1, false},  // types float4e2m1 added
    {"", "Transpose", 24, 1, 1, 1, 1, false},  // types float8e8m0 added
    {"", "Transpose", 25, 1, 1, 1, 1, false},  // types int2, uint2 added
    {"", "Unique", 28, 1, 1, 1, 4, false},  // types bfloat16 added
    {"", "Unsqueeze", 21, 2, 2, 1, 1, false},  // types float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4 added
    {"", "Unsqueeze", 23, 2, 2, 1, 1, false},  // types float4e2m1 added
    {"", "Unsqueeze", 24, 2, 2, 1, 1, false},  // types float8e8m0 added
    {"", "Unsqueeze", 25, 2, 2, 1, 1, false},  // types int2, uint2 added
    {"ai.onnx.ml", "LabelEncoder", 4, 1, 1, 1, 1, false},  // attributes default_tensor, keys_tensor, values_tensor added
    {"ai.onnx.ml", "TreeEnsemble", 5, 1, 1, 1, 1, false},  // new op
    {"ai.onnx.ml", "TreeEnsembleClassifier", 5, 1, 1, 2, 2, true},  // documentation only
    {"ai.onnx.ml", "TreeEnsembleRegressor", 5, 1, 1, 1, 1, true},  // documentation only
};

}  // namespace

std::span<const SchemaRow> newer_schema_rows() {
  return kNewerRows;
}

}  // namespace loom::core
