// Reductions (tflite issue #27: SUM, REDUCE_MAX/MIN/PROD/ANY/ALL, ARG_MAX/ARG_MIN, CUMSUM) and
// the normalizations L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION. Like the other math
// operators they work in the layout their input already has (axes remapped in nchw), and
// quantized operands go through Dequantize -> float op -> Quantize.
#include <algorithm>
#include <cmath>
#include <loom/plugin.hpp>

#include "convert_support.hpp"
#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

// ---- reductions ------------------------------------------------------------------------------

enum class Reduce { kSum, kMax, kMin, kProd, kAny, kAll };

// Reduced-axes operators follow MEAN (convert_shape.cpp): axes remapped in nchw, and without
// keep_dims the nchw form is read only when the kept dimensions come out in TFLite's order.
struct ReducedLayout {
  Layout in, out;
};
ReducedLayout reduced_layout(const Converter& c, const TensorView& x,
                             const std::vector<int64_t>& axes, bool keep_dims) {
  ReducedLayout l{c.preferred_layout({&x}), c.preferred_layout({&x})};
  if (l.in == Layout::kNchw && !keep_dims) {
    std::vector<int64_t> nhwc_kept, nchw_kept;
    for (int64_t d : {0, 1, 2, 3})
      if (!std::count(axes.begin(), axes.end(), d)) nhwc_kept.push_back(d);
    for (int64_t d : {0, 3, 1, 2})
      if (!std::count(axes.begin(), axes.end(), d)) nchw_kept.push_back(d);
    if (nhwc_kept != nchw_kept) l.in = Layout::kNative;
    l.out = Layout::kNative;
  }
  return l;
}

void convert_reduce(Converter& c, Reduce kind) {
  expect_exact_inputs(c, 2);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const auto* o = options_of<fb::ReducerOptions>(c);
  const bool keep_dims = o && o->keep_dims();
  std::vector<int64_t> axes;
  for (int64_t a : c.constant_ints(c.input(1))) axes.push_back(normalized_axis(c, a, x.rank()));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  std::vector<int64_t> expected;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!std::count(axes.begin(), axes.end(), d))
      expected.push_back(x.shape[d]);
    else if (keep_dims)
      expected.push_back(1);
  }
  expect_shape(c, y, expected);
  const ReducedLayout l = reduced_layout(c, x, axes, keep_dims);
  std::vector<int64_t> onnx_axes;
  for (int64_t a : axes) onnx_axes.push_back(l.in == Layout::kNchw ? nchw_axis(a) : a);
  std::sort(onnx_axes.begin(), onnx_axes.end());
  const bool logical = kind == Reduce::kAny || kind == Reduce::kAll;
  const bool integer = !logical && plain({&x}, y) && y.dtype != LOOM_DTYPE_FLOAT32;
  if (logical && (x.dtype != LOOM_DTYPE_BOOL || y.dtype != LOOM_DTYPE_BOOL))
    c.invalid("REDUCE_ANY/REDUCE_ALL need bool input and output");
  std::string in, out;
  if (logical) {
    // ONNX reductions take no bool before opset 20: any = max, all = min over 0/1 int32.
    in = c.fresh(x.name + "/as_int");
    c.emit("Cast", {c.value(x, l.in)}, {in}, {Attr::Int("to", LOOM_DTYPE_INT32)});
    out = c.fresh(y.name + "/as_int");
  } else if (integer) {
    in = c.value(x, l.in);
    out = c.define(y, l.out);
  } else {
    in = c.float_value(x, l.in);
    out = c.float_output(y, l.out);
  }
  if (axes.empty()) {
    c.emit("Identity", {in}, {out});
  } else {
    const Attr keep = Attr::Int("keepdims", keep_dims ? 1 : 0);
    switch (kind) {
      case Reduce::kSum:  // axes are an input from opset 13
        c.emit("ReduceSum", {in, c.constant_i64("axes", onnx_axes)}, {out}, {keep});
        break;
      case Reduce::kMax:
      case Reduce::kAny:
        c.emit("ReduceMax", {in}, {out}, {Attr::Ints("axes", onnx_axes), keep});
        break;
      case Reduce::kMin:
      case Reduce::kAll:
        c.emit("ReduceMin", {in}, {out}, {Attr::Ints("axes", onnx_axes), keep});
        break;
      case Reduce::kProd:
        c.emit("ReduceProd", {in}, {out}, {Attr::Ints("axes", onnx_axes), keep});
        break;
    }
  }
  if (logical)
    c.emit("Cast", {out}, {c.define(y, l.out)}, {Attr::Int("to", LOOM_DTYPE_BOOL)});
  else if (!integer)
    c.finish_output(y, l.out, out);
}

void convert_arg(Converter& c, bool is_max) {
  expect_exact_inputs(c, 2);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (x.rank() < 1) c.invalid("needs an input of rank >= 1");
  const int64_t axis = single_axis(c, c.input(1), x.rank());
  if (y.dtype != LOOM_DTYPE_INT32 && y.dtype != LOOM_DTYPE_INT64)
    c.invalid(std::string("the output must be int32 or int64, not ") + sdk::dtype_name(y.dtype));
  std::vector<int64_t> expected = x.shape;
  expected.erase(expected.begin() + axis);
  expect_shape(c, y, expected);
  const ReducedLayout l = reduced_layout(c, x, {axis}, false);
  // Quantized values order like their real values (positive scale), so the stored values are
  // searched directly. Both frameworks return the first index of equal extremes.
  const std::vector<Attr> attrs = {
      Attr::Int("axis", l.in == Layout::kNchw ? nchw_axis(axis) : axis), Attr::Int("keepdims", 0),
      Attr::Int("select_last_index", 0)};
  const char* onnx_op = is_max ? "ArgMax" : "ArgMin";
  if (y.dtype == LOOM_DTYPE_INT64) {
    c.emit(onnx_op, {c.value(x, l.in)}, {c.define(y, l.out)}, attrs);
    return;
  }
  const std::string index = c.fresh(y.name + "/int64");
  c.emit(onnx_op, {c.value(x, l.in)}, {index}, attrs);
  c.emit("Cast", {index}, {c.define(y, l.out)}, {Attr::Int("to", LOOM_DTYPE_INT32)});
}

