// QuantizeLinear (10-25), DequantizeLinear (10-25) and DynamicQuantizeLinear (11):
//   q = saturate(round_half_even(x / scale) + zero_point)       integer q
//   q = cast(x / scale)                                         float8 q (saturate attribute)
//   q = cast(x / scale + zero_point)                            float4/float6 q
//   x = (q - zero_point) * scale
// with the scale and zero point per tensor, per slice along `axis`, or (opset 21) per block of
// `block_size` elements along `axis`. Quantized types: (u)int8, (u)int16, (u)int4, (u)int2,
// the float8 types, float4e2m1 and float6 (one byte per element for the narrow ones), as the
// ONNX reference (onnx/reference/ops/op_quantize_linear.py) computes them.
#include <algorithm>
#include <loom/narrow_types.hpp>

#include "quantize_common.hpp"

namespace loom::cpu {
namespace {

namespace nt = sdk::narrow;

// Scale or zero point of every element of x: one value, one per index along `axis`, or one per
// block of `block` indices along `axis` (then the parameter has x's rank and shape except
// ceil(dims[axis] / block) along the axis).
struct QuantParam {
  std::vector<double> values;
  size_t inner = 1;     // product of x's dims after the axis
  size_t extent = 1;    // x's dims[axis]
  size_t channels = 1;  // the parameter's extent along the axis; 1 for per tensor
  size_t block = 0;     // 0: per tensor or per axis
  double at(size_t flat) const {
    if (values.size() == 1) return values[0];
    if (block == 0) return values[(flat / inner) % channels];
    const size_t i = flat % inner;
    const size_t a = (flat / inner) % extent;
    const size_t outer = flat / inner / extent;
    return values[(outer * channels + a / block) * inner + i];
  }
};

// The elements of a scale or zero point as doubles (exact for every type, narrow ones too).
std::vector<double> param_values(const loom_tensor_t& t, const std::string& what) {
  if (nt::is_narrow(t.dtype)) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    std::vector<double> out(misc::count_of(t));
    for (size_t i = 0; i < out.size(); ++i) out[i] = nt::to_float(t.dtype, p[i]);
    return out;
  }
  return misc::read_as<double>(t, what);
}

QuantParam quant_param(const loom_tensor_t& param, const std::vector<int64_t>& dims, int64_t axis,
                       int64_t block_size, const std::string& where, const char* name) {
  QuantParam p;
  p.values = param_values(param, where + " " + name);
  if (p.values.empty()) fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name + " holds no elements");
  if (p.values.size() == 1 && param.rank <= 1) return p;  // per tensor
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t a = sdk::normalize_axis(axis, rank, where);
  p.extent = static_cast<size_t>(dims[a]);
  for (int64_t i = a + 1; i < rank; ++i) p.inner *= static_cast<size_t>(dims[i]);
  if (block_size <= 0) {
    if (param.rank != 1)
      fail(LOOM_ERROR_INVALID_MODEL,
           where + ": " + name + " must be a scalar or a 1-D tensor (or set block_size)");
    if (param.dims[0] != dims[a])
      fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name + " has " + std::to_string(param.dims[0]) +
                                         " elements but the quantization axis has " +
                                         std::to_string(dims[a]));
    p.channels = p.extent;
    return p;
  }
  // Blocked: the same shape as x but ceil(dims[axis] / block_size) along the axis.
  const int64_t blocks = dims[a] / block_size + (dims[a] % block_size != 0 ? 1 : 0);
  bool ok = param.rank == rank;
  for (int64_t i = 0; ok && i < rank; ++i) ok = param.dims[i] == (i == a ? blocks : dims[i]);
  if (!ok)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": with block_size " + std::to_string(block_size) + " " +
                                       name + " must have x's shape with " +
                                       std::to_string(blocks) + " blocks along axis " +
                                       std::to_string(a));
  p.channels = static_cast<size_t>(blocks);
  p.block = static_cast<size_t>(block_size);
  return p;
}

bool is_quantized_type(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_UINT16:
    case LOOM_DTYPE_INT16:
      return true;
    default:
      // Every narrow type but float8e8m0 (a scale format, not a quantized one).
      return nt::is_narrow(t) && t != LOOM_DTYPE_FLOAT8E8M0;
  }
}

