// Turns a verified TFLite model (ModelView) into Loom graph-builder calls.
//
// Layout: TFLite tensors are NHWC. Loom's ops are ONNX ops, whose convolutions and pools are
// NCHW. Each TFLite tensor may exist in Loom in two forms: "native" (TFLite's own layout) and,
// for rank-4 tensors, "nchw" (the same data permuted to NCHW). Layout-sensitive operators
// (convolutions, pools, resize) ask for the nchw form and produce it; layout-agnostic ones
// (activations, elementwise with a same-layout partner, concat/mean/pad/softmax with remapped
// axes) keep whatever form their input has; everything else asks for the native form. A
// Transpose is emitted only where a consumer needs the form that does not exist yet, at most
// once per tensor and direction, so a CNN has one Transpose after each image input and one
// before each output. Constant operands are permuted at load time, never at run time.
//
// Quantization: int8/uint8 convolutions become QLinearConv (per-channel weight scales kept);
// every other quantized operator is computed as DequantizeLinear -> float op -> QuantizeLinear
// with the TFLite tensors' own scales and zero points, so results match TFLite's integer
// kernels to within one quantization step. Data-movement operators (reshape, transpose, gather,
// slice, squeeze) run on the quantized values directly.
#pragma once

#include <loom/plugin.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model_view.hpp"

namespace loom::tflite {

enum class Layout { kNative, kNchw };

// NHWC -> NCHW and back for rank-4 tensors.
inline constexpr int64_t kToNchw[4] = {0, 3, 1, 2};
inline constexpr int64_t kToNhwc[4] = {0, 2, 3, 1};

// One attribute of an emitted node.
struct Attr {
  std::string name;
  enum Kind { kInt, kFloat, kString, kInts, kFloats } kind;
  int64_t i = 0;
  float f = 0.f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  static Attr Int(std::string n, int64_t v) { return {std::move(n), kInt, v, 0.f, {}, {}, {}}; }
  static Attr Float(std::string n, float v) { return {std::move(n), kFloat, 0, v, {}, {}, {}}; }
  static Attr String(std::string n, std::string v) {
    return {std::move(n), kString, 0, 0.f, std::move(v), {}, {}};
  }
  static Attr Ints(std::string n, std::vector<int64_t> v) {
    return {std::move(n), kInts, 0, 0.f, {}, std::move(v), {}};
  }
  static Attr Floats(std::string n, std::vector<float> v) {
    return {std::move(n), kFloats, 0, 0.f, {}, {}, std::move(v)};
  }
};

class Converter {
 public:
  Converter(const ModelView& model, const loom_builder_api_t& api, loom_graph_builder_t* builder);
  void run();

  // ---- what operator converters use ------------------------------------------------------
  const ModelView& model() const { return model_; }
  const OperatorView& op() const { return *current_; }
  const TensorView& input(size_t i) const;  // throws naming the operator if missing
  bool has_input(size_t i) const;
  const TensorView& output(size_t i = 0) const;

  // The Loom value holding `tensor` in `layout` (emits a Transpose or a permuted constant the
  // first time a form is asked for). Rank-4 tensors only for kNchw.
  std::string value(const TensorView& tensor, Layout layout);
  // Whether `tensor` already exists in `layout`.
  bool has_form(const TensorView& tensor, Layout layout) const;
  // The layout an operator should work in when it can work in either: nchw when a rank-4
  // non-constant input already exists in nchw form, else native.
  Layout preferred_layout(std::initializer_list<const TensorView*> inputs) const;

  // `tensor` as float32 in `layout`: dequantized when it is quantized (constants are
  // dequantized at load time), unchanged when it is float.
  std::string float_value(const TensorView& tensor, Layout layout);
  // Names the Loom value `tensor` will have in `layout` once produced; the caller must emit
  // the node producing it.
  std::string define(const TensorView& tensor, Layout layout);
  // The name a float op computing output `tensor` in `layout` should write: the tensor's own
  // value when nothing follows, else a temporary that finish_output completes.
  std::string float_output(const TensorView& tensor, Layout layout, int activation = 0);
  // Completes an output from the float value `produced` (from float_output): applies the
  // fused `activation` (a TFLite ActivationFunctionType) as an explicit node, then quantizes
  // when `tensor` is quantized.
  void finish_output(const TensorView& tensor, Layout layout, const std::string& produced,
                     int activation = 0);

