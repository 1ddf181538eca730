// Elementwise operators: ADD SUB MUL DIV MAXIMUM MINIMUM (with broadcasting and fused
// activations), the unary activations RELU RELU6 RELU_N1_TO_1 LOGISTIC TANH HARD_SWISH
// LEAKY_RELU EXP, and SOFTMAX. All work in whichever layout their input already has.
#include <loom/plugin.hpp>

#include "convert_support.hpp"
#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

// An operator with more operands than it takes is malformed (a missing one is reported by
// Converter::input as "input i is missing").
void expect_inputs(const Converter& c, size_t count) {
  if (c.op().inputs.size() > count)
    c.invalid("expects " + std::to_string(count) + " input" + (count == 1 ? "" : "s") +
              ", the operator has " + std::to_string(c.op().inputs.size()));
}

void convert_binary(Converter& c, const char* onnx_op, int activation) {
  expect_inputs(c, 2);
  const TensorView& a = c.input(0);
  const TensorView& b = c.input(1);
  const TensorView& y = c.output();
  Layout layout = c.preferred_layout({&a, &b});
  // NCHW only when every operand can follow: rank-4 values, constants of rank <= 4.
  for (const TensorView* t : {&a, &b})
    if ((t->is_constant() ? t->rank() > 4 : t->rank() != 4) || y.rank() != 4)
      layout = Layout::kNative;
  if (plain({&a, &b}, y) && y.dtype != LOOM_DTYPE_FLOAT32) {
    if (activation != 0) c.unsupported("a fused activation on an integer result");
    c.emit(onnx_op, {c.value(a, layout), c.value(b, layout)}, {c.define(y, layout)});
    return;
  }
  const std::string out = c.float_output(y, layout, activation);
  c.emit(onnx_op, {c.float_value(a, layout), c.float_value(b, layout)}, {out});
  c.finish_output(y, layout, out, activation);
}

void convert_unary(Converter& c, BuiltinOp code) {
  expect_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const Layout layout = c.preferred_layout({&x});
  const std::string in = c.float_value(x, layout);
  const std::string out = c.float_output(y, layout);
  switch (code) {
    case BuiltinOp::kRelu:
      c.emit("Relu", {in}, {out});
      break;
    case BuiltinOp::kRelu6:
      c.emit("Clip",
             {in, c.constant_f32("clip_min", {0.f}, {}), c.constant_f32("clip_max", {6.f}, {})},
             {out});
      break;
    case BuiltinOp::kReluN1To1:
      c.emit("Clip",
             {in, c.constant_f32("clip_min", {-1.f}, {}), c.constant_f32("clip_max", {1.f}, {})},
             {out});
      break;
    case BuiltinOp::kLogistic:
      c.emit("Sigmoid", {in}, {out});
      break;
    case BuiltinOp::kTanh:
      c.emit("Tanh", {in}, {out});
      break;
    case BuiltinOp::kHardSwish:
      c.emit("HardSwish", {in}, {out});
      break;
    case BuiltinOp::kExp:
      c.emit("Exp", {in}, {out});
      break;
    case BuiltinOp::kLeakyRelu: {
      const auto* o = options_of<fb::LeakyReluOptions>(c);
      c.emit("LeakyRelu", {in}, {out}, {Attr::Float("alpha", o ? o->alpha() : 0.f)});
      break;
    }
    default:
      c.unsupported("internal: not a unary operator");
  }
  c.finish_output(y, layout, out);
}

void convert_softmax(Converter& c) {
  expect_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (x.rank() < 1) c.invalid("SOFTMAX needs an input of rank >= 1");
  const auto* o = options_of<fb::SoftmaxOptions>(c);
  const float beta = o ? o->beta() : 1.f;
  const Layout layout = c.preferred_layout({&x});
  std::string in = c.float_value(x, layout);
  if (beta != 1.f) {
    const std::string scaled = c.fresh(y.name + "/beta");
    c.emit("Mul", {in, c.constant_f32("softmax_beta", {beta}, {})}, {scaled});
    in = scaled;
  }
  // TFLite normalizes the last (channel) axis: axis 1 in NCHW.
  const int64_t axis = layout == Layout::kNchw ? 1 : x.rank() - 1;
  const std::string out = c.float_output(y, layout);
  c.emit("Softmax", {in}, {out}, {Attr::Int("axis", axis)});
  c.finish_output(y, layout, out);
}

template <typename Options>
int activation_of(const Converter& c) {
  const auto* o = options_of<Options>(c);
  return o ? static_cast<int>(o->fused_activation_function()) : 0;
}

}  // namespace

bool convert_elementwise(Converter& c, int32_t code) {
  const auto op = static_cast<BuiltinOp>(code);
  switch (op) {
    case BuiltinOp::kAdd:
      convert_binary(c, "Add", activation_of<fb::AddOptions>(c));
      return true;
    case BuiltinOp::kSub:
      convert_binary(c, "Sub", activation_of<fb::SubOptions>(c));
      return true;
    case BuiltinOp::kMul:
      convert_binary(c, "Mul", activation_of<fb::MulOptions>(c));
      return true;
    case BuiltinOp::kDiv:
      convert_binary(c, "Div", activation_of<fb::DivOptions>(c));
      return true;
    case BuiltinOp::kMaximum:
      convert_binary(c, "Max", 0);
      return true;
    case BuiltinOp::kMinimum:
      convert_binary(c, "Min", 0);
      return true;
    case BuiltinOp::kRelu:
    case BuiltinOp::kRelu6:
    case BuiltinOp::kReluN1To1:
    case BuiltinOp::kLogistic:
    case BuiltinOp::kTanh:
    case BuiltinOp::kHardSwish:
    case BuiltinOp::kExp:
    case BuiltinOp::kLeakyRelu:
      convert_unary(c, op);
      return true;
    case BuiltinOp::kSoftmax:
      convert_softmax(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
