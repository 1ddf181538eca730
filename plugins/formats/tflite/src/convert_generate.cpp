// Operators that make new values from shapes and scalars: SHAPE, FILL, RANGE, ONE_HOT. Sizes
// that come from constants are checked against the element limit at load time, so that a
// hostile file cannot make the runtime allocate without bound.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <loom/plugin.hpp>

#include "convert_support.hpp"
#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

void convert_shape_op(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (y.dtype != LOOM_DTYPE_INT32 && y.dtype != LOOM_DTYPE_INT64)
    c.invalid("the output must be int32 or int64, not " + std::string(sdk::dtype_name(y.dtype)));
  // The shape of an nchw-only value, permuted back, spares a Transpose.
  const bool nchw = c.preferred_layout({&x}) == Layout::kNchw;
  const std::string shape = c.fresh(y.name + "/shape");
  c.emit("Shape", {c.value(x, nchw ? Layout::kNchw : Layout::kNative)}, {shape});
  std::string native = shape;
  if (nchw) {
    native = c.fresh(y.name + "/nhwc");
    c.emit("Gather", {shape, c.constant_i64("nhwc_order", {0, 2, 3, 1})}, {native},
           {Attr::Int("axis", 0)});
  }
  if (y.dtype == LOOM_DTYPE_INT64)
    c.emit("Identity", {native}, {c.define(y, Layout::kNative)});
  else
    c.emit("Cast", {native}, {c.define(y, Layout::kNative)}, {Attr::Int("to", LOOM_DTYPE_INT32)});
}

void convert_fill(Converter& c) {
  const TensorView& dims = c.input(0);
  const TensorView& value = c.input(1);
  const TensorView& y = c.output();
  if (dims.rank() != 1) c.invalid("dims must be a vector");
  if (value.rank() != 0 && !(value.rank() == 1 && value.shape[0] == 1))
    c.invalid("the fill value must be a scalar");
  if (dims.is_constant()) check_elements(c, c.constant_ints(dims));
  const Mover m = mover(c, {&value}, {&y}, Requant::kRequantize);
  const std::string out = m.out(y, Layout::kNative);
  c.emit("Expand", {m.in(value, Layout::kNative), int64_operand(c, dims, "fill_shape")}, {out});
  m.finish(y, Layout::kNative, out);
}

void convert_range(Converter& c) {
  const TensorView& y = c.output();
  std::vector<std::string> inputs;
  for (size_t i = 0; i < 3; ++i) {
    const TensorView& t = c.input(i);
    if (t.dtype != y.dtype)
      c.invalid("start, limit and delta must have the output's type " +
                std::string(sdk::dtype_name(y.dtype)));
    if (t.rank() != 0 && !(t.rank() == 1 && t.shape[0] == 1))
      c.invalid("start, limit and delta must be scalars");
    if (t.quantized) c.unsupported("a quantized RANGE");
    std::string v = c.value(t, Layout::kNative);
    if (t.rank() == 1) {
      const std::string scalar = c.fresh(t.name + "/scalar");
      c.emit("Squeeze", {v, c.constant_i64("axes", {0})}, {scalar});
      v = scalar;
    }
    inputs.push_back(v);
  }
  if (y.dtype != LOOM_DTYPE_INT32 && y.dtype != LOOM_DTYPE_INT64 && y.dtype != LOOM_DTYPE_FLOAT32)
    c.unsupported("RANGE of " + std::string(sdk::dtype_name(y.dtype)));
  const TensorView& delta = c.input(2);
  if (delta.is_constant()) {
    bool zero = false;
    if (delta.dtype == LOOM_DTYPE_FLOAT32)
      zero = c.dequantized_data(delta)[0] == 0.f;
    else
      zero = c.constant_ints(delta)[0] == 0;
    if (zero) c.invalid("delta is 0");
    if (c.input(0).is_constant() && c.input(1).is_constant()) {
      // Constant bounds: the length must be valid and bounded (TensorFlow's own checks).
      auto scalar = [&](const TensorView& t) {
        return t.dtype == LOOM_DTYPE_FLOAT32 ? static_cast<double>(c.dequantized_data(t)[0])
                                             : static_cast<double>(c.constant_ints(t)[0]);
      };
      const double start = scalar(c.input(0)), limit = scalar(c.input(1)), step = scalar(delta);
      if ((step > 0 && start > limit) || (step < 0 && start < limit))
        c.invalid("start, limit and delta give a negative length");
      const double length = std::ceil(std::abs((limit - start) / step));
      if (!(length <= static_cast<double>(kMaxTensorElements)))
        c.invalid("the range would have more than 2^31 elements");
    }
  }
  c.emit("Range", inputs, {c.define(y, Layout::kNative)});
}

void convert_one_hot(Converter& c) {
  const TensorView& indices = c.input(0);
  const TensorView& depth = c.input(1);
  const TensorView& on = c.input(2);
  const TensorView& off = c.input(3);
  const TensorView& y = c.output();
  const auto* o = options_of<fb::OneHotOptions>(c);
  int64_t axis = o ? o->axis() : -1;
  if (axis < -1 || axis > indices.rank())
    c.invalid("axis " + std::to_string(axis) + " is outside [-1, " +
              std::to_string(indices.rank()) + "]");
  if (on.dtype != y.dtype || off.dtype != y.dtype)
    c.invalid("on_value and off_value must have the output's type");
  if (on.quantized || off.quantized) {
    if (!same_quantization(on, y) || !same_quantization(off, y))
      c.unsupported("quantized on/off values with a quantization other than the output's");
  }
  if (on.rank() > 1 || off.rank() > 1 || depth.rank() > 1)
    c.invalid("depth, on_value and off_value must be scalars");
  if (depth.is_constant()) {
    std::vector<int64_t> result = indices.shape;
    result.push_back(constant_scalar(c, depth, "depth"));
    check_elements(c, result);
  }
  // ONNX takes [off, on] as one 2-element tensor.
  const std::string shape1 = c.constant_i64("shape", {1});
  std::vector<std::string> pair;
  for (const TensorView* t : {&off, &on}) {
    pair.push_back(c.fresh(t->name + "/vector"));
    c.emit("Reshape", {c.value(*t, Layout::kNative), shape1}, {pair.back()});
  }
  const std::string values = c.fresh(y.name + "/values");
  c.emit("Concat", pair, {values}, {Attr::Int("axis", 0)});
  c.emit("OneHot", {c.value(indices, Layout::kNative), c.value(depth, Layout::kNative), values},
         {c.define(y, Layout::kNative)}, {Attr::Int("axis", axis)});
}

}  // namespace

bool convert_generate(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kShape:
      convert_shape_op(c);
      return true;
    case BuiltinOp::kFill:
      convert_fill(c);
      return true;
    case BuiltinOp::kRange:
      convert_range(c);
      return true;
    case BuiltinOp::kOneHot:
      convert_one_hot(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