void convert_cumsum(Converter& c) {
  expect_exact_inputs(c, 2);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (x.rank() < 1) c.invalid("needs an input of rank >= 1");
  const int64_t axis = single_axis(c, c.input(1), x.rank());
  expect_shape(c, y, x.shape);
  const auto* o = options_of<fb::CumsumOptions>(c);
  const Layout layout = c.preferred_layout({&x});
  const std::string axis_name =
      c.constant_i64("cumsum_axis", {layout == Layout::kNchw ? nchw_axis(axis) : axis}, {});
  const std::vector<Attr> attrs = {Attr::Int("exclusive", o && o->exclusive() ? 1 : 0),
                                   Attr::Int("reverse", o && o->reverse() ? 1 : 0)};
  if (plain({&x}, y)) {
    c.emit("CumSum", {c.value(x, layout), axis_name}, {c.define(y, layout)}, attrs);
    return;
  }
  const std::string out = c.float_output(y, layout);
  c.emit("CumSum", {c.float_value(x, layout), axis_name}, {out}, attrs);
  c.finish_output(y, layout, out);
}

// ---- normalizations --------------------------------------------------------------------------

// x / max(sqrt(sum(x^2)), 1e-6) over the last axis, TFLite's reference formula.
void convert_l2_normalization(Converter& c) {
  expect_exact_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (x.rank() < 1) c.invalid("needs an input of rank >= 1");
  expect_shape(c, y, x.shape);
  const auto* o = options_of<fb::L2NormOptions>(c);
  const int activation = o ? static_cast<int>(o->fused_activation_function()) : 0;
  const Layout layout = c.preferred_layout({&x});
  const int64_t axis = layout == Layout::kNchw ? 1 : x.rank() - 1;
  const std::string in = c.float_value(x, layout);
  const std::string sq = c.fresh(y.name + "/square"), sum = c.fresh(y.name + "/sum_squares");
  const std::string norm = c.fresh(y.name + "/norm"), clamped = c.fresh(y.name + "/norm_eps");
  c.emit("Mul", {in, in}, {sq});
  c.emit("ReduceSum", {sq, c.constant_i64("l2_axis", {axis})}, {sum}, {Attr::Int("keepdims", 1)});
  c.emit("Sqrt", {sum}, {norm});
  c.emit("Max", {norm, scalar_f32(c, "l2_epsilon", 1e-6f)}, {clamped});
  const std::string out = c.float_output(y, layout, activation);
  c.emit("Div", {in, clamped}, {out});
  c.finish_output(y, layout, out, activation);
}

// TFLite: y_c = x_c / (bias + alpha * sum_{|j-c| <= radius} x_j^2)^beta over the last axis.
// ONNX LRN sums the same window over axis 1 for size = 2 radius + 1 and divides alpha by size,
// so it runs on the nchw form with alpha * size.
void convert_lrn(Converter& c) {
  expect_exact_inputs(c, 1);
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (x.rank() != 4) c.invalid("needs a rank-4 input, got rank " + std::to_string(x.rank()));
  expect_shape(c, y, x.shape);
  const auto* o = options_of<fb::LocalResponseNormalizationOptions>(c);
  if (!o) c.invalid("LocalResponseNormalizationOptions are missing");
  const int64_t radius = o->radius();
  if (radius < 0 || radius > (int64_t{1} << 20))
    c.invalid("radius " + std::to_string(radius) + " is outside [0, 2^20]");
  const int64_t size = 2 * radius + 1;
  const float alpha = o->alpha() * static_cast<float>(size);
  if (!std::isfinite(alpha) || !std::isfinite(o->bias()) || !std::isfinite(o->beta()))
    c.invalid("bias, alpha and beta must be finite");
  const std::string out = c.float_output(y, Layout::kNchw);
  c.emit("LRN", {c.float_value(x, Layout::kNchw)}, {out},
         {Attr::Int("size", size), Attr::Float("alpha", alpha), Attr::Float("beta", o->beta()),
          Attr::Float("bias", o->bias())});
  c.finish_output(y, Layout::kNchw, out);
}

}  // namespace

bool convert_reduce(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kSum:
      convert_reduce(c, Reduce::kSum);
      return true;
    case BuiltinOp::kReduceMax:
      convert_reduce(c, Reduce::kMax);
      return true;
    case BuiltinOp::kReduceMin:
      convert_reduce(c, Reduce::kMin);
      return true;
    case BuiltinOp::kReduceProd:
      convert_reduce(c, Reduce::kProd);
      return true;
    case BuiltinOp::kReduceAny:
      convert_reduce(c, Reduce::kAny);
      return true;
    case BuiltinOp::kReduceAll:
      convert_reduce(c, Reduce::kAll);
      return true;
    case BuiltinOp::kArgMax:
      convert_arg(c, true);
      return true;
    case BuiltinOp::kArgMin:
      convert_arg(c, false);
      return true;
    case BuiltinOp::kCumsum:
      convert_cumsum(c);
      return true;
    case BuiltinOp::kL2Normalization:
      convert_l2_normalization(c);
      return true;
    case BuiltinOp::kLocalResponseNormalization:
      convert_lrn(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