bool is_float_type(loom_dtype_t t) {
  return t == LOOM_DTYPE_FLOAT32 || t == LOOM_DTYPE_FLOAT16 || t == LOOM_DTYPE_BFLOAT16 ||
         t == LOOM_DTYPE_FLOAT64;
}

int64_t block_size_of(const KernelContext& ctx, const std::string& where) {
  const int64_t b = ctx.opset() >= 21 ? ctx.attrs().get_int("block_size", 0) : 0;
  if (b < 0)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": block_size must be >= 0, got " + std::to_string(b));
  return b;
}

// x / scale, rounded like numpy computes it in the promoted (or `precision`) type.
double divide_in(loom_dtype_t type, double x, double scale) {
  switch (type) {
    case LOOM_DTYPE_FLOAT64:
      return x / scale;
    case LOOM_DTYPE_FLOAT16:  // float division then one rounding: exact for half operands
      return static_cast<float>(Half(static_cast<float>(x) / static_cast<float>(scale)));
    case LOOM_DTYPE_BFLOAT16:
      return static_cast<float>(BFloat16(static_cast<float>(x) / static_cast<float>(scale)));
    default:
      return static_cast<float>(x) / static_cast<float>(scale);
  }
}

void quantize_linear(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& scale_t = ctx.required_input(1);
  const loom_tensor_t* zp_t = ctx.input(2);
  const auto dims = misc::dims_of(x);
  const int64_t axis = ctx.opset() >= 13 ? ctx.attrs().get_int("axis", 1) : 1;
  const int64_t block_size = block_size_of(ctx, where);
  const bool saturate = ctx.attrs().get_int("saturate", 1) != 0;
  const auto output_dtype =
      static_cast<loom_dtype_t>(ctx.opset() >= 21 ? ctx.attrs().get_int("output_dtype", 0) : 0);
  if (zp_t && output_dtype != LOOM_DTYPE_UNDEFINED && output_dtype != zp_t->dtype)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": output_dtype " + sdk::dtype_name(output_dtype) +
                                       " differs from y_zero_point's " +
                                       sdk::dtype_name(zp_t->dtype));
  const loom_dtype_t out_type = zp_t                                   ? zp_t->dtype
                                : output_dtype != LOOM_DTYPE_UNDEFINED ? output_dtype
                                                                       : LOOM_DTYPE_UINT8;
  if (!is_quantized_type(out_type))
    fail(LOOM_ERROR_UNSUPPORTED, where + ": cannot quantize to " + sdk::dtype_name(out_type));
  if (!is_float_type(x.dtype))
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": x must be a floating-point tensor, got " + sdk::dtype_name(x.dtype));
  if (!is_float_type(scale_t.dtype))
    fail(LOOM_ERROR_INVALID_MODEL, where + ": y_scale must be a floating-point tensor");
  // The type x / scale is computed in: `precision` (opset 23), else numpy's promotion.
  loom_dtype_t precision =
      static_cast<loom_dtype_t>(ctx.opset() >= 23 ? ctx.attrs().get_int("precision", 0) : 0);
  if (precision == LOOM_DTYPE_UNDEFINED) {
    if (x.dtype == LOOM_DTYPE_FLOAT64 || scale_t.dtype == LOOM_DTYPE_FLOAT64)
      precision = LOOM_DTYPE_FLOAT64;
    else if (x.dtype == scale_t.dtype)
      precision = x.dtype;
    else
      precision = LOOM_DTYPE_FLOAT32;
  } else if (!is_float_type(precision)) {
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": precision " + sdk::dtype_name(precision) + " is not a floating-point type");
  }
  const QuantParam scale = quant_param(scale_t, dims, axis, block_size, where, "y_scale");
  QuantParam zp;
  zp.values = {0.0};
  if (zp_t) zp = quant_param(*zp_t, dims, axis, block_size, where, "y_zero_point");
  const std::vector<double> xs = misc::read_as<double>(x, where + " x");
  loom_tensor_t& y = ctx.allocate_output(0, out_type, dims);
  const size_t n = xs.size();
  if (nt::is_narrow_float(out_type)) {
    auto* out = static_cast<uint8_t*>(y.data);
    // float8: the zero point is 0 by definition and `saturate` applies; float4/float6 have
    // neither inf nor NaN, so out-of-range values saturate and the zero point is added.
    const bool add_zp = nt::packed_bits(out_type) != 8;
    for (size_t i = 0; i < n; ++i) {
      double q = divide_in(precision, xs[i], scale.at(i));
      if (add_zp) q = static_cast<float>(q + zp.at(i));
      out[i] = nt::from_double(out_type, q, saturate);
    }
    return;
  }
  auto quantize = [&](size_t i) {
    // NaN quantizes to the zero point, as ONNX Runtime does.
    const double q = divide_in(precision, xs[i], scale.at(i));
    const double r = std::isnan(q) ? 0.0 : std::nearbyint(q);
    return r + zp.at(i);
  };
  if (nt::is_narrow_int(out_type)) {
    auto* out = static_cast<uint8_t*>(y.data);
    const double lo = nt::int_min(out_type), hi = nt::int_max(out_type);
    for (size_t i = 0; i < n; ++i)
      out[i] = nt::int_wrap(out_type, static_cast<int64_t>(std::clamp(quantize(i), lo, hi)));
    return;
  }
  dispatch<kSignedInts | kUnsignedInts>(out_type, where, [&]<typename Q>() {
    if constexpr (sizeof(Q) <= 2) {
      Q* out = sdk::data_of<Q>(y);
      for (size_t i = 0; i < n; ++i) out[i] = quant::saturate_round<Q>(quantize(i));
    }
  });
}

