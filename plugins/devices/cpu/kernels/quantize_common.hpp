// Helpers shared by the quantization kernels (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger).
#pragma once

#include <cmath>
#include <limits>

#include "misc_math_helpers.hpp"

namespace loom::cpu::quant {

// Rounds half to even (ONNX's rule for every quantizing op) and saturates to Q's range.
// std::nearbyint honours the current rounding mode, which is round-to-nearest-even unless a
// caller changed it; NaN maps to 0 like ONNX Runtime.
template <typename Q>
Q saturate_round(double v) {
  if (std::isnan(v)) return Q(0);
  const double r = std::nearbyint(v);
  constexpr double lo = static_cast<double>(std::numeric_limits<Q>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<Q>::max());
  return static_cast<Q>(r < lo ? lo : (r > hi ? hi : r));
}

// Quantization parameters (scale or zero point) that are either one value for the whole
// tensor or one value per slice along `axis`. `at(i)` takes the flat index of an element of
// the quantized tensor.
template <typename V>
struct PerAxis {
  std::vector<V> values;
  size_t inner = 1;     // product of the dims after the axis
  size_t channels = 1;  // 1 for per-tensor
  V at(size_t flat) const { return channels == 1 ? values[0] : values[(flat / inner) % channels]; }
};

// Builds per-tensor or per-axis parameters from `param` for a tensor of shape `dims`.
// A scalar or one-element 1-D parameter is per-tensor; a 1-D one of dims[axis] elements is
// per-axis. Anything else is an error naming `name`.
template <typename V>
PerAxis<V> per_axis(const loom_tensor_t& param, const std::vector<int64_t>& dims, int64_t axis,
                    const std::string& where, const char* name) {
  PerAxis<V> p;
  p.values = misc::read_as<V>(param, where + " " + name);
  if (p.values.size() == 1 && param.rank <= 1) return p;
  if (param.rank != 1)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name + " must be a scalar or a 1-D tensor");
  const int64_t a = sdk::normalize_axis(axis, static_cast<int64_t>(dims.size()), where);
  if (param.dims[0] != dims[a])
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name + " has " + std::to_string(param.dims[0]) +
                                       " elements but the quantization axis has " +
                                       std::to_string(dims[a]));
  p.channels = static_cast<size_t>(dims[a]);
  for (size_t i = static_cast<size_t>(a) + 1; i < dims.size(); ++i)
    p.inner *= static_cast<size_t>(dims[i]);
  return p;
}

inline void require_quantized_type(loom_dtype_t t, const std::string& where, const char* name) {
  if (t != LOOM_DTYPE_UINT8 && t != LOOM_DTYPE_INT8)
    fail(LOOM_ERROR_UNSUPPORTED,
         where + ": " + name + " must be uint8 or int8, got " + sdk::dtype_name(t));
}

// A zero point that must be a single value (scalar or one-element tensor).
inline int32_t scalar_zero_point(const loom_tensor_t* zp, const std::string& where,
                                 const char* name) {
  if (!zp) return 0;
  return static_cast<int32_t>(misc::read_scalar_int(*zp, where + " " + name));
}

}  // namespace loom::cpu::quant
