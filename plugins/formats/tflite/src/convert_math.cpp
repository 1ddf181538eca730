// Math operators (tflite issue #27): unary math (SQRT RSQRT SQUARE ABS NEG LOG SIN COS FLOOR
// CEIL ROUND SIGN ELU GELU LOG_SOFTMAX), binary math (SQUARED_DIFFERENCE POW FLOOR_DIV
// FLOOR_MOD PRELU), comparisons and logic (LESS ... NOT_EQUAL, LOGICAL_*, SELECT, SELECT_V2),
// ADD_N, CAST and ZEROS_LIKE. The reductions and normalizations are in convert_reduce.cpp.
//
// Like convert_elementwise, every operator works in the layout its input already has (axes
// remapped in nchw), and quantized operands go through Dequantize -> float op -> Quantize.
#include <algorithm>
#include <cmath>
#include <loom/plugin.hpp>

#include "convert_support.hpp"
#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

// numpy broadcasting of static shapes (-1: a dynamic batch, compatible with anything).
std::vector<int64_t> broadcast_shape(const Converter& c,
                                     std::initializer_list<const TensorView*> inputs) {
  size_t rank = 0;
  for (const TensorView* t : inputs) rank = std::max(rank, t->shape.size());
  std::vector<int64_t> out(rank, 1);
  for (const TensorView* t : inputs) {
    const size_t offset = rank - t->shape.size();
    for (size_t i = 0; i < t->shape.size(); ++i) {
      const int64_t d = t->shape[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1 || o == -1) {  // -1 (a dynamic batch) is taken to match
        o = d;
        continue;
      }
      if (d == -1) continue;
      std::string shapes;
      for (const TensorView* u : inputs) shapes += " " + shape_text(u->shape);
      c.invalid("operand shapes" + shapes + " do not broadcast");
    }
  }
  return out;
}

// The layout of an elementwise operator over `inputs`: nchw when an input already lives there
// and every operand can follow (rank-4 values, constants of rank <= 4, a rank-4 result).
Layout elementwise_layout(const Converter& c, std::initializer_list<const TensorView*> inputs,
                          const TensorView& y) {
  Layout layout = c.preferred_layout(inputs);
  for (const TensorView* t : inputs)
    if ((t->is_constant() ? t->rank() > 4 : t->rank() != 4) || y.rank() != 4)
      layout = Layout::kNative;
  return layout;
}

// ---- unary -----------------------------------------------------------------------------------

// y = 0.5 x (1 + erf(x / sqrt 2)), or with `approximate` TFLite's tanh form
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). Gelu itself is an opset-20 operator and the
// plugin's graphs are opset 17, so it is spelled out.
void emit_gelu(Converter& c, const std::string& x, const std::string& out, bool approximate,
               const std::string& base) {
  const std::string inner = c.fresh(base + "/gelu_inner");
  if (approximate) {
    const std::string x2 = c.fresh(base + "/gelu_x2"), x3 = c.fresh(base + "/gelu_x3");
    const std::string cubic = c.fresh(base + "/gelu_cubic"), sum = c.fresh(base + "/gelu_sum");
    c.emit("Mul", {x, x}, {x2});
    c.emit("Mul", {x2, x}, {x3});
    c.emit("Mul", {x3, scalar_f32(c, "gelu_k", 0.044715f)}, {cubic});
    c.emit("Add", {x, cubic}, {sum});
    const std::string scaled = c.fresh(base + "/gelu_scaled");
    c.emit("Mul", {sum, scalar_f32(c, "gelu_sqrt_2_over_pi", 0.7978845608028654f)}, {scaled});
    c.emit("Tanh", {scaled}, {inner});
  } else {
    const std::string scaled = c.fresh(base + "/gelu_scaled");
    c.emit("Mul", {x, scalar_f32(c, "gelu_rsqrt2", 0.7071067811865476f)}, {scaled});
    c.emit("Erf", {scaled}, {inner});
  }
  // (x * (1 + inner)) * 0.5: the order onednn's GELU rewrite recognizes for the erf form.
  const std::string one_plus = c.fresh(base + "/gelu_1p"), x_1p = c.fresh(base + "/gelu_x1p");
  c.emit("Add", {inner, scalar_f32(c, "gelu_one", 1.f)}, {one_plus});
  c.emit("Mul", {x, one_plus}, {x_1p});
  c.emit("Mul", {x_1p, scalar_f32(c, "gelu_half", 0.5f)}, {out});
}