void dequantize_linear(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& scale_t = ctx.required_input(1);
  const loom_tensor_t* zp_t = ctx.input(2);
  if (!is_quantized_type(x.dtype) && x.dtype != LOOM_DTYPE_INT32)
    fail(LOOM_ERROR_UNSUPPORTED, where + ": cannot dequantize " + sdk::dtype_name(x.dtype));
  if (zp_t && zp_t->dtype != x.dtype)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": x_zero_point must have the element type of x");
  if (!is_float_type(scale_t.dtype))
    fail(LOOM_ERROR_INVALID_MODEL, where + ": x_scale must be a floating-point tensor");
  const auto dims = misc::dims_of(x);
  const int64_t axis = ctx.opset() >= 13 ? ctx.attrs().get_int("axis", 1) : 1;
  const int64_t block_size = block_size_of(ctx, where);
  loom_dtype_t out_type =
      static_cast<loom_dtype_t>(ctx.opset() >= 23 ? ctx.attrs().get_int("output_dtype", 0) : 0);
  if (out_type == LOOM_DTYPE_UNDEFINED) out_type = scale_t.dtype;
  if (!is_float_type(out_type))
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": output_dtype " + sdk::dtype_name(out_type) + " is not a floating-point type");
  const QuantParam scale = quant_param(scale_t, dims, axis, block_size, where, "x_scale");
  QuantParam zp;
  zp.values = {0.0};
  if (zp_t) zp = quant_param(*zp_t, dims, axis, block_size, where, "x_zero_point");
  // int32 and the float types have no zero point but 0.
  if (x.dtype == LOOM_DTYPE_INT32 || nt::is_narrow_float(x.dtype))
    for (double v : zp.values)
      if (v != 0)
        fail(LOOM_ERROR_INVALID_MODEL,
             where + ": a " + sdk::dtype_name(x.dtype) + " x requires a zero point of 0");
  const std::vector<double> xs = param_values(x, where + " x");
  const bool wide = scale_t.dtype == LOOM_DTYPE_FLOAT64;  // numpy promotes float32 * float64
  loom_tensor_t& y = ctx.allocate_output(0, out_type, dims);
  dispatch<kFloats>(out_type, where, [&]<typename F>() {
    F* out = sdk::data_of<F>(y);
    for (size_t i = 0; i < xs.size(); ++i) {
      // The ONNX reference subtracts in float32 and multiplies in the promoted type.
      const float dx = static_cast<float>(xs[i] - zp.at(i));
      out[i] = wide ? convert<F>(static_cast<double>(dx) * scale.at(i))
                    : convert<F>(dx * static_cast<float>(scale.at(i)));
    }
  });
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