  // Emits a node (named after the current operator). A non-empty `domain` (custom operators'
  // "tflite.custom") is imported at opset 1.
  void emit(const std::string& op_type, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const std::vector<Attr>& attrs = {},
            const std::string& domain = "");
  // A fresh value name derived from `base`.
  std::string fresh(const std::string& base);
  // New initializers (copied).
  std::string constant_i64(const std::string& base, const std::vector<int64_t>& values,
                           std::vector<int64_t> dims = {-2});
  std::string constant_f32(const std::string& base, const std::vector<float>& values,
                           std::vector<int64_t> dims = {-2});
  std::string constant_raw(const std::string& base, loom_dtype_t dtype,
                           const std::vector<int64_t>& dims, std::span<const uint8_t> bytes);
  // A weight operand permuted by `perm` (output dim i = tensor dim perm[i]): constants are
  // permuted at load time (and dequantized to float32 when `as_float`), other values by a
  // Transpose node (after a DequantizeLinear when `as_float`).
  std::string permuted(const TensorView& tensor, std::span<const int64_t> perm, bool as_float);
  // Scale and zero-point constants of a quantized tensor (per-tensor: scalars; per-channel:
  // 1-D); the zero point has the tensor's dtype.
  std::string scale_of(const TensorView& tensor);
  std::string zero_point_of(const TensorView& tensor);

  // A constant tensor's contents as int64 / float (integer or float constants).
  std::vector<int64_t> constant_ints(const TensorView& tensor) const;
  std::vector<float> dequantized_data(const TensorView& tensor) const;

  // Errors naming the current operator and its first output tensor.
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void invalid(const std::string& what) const;
  std::string where() const;

 private:
  void add_graph_inputs();
  void add_graph_outputs();
  void convert_operator(const OperatorView& op);

  const ModelView& model_;
  const loom_builder_api_t& api_;
  loom_graph_builder_t* builder_;
  const OperatorView* current_ = nullptr;
  std::vector<std::optional<std::string>> native_, nchw_, float_native_, float_nchw_;
  std::map<std::string, int> name_counts_;
};

// Operator converters, one family per file. Each returns false when the builtin code is not
// its own.
bool convert_conv_pool(Converter& c, int32_t code);    // convolutions, pools, resize
bool convert_elementwise(Converter& c, int32_t code);  // binary arithmetic, activations
bool convert_math(Converter& c, int32_t code);         // unary and binary math, comparisons
bool convert_reduce(Converter& c, int32_t code);       // reductions, arg max/min, norms
bool convert_matmul(Converter& c, int32_t code);       // FULLY_CONNECTED, BATCH_MATMUL
bool convert_quantize(Converter& c, int32_t code);
bool convert_shape(Converter& c, int32_t code);      // reshape, transpose, gather, slice, pad
bool convert_layout(Converter& c, int32_t code);     // split, pack, tile, depth/space moves
bool convert_generate(Converter& c, int32_t code);   // shape, fill, range, one-hot
bool convert_recurrent(Converter& c, int32_t code);  // sequence LSTM/RNN
// A custom operator (op().custom): a node tflite.custom::<custom code> for the op-kernel
// plugins (tensors in native layout, option bytes as the INTS attribute custom_options).
void convert_custom(Converter& c);

// A permutation of a rank-4 constant shape / index to/from NCHW.
std::vector<int64_t> permute_dims(const std::vector<int64_t>& dims, std::span<const int64_t> perm);
// Maps an axis of a rank-4 NHWC tensor to its NCHW position.
inline int64_t nchw_axis(int64_t nhwc_axis) {
  constexpr int64_t kMap[4] = {0, 2, 3, 1};
  return kMap[nhwc_axis];
}

}  // namespace loom::tflite