void convert_unary(Converter& c, BuiltinOp code) {
  expect_exact_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  expect_shape(c, y, x.shape);
  const Layout layout = c.preferred_layout({&x});
  // Integer ABS/NEG/SQUARE/SIGN (int32, int64) compute on the values themselves.
  const bool integer = plain({&x}, y) && y.dtype != LOOM_DTYPE_FLOAT32;
  if (integer && code != BuiltinOp::kAbs && code != BuiltinOp::kNeg && code != BuiltinOp::kSquare &&
      code != BuiltinOp::kSign)
    c.unsupported(std::string("a ") + sdk::dtype_name(y.dtype) +
                  " operand (float32 or quantized int8/uint8 only)");
  const std::string in = integer ? c.value(x, layout) : c.float_value(x, layout);
  const std::string out = integer ? c.define(y, layout) : c.float_output(y, layout);
  auto simple = [&](const char* onnx_op) { c.emit(onnx_op, {in}, {out}); };
  switch (code) {
    case BuiltinOp::kSqrt:
      simple("Sqrt");
      break;
    case BuiltinOp::kRsqrt: {
      const std::string root = c.fresh(y.name + "/sqrt");
      c.emit("Sqrt", {in}, {root});
      c.emit("Reciprocal", {root}, {out});
      break;
    }
    case BuiltinOp::kSquare:
      c.emit("Mul", {in, in}, {out});
      break;
    case BuiltinOp::kAbs:
      simple("Abs");
      break;
    case BuiltinOp::kNeg:
      simple("Neg");
      break;
    case BuiltinOp::kLog:
      simple("Log");
      break;
    case BuiltinOp::kSin:
      simple("Sin");
      break;
    case BuiltinOp::kCos:
      simple("Cos");
      break;
    case BuiltinOp::kFloor:
      simple("Floor");
      break;
    case BuiltinOp::kCeil:
      simple("Ceil");
      break;
    case BuiltinOp::kRound:  // both round half to even
      simple("Round");
      break;
    case BuiltinOp::kSign:
      simple("Sign");
      break;
    case BuiltinOp::kElu:  // TFLite's ELU has no alpha: 1
      c.emit("Elu", {in}, {out}, {Attr::Float("alpha", 1.f)});
      break;
    case BuiltinOp::kGelu: {
      const auto* o = options_of<fb::GeluOptions>(c);
      emit_gelu(c, in, out, o && o->approximate(), y.name);
      break;
    }
    case BuiltinOp::kLogSoftmax:
      if (x.rank() < 1) c.invalid("LOG_SOFTMAX needs an input of rank >= 1");
      // The last (channel) axis: axis 1 in nchw.
      c.emit("LogSoftmax", {in}, {out},
             {Attr::Int("axis", layout == Layout::kNchw ? 1 : x.rank() - 1)});
      break;
    default:
      c.unsupported("internal: not a unary math operator");
  }
  if (!integer) c.finish_output(y, layout, out);
}

// ---- binary ----------------------------------------------------------------------------------

// Emits `a op b` (float or integer) for SQUARED_DIFFERENCE POW FLOOR_DIV FLOOR_MOD.
void emit_binary_math(Converter& c, BuiltinOp code, const std::string& a, const std::string& b,
                      const std::string& out, bool integer, const std::string& base) {
  switch (code) {
    case BuiltinOp::kSquaredDifference: {
      const std::string d = c.fresh(base + "/diff");
      c.emit("Sub", {a, b}, {d});
      c.emit("Mul", {d, d}, {out});
      return;
    }
    case BuiltinOp::kPow:
      c.emit("Pow", {a, b}, {out});
      return;
    case BuiltinOp::kFloorDiv:
      if (integer) {
        // a - floor_mod(a, b) is an exact multiple of b, so the truncating Div is exact.
        const std::string m = c.fresh(base + "/mod"), d = c.fresh(base + "/multiple");
        c.emit("Mod", {a, b}, {m}, {Attr::Int("fmod", 0)});
        c.emit("Sub", {a, m}, {d});
        c.emit("Div", {d, b}, {out});
      } else {
        const std::string q = c.fresh(base + "/quotient");
        c.emit("Div", {a, b}, {q});
        c.emit("Floor", {q}, {out});
      }
      return;
    case BuiltinOp::kFloorMod:
      if (integer) {
        c.emit("Mod", {a, b}, {out}, {Attr::Int("fmod", 0)});
      } else {
        // TFLite: r = fmod(a, b); r + b where r != 0 and r, b differ in sign. (ONNX allows
        // only fmod = 1 for floats.)
        const std::string r = c.fresh(base + "/fmod"), zero = scalar_f32(c, "zero", 0.f);
        c.emit("Mod", {a, b}, {r}, {Attr::Int("fmod", 1)});
        const std::string r_zero = c.fresh(base + "/r_zero"), r_nonzero = c.fresh(base + "/r_nz");
        const std::string r_neg = c.fresh(base + "/r_neg"), b_neg = c.fresh(base + "/b_neg");
        const std::string signs = c.fresh(base + "/signs_differ"), fix = c.fresh(base + "/fix");
        const std::string shifted = c.fresh(base + "/shifted");
        c.emit("Equal", {r, zero}, {r_zero});
        c.emit("Not", {r_zero}, {r_nonzero});
        c.emit("Less", {r, zero}, {r_neg});
        c.emit("Less", {b, zero}, {b_neg});
        c.emit("Xor", {r_neg, b_neg}, {signs});
        c.emit("And", {r_nonzero, signs}, {fix});
        c.emit("Add", {r, b}, {shifted});
        c.emit("Where", {fix, shifted, r}, {out});
      }
      return;
    default:
      c.unsupported("internal: not a binary math operator");
  }
}

