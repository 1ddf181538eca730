// QuantizeLinear (10, 13), DequantizeLinear (10, 13) and DynamicQuantizeLinear (11):
//   q = saturate(round_half_even(x / scale) + zero_point)       per tensor or per axis
//   x = (q - zero_point) * scale
#include <algorithm>

#include "quantize_common.hpp"

namespace loom::cpu {
namespace {

void quantize_linear(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& scale_t = ctx.required_input(1);
  const loom_tensor_t* zp_t = ctx.input(2);
  const auto dims = misc::dims_of(x);
  const int64_t axis = ctx.opset() >= 13 ? ctx.attrs().get_int("axis", 1) : 1;
  const loom_dtype_t out_type = zp_t ? zp_t->dtype : LOOM_DTYPE_UINT8;
  quant::require_quantized_type(out_type, where, "y_zero_point");
  if (scale_t.dtype != LOOM_DTYPE_FLOAT32 && scale_t.dtype != LOOM_DTYPE_FLOAT16 &&
      scale_t.dtype != LOOM_DTYPE_BFLOAT16 && scale_t.dtype != LOOM_DTYPE_FLOAT64)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": y_scale must be a floating-point tensor");
  auto scale = quant::per_axis<float>(scale_t, dims, axis, where, "y_scale");
  quant::PerAxis<int32_t> zp;
  zp.values = {0};
  if (zp_t) {
    zp = quant::per_axis<int32_t>(*zp_t, dims, axis, where, "y_zero_point");
    if (zp.channels != scale.channels)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": y_scale and y_zero_point must have the same shape");
  }
  std::vector<float> xs = misc::read_as<float>(x, where + " x");
  loom_tensor_t& y = ctx.allocate_output(0, out_type, dims);
  dispatch<kSignedInts | kUnsignedInts>(out_type, where, [&]<typename Q>() {
    if constexpr (sizeof(Q) == 1) {
      Q* out = sdk::data_of<Q>(y);
      for (size_t i = 0; i < xs.size(); ++i) {
        // The division is done in float like the ONNX definition, so ties are the same ties.
        const float q = xs[i] / scale.at(i);
        out[i] = quant::saturate_round<Q>(static_cast<double>(std::nearbyint(q)) + zp.at(i));
      }
    }
  });
}

void dequantize_linear(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& scale_t = ctx.required_input(1);
  const loom_tensor_t* zp_t = ctx.input(2);
  if (x.dtype != LOOM_DTYPE_UINT8 && x.dtype != LOOM_DTYPE_INT8 && x.dtype != LOOM_DTYPE_INT32)
    fail(LOOM_ERROR_UNSUPPORTED,
         where + ": x must be uint8, int8 or int32, got " + sdk::dtype_name(x.dtype));
  if (zp_t && zp_t->dtype != x.dtype)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": x_zero_point must have the element type of x");
  const auto dims = misc::dims_of(x);
  const int64_t axis = ctx.opset() >= 13 ? ctx.attrs().get_int("axis", 1) : 1;
  auto scale = quant::per_axis<float>(scale_t, dims, axis, where, "x_scale");
  quant::PerAxis<int64_t> zp;
  zp.values = {0};
  if (zp_t) zp = quant::per_axis<int64_t>(*zp_t, dims, axis, where, "x_zero_point");
  if (x.dtype == LOOM_DTYPE_INT32)
    for (int64_t v : zp.values)
      if (v != 0) fail(LOOM_ERROR_INVALID_MODEL, where + ": an int32 x requires a zero point of 0");
  std::vector<int64_t> xs = misc::read_ints(x, where + " x");
  // The output takes the scale's type (float32 before opset 19, which is all we register).
  loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_FLOAT32, dims);
  float* out = sdk::data_of<float>(y);
  for (size_t i = 0; i < xs.size(); ++i)
    out[i] = static_cast<float>(xs[i] - zp.at(i)) * scale.at(i);
}

// Scale and zero point from the data range extended to include 0, then QuantizeLinear to uint8.
void dynamic_quantize_linear(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.dtype != LOOM_DTYPE_FLOAT32)
    fail(LOOM_ERROR_UNSUPPORTED, where + ": x must be float32, got " + sdk::dtype_name(x.dtype));
  const auto dims = misc::dims_of(x);
  const float* xs = sdk::data_of<const float>(x);
  const size_t n = misc::count_of(x);
  float lo = 0.f, hi = 0.f;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(xs[i])) continue;
    lo = std::min(lo, xs[i]);
    hi = std::max(hi, xs[i]);
  }
  const float scale = (hi - lo) / 255.f;
  uint8_t zero_point = 0;
  if (scale > 0.f) zero_point = quant::saturate_round<uint8_t>(0.f - lo / scale);
  loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_UINT8, dims);
  uint8_t* out = sdk::data_of<uint8_t>(y);
  for (size_t i = 0; i < n; ++i)
    out[i] = scale > 0.f ? quant::saturate_round<uint8_t>(
                               static_cast<double>(std::nearbyint(xs[i] / scale)) + zero_point)
                         : zero_point;
  if (ctx.output_requested(1))
    *sdk::data_of<float>(ctx.allocate_output(1, LOOM_DTYPE_FLOAT32, {})) = scale;
  if (ctx.output_requested(2))
    *sdk::data_of<uint8_t>(ctx.allocate_output(2, LOOM_DTYPE_UINT8, {})) = zero_point;
}

}  // namespace

LOOM_CPU_KERNEL("QuantizeLinear", 10, quantize_linear, nullptr);
LOOM_CPU_KERNEL("QuantizeLinear", 13, quantize_linear, nullptr);
LOOM_CPU_KERNEL("DequantizeLinear", 10, dequantize_linear, nullptr);
LOOM_CPU_KERNEL("DequantizeLinear", 13, dequantize_linear, nullptr);
LOOM_CPU_KERNEL("DynamicQuantizeLinear", 11, dynamic_quantize_linear, nullptr);

}  // namespace loom::cpu
