// QUANTIZE (QuantizeLinear; requantization between two quantized types through float) and
// DEQUANTIZE (DequantizeLinear; float16 weights become a Cast). Both keep their operand's
// layout, remapping a per-channel axis when the value is held in NCHW.
#include <loom/plugin.hpp>

#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

void convert_quantize_op(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (!y.quantized) c.invalid("the output of QUANTIZE has no quantization parameters");
  const Layout layout = x.rank() == 4 ? c.preferred_layout({&x}) : Layout::kNative;
  // float_value dequantizes a quantized input first: requantization = dequantize + quantize.
  const std::string in = c.float_value(x, layout);
  c.finish_output(y, layout, in);
}

void convert_dequantize_op(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  if (y.dtype != LOOM_DTYPE_FLOAT32)
    c.unsupported("DEQUANTIZE to " + std::string(sdk::dtype_name(y.dtype)));
  const Layout layout = x.rank() == 4 ? c.preferred_layout({&x}) : Layout::kNative;
  if (x.dtype == LOOM_DTYPE_FLOAT16) {
    c.emit("Cast", {c.value(x, layout)}, {c.define(y, layout)},
           {Attr::Int("to", LOOM_DTYPE_FLOAT32)});
    return;
  }
  if (!x.quantized) c.invalid("the input of DEQUANTIZE has no quantization parameters");
  std::vector<Attr> attrs;
  if (x.quant.per_channel())
    attrs.push_back(
        Attr::Int("axis", layout == Layout::kNchw ? nchw_axis(x.quant.axis) : x.quant.axis));
  c.emit("DequantizeLinear", {c.value(x, layout), c.scale_of(x), c.zero_point_of(x)},
         {c.define(y, layout)}, attrs);
}

}  // namespace

bool convert_quantize(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kQuantize:
      convert_quantize_op(c);
      return true;
    case BuiltinOp::kDequantize:
      convert_dequantize_op(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