void convert_binary_math(Converter& c, BuiltinOp code) {
  expect_exact_inputs(c, 2);
  const TensorView& a = c.input(0);
  const TensorView& b = c.input(1);
  const TensorView& y = c.output();
  expect_shape(c, y, broadcast_shape(c, {&a, &b}));
  const Layout layout = elementwise_layout(c, {&a, &b}, y);
  if (plain({&a, &b}, y) && y.dtype != LOOM_DTYPE_FLOAT32) {
    if (y.dtype != LOOM_DTYPE_INT32 && y.dtype != LOOM_DTYPE_INT64)
      c.unsupported(std::string("a ") + sdk::dtype_name(y.dtype) +
                    " result (float32, int32, int64 or quantized only)");
    emit_binary_math(c, code, c.value(a, layout), c.value(b, layout), c.define(y, layout), true,
                     y.name);
    return;
  }
  const std::string out = c.float_output(y, layout);
  emit_binary_math(c, code, c.float_value(a, layout), c.float_value(b, layout), out, false, y.name);
  c.finish_output(y, layout, out);
}

void convert_prelu(Converter& c) {
  expect_exact_inputs(c, 2);
  const TensorView& x = c.input(0);
  const TensorView& alpha = c.input(1);
  const TensorView& y = c.output();
  // ONNX PRelu broadcasts the slope to the input only (TFLite models always have that form).
  if (broadcast_shape(c, {&x, &alpha}) != x.shape)
    c.unsupported("alpha " + shape_text(alpha.shape) + " must broadcast to the input shape " +
                  shape_text(x.shape));
  expect_shape(c, y, x.shape);
  const Layout layout = elementwise_layout(c, {&x, &alpha}, y);
  const std::string out = c.float_output(y, layout);
  c.emit("PRelu", {c.float_value(x, layout), c.float_value(alpha, layout)}, {out});
  c.finish_output(y, layout, out);
}

// LESS ... NOT_EQUAL: quantized operands are compared as real values (what TFLite's rescaling
// comparison computes), others on their stored values.
void convert_compare(Converter& c, const char* onnx_op, bool negate) {
  expect_exact_inputs(c, 2);
  const TensorView& a = c.input(0);
  const TensorView& b = c.input(1);
  const TensorView& y = c.output();
  if (y.dtype != LOOM_DTYPE_BOOL) c.invalid("the output must be bool");
  expect_shape(c, y, broadcast_shape(c, {&a, &b}));
  const Layout layout = elementwise_layout(c, {&a, &b}, y);
  std::string ia, ib;
  if (!a.quantized && !b.quantized) {
    if (a.dtype != b.dtype)
      c.invalid(std::string("operands of different types (") + sdk::dtype_name(a.dtype) + ", " +
                sdk::dtype_name(b.dtype) + ")");
    ia = c.value(a, layout);
    ib = c.value(b, layout);
  } else {
    ia = c.float_value(a, layout);
    ib = c.float_value(b, layout);
  }
  if (!negate) {
    c.emit(onnx_op, {ia, ib}, {c.define(y, layout)});
    return;
  }
  const std::string eq = c.fresh(y.name + "/equal");
  c.emit(onnx_op, {ia, ib}, {eq});
  c.emit("Not", {eq}, {c.define(y, layout)});
}

void convert_logical(Converter& c, const char* onnx_op) {
  const bool unary = std::string(onnx_op) == "Not";
  expect_exact_inputs(c, unary ? 1 : 2);
  const TensorView& y = c.output();
  std::vector<const TensorView*> ins;
  for (size_t i = 0; i < (unary ? 1u : 2u); ++i) ins.push_back(&c.input(i));
  for (const TensorView* t : ins)
    if (t->dtype != LOOM_DTYPE_BOOL) c.invalid("operand '" + t->name + "' is not bool");
  if (y.dtype != LOOM_DTYPE_BOOL) c.invalid("the output must be bool");
  if (unary) {
    expect_shape(c, y, ins[0]->shape);
    const Layout layout = c.preferred_layout({ins[0]});
    c.emit(onnx_op, {c.value(*ins[0], layout)}, {c.define(y, layout)});
    return;
  }
  expect_shape(c, y, broadcast_shape(c, {ins[0], ins[1]}));
  const Layout layout = elementwise_layout(c, {ins[0], ins[1]}, y);
  c.emit(onnx_op, {c.value(*ins[0], layout), c.value(*ins[1], layout)}, {c.define(y, layout)});
}

// SELECT (v1: a rank-1 condition picks whole rows along dimension 0, otherwise same shapes)
// and SELECT_V2 (numpy broadcasting of all three).
void convert_select(Converter& c, bool v2) {
  expect_exact_inputs(c, 3);
  const TensorView& cond = c.input(0);
  const TensorView& a = c.input(1);
  const TensorView& b = c.input(2);
  const TensorView& y = c.output();
  if (cond.dtype != LOOM_DTYPE_BOOL) c.invalid("the condition must be bool");
  const bool rows = !v2 && cond.rank() == 1 && a.rank() > 1;
  if (!v2) {
    if (a.shape != b.shape) c.invalid("SELECT needs operands of one shape");
    if (rows ? (a.shape[0] != -1 && cond.shape[0] != a.shape[0]) : cond.shape != a.shape)
      c.invalid("the condition " + shape_text(cond.shape) + " must have the operands' shape " +
                shape_text(a.shape) + " or be a vector over their first dimension");
    expect_shape(c, y, a.shape);
  } else {
    expect_shape(c, y, broadcast_shape(c, {&cond, &a, &b}));
  }
  // A rank-1 row condition is reshaped to [n, 1, ...] (dimension 0 is N in either layout).
  const Layout layout =
      rows ? elementwise_layout(c, {&a, &b}, y) : elementwise_layout(c, {&cond, &a, &b}, y);
  std::string condition = c.value(cond, rows ? Layout::kNative : layout);
  if (rows) {
    std::vector<int64_t> dims(a.rank(), 1);
    dims[0] = -1;
    const std::string reshaped = c.fresh(cond.name + "/rows");
    c.emit("Reshape", {condition, c.constant_i64("rows_shape", dims)}, {reshaped});
    condition = reshaped;
  }
  // TFLite's SELECT copies the stored values, whatever the operands' quantization parameters.
  const bool same = a.dtype == y.dtype && b.dtype == y.dtype;
  if (same) {
    c.emit("Where", {condition, c.value(a, layout), c.value(b, layout)}, {c.define(y, layout)});
    return;
  }
  const std::string out = c.float_output(y, layout);
  c.emit("Where", {condition, c.float_value(a, layout), c.float_value(b, layout)}, {out});
  c.finish_output(y, layout, out);
}

void convert_add_n(Converter& c) {
  const TensorView& y = c.output();
  std::vector<const TensorView*> ins;
  for (size_t i = 0; i < c.op().inputs.size(); ++i) ins.push_back(&c.input(i));
  if (ins.empty()) c.invalid("ADD_N without inputs");
  bool direct = !y.quantized;
  Layout layout = Layout::kNative;
  for (const TensorView* t : ins) {
    if (t->shape != ins[0]->shape)
      c.invalid("ADD_N needs inputs of one shape, got " + shape_text(ins[0]->shape) + " and " +
                shape_text(t->shape));
    direct = direct && !t->quantized && t->dtype == y.dtype;
    if (c.preferred_layout({t}) == Layout::kNchw) layout = Layout::kNchw;
  }
  expect_shape(c, y, ins[0]->shape);
  for (const TensorView* t : ins)
    if (t->rank() != 4) layout = Layout::kNative;
  std::vector<std::string> names;
  if (direct && y.dtype != LOOM_DTYPE_FLOAT32) {
    // ONNX Sum takes floats only: integers are added pairwise.
    std::string acc = c.value(*ins[0], layout);
    for (size_t i = 1; i < ins.size(); ++i) {
      const std::string next = i + 1 == ins.size() ? c.define(y, layout) : c.fresh(y.name + "/sum");
      c.emit("Add", {acc, c.value(*ins[i], layout)}, {next});
      acc = next;
    }
    if (ins.size() == 1) c.emit("Identity", {acc}, {c.define(y, layout)});
    return;
  }
  if (direct) {
    for (const TensorView* t : ins) names.push_back(c.value(*t, layout));
    c.emit("Sum", names, {c.define(y, layout)});
    return;
  }
  for (const TensorView* t : ins) names.push_back(c.float_value(*t, layout));
  const std::string out = c.float_output(y, layout);
  c.emit("Sum", names, {out});
  c.finish_output(y, layout, out);
}

// ---- types and constants ---------------------------------------------------------------------

// CAST converts the stored values (TFLite ignores quantization parameters here too).
void convert_cast(Converter& c) {
  expect_exact_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  expect_shape(c, y, x.shape);
  const Layout layout = c.preferred_layout({&x});
  c.emit("Cast", {c.value(x, layout)}, {c.define(y, layout)}, {Attr::Int("to", y.dtype)});
}

void convert_zeros_like(Converter& c) {
  expect_exact_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  expect_shape(c, y, x.shape);
  if (x.dtype != y.dtype) c.invalid("the output type differs from the input type");
  if (y.dtype != LOOM_DTYPE_FLOAT32 && y.dtype != LOOM_DTYPE_INT32 && y.dtype != LOOM_DTYPE_INT64)
    c.unsupported(std::string("a ") + sdk::dtype_name(y.dtype) +
                  " operand (TFLite's ZEROS_LIKE takes float32, int32, int64)");
  const Layout layout = c.preferred_layout({&x});
  // Expand of a zero scalar to the input's run-time shape (the batch may be dynamic).
  const std::string shape = c.fresh(y.name + "/shape");
  c.emit("Shape", {c.value(x, layout)}, {shape});
  const std::vector<uint8_t> zero(sdk::dtype_size(y.dtype), 0);
  c.emit("Expand", {c.constant_raw("zero", y.dtype, {}, zero), shape}, {c.define(y, layout)});
}

}  // namespace

bool convert_math(Converter& c, int32_t code) {
  const auto op = static_cast<BuiltinOp>(code);
  switch (op) {
    case BuiltinOp::kSqrt:
    case BuiltinOp::kRsqrt:
    case BuiltinOp::kSquare:
    case BuiltinOp::kAbs:
    case BuiltinOp::kNeg:
    case BuiltinOp::kLog:
    case BuiltinOp::kSin:
    case BuiltinOp::kCos:
    case BuiltinOp::kFloor:
    case BuiltinOp::kCeil:
    case BuiltinOp::kRound:
    case BuiltinOp::kSign:
    case BuiltinOp::kElu:
    case BuiltinOp::kGelu:
    case BuiltinOp::kLogSoftmax:
      convert_unary(c, op);
      return true;
    case BuiltinOp::kSquaredDifference:
    case BuiltinOp::kPow:
    case BuiltinOp::kFloorDiv:
    case BuiltinOp::kFloorMod:
      convert_binary_math(c, op);
      return true;
    case BuiltinOp::kPrelu:
      convert_prelu(c);
      return true;
    case BuiltinOp::kLess:
      convert_compare(c, "Less", false);
      return true;
    case BuiltinOp::kLessEqual:
      convert_compare(c, "LessOrEqual", false);
      return true;
    case BuiltinOp::kGreater:
      convert_compare(c, "Greater", false);
      return true;
    case BuiltinOp::kGreaterEqual:
      convert_compare(c, "GreaterOrEqual", false);
      return true;
    case BuiltinOp::kEqual:
      convert_compare(c, "Equal", false);
      return true;
    case BuiltinOp::kNotEqual:
      convert_compare(c, "Equal", true);
      return true;
    case BuiltinOp::kLogicalAnd:
      convert_logical(c, "And");
      return true;
    case BuiltinOp::kLogicalOr:
      convert_logical(c, "Or");
      return true;
    case BuiltinOp::kLogicalNot:
      convert_logical(c, "Not");
      return true;
    case BuiltinOp::kSelect:
      convert_select(c, false);
      return true;
    case BuiltinOp::kSelectV2:
      convert_select(c, true);
      return true;
    case BuiltinOp::kAddN:
      convert_add_n(c);
      return true;
    case BuiltinOp::kCast:
      convert_cast(c);
      return true;
    case BuiltinOp::kZerosLike:
      convert_zeros_like(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
