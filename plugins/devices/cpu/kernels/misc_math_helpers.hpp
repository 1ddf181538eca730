// Small helpers shared by the cpu-misc kernel families (RNNs, quantization, TopK, Unique,
// CumSum, Einsum, NMS, signal, random, Det): reading scalar/list inputs of any integer type,
// converting whole tensors to and from a compute type, axis normalisation and the ONNX
// TensorProto.DataType numbers used by `dtype`/`output_datatype` attributes.
#pragma once

#include <cstdint>
#include <loom/op_semantics.hpp>  // sdk::normalize_axis, which these kernels use
#include <span>
#include <string>
#include <vector>

#include "../kernel.hpp"
#include "../types.hpp"

namespace loom::cpu::misc {

inline std::vector<int64_t> dims_of(const loom_tensor_t& t) {
  return std::vector<int64_t>(t.dims, t.dims + t.rank);
}

inline size_t count_of(const loom_tensor_t& t) {
  return static_cast<size_t>(sdk::element_count(t));
}

// All elements of an integer tensor (int8..uint64) as int64.
inline std::vector<int64_t> read_ints(const loom_tensor_t& t, const std::string& what) {
  return dispatch<kSignedInts | kUnsignedInts>(t.dtype, what, [&]<typename T>() {
    const T* p = sdk::data_of<const T>(t);
    return std::vector<int64_t>(p, p + count_of(t));
  });
}

// A scalar (or one-element) integer input such as TopK's K or CumSum's axis.
inline int64_t read_scalar_int(const loom_tensor_t& t, const std::string& what) {
  if (count_of(t) != 1)
    fail(LOOM_ERROR_INVALID_MODEL,
         what + " must hold exactly one element, got " + std::to_string(count_of(t)));
  return read_ints(t, what)[0];
}

// All elements of a numeric tensor converted to Acc (float, double or int64).
// `what`: a string, or an object with where() (a kernel context) asked only on an error.
template <typename Acc, typename What>
std::vector<Acc> read_as(const loom_tensor_t& t, const What& what) {
  return dispatch<kNumeric | kBool>(t.dtype, what, [&]<typename T>() {
    const T* p = sdk::data_of<const T>(t);
    std::vector<Acc> out(count_of(t));
    for (size_t i = 0; i < out.size(); ++i) out[i] = convert<Acc>(p[i]);
    return out;
  });
}

// A scalar floating-point input (thresholds, scales, sample rates).
inline double read_scalar_float(const loom_tensor_t& t, const std::string& what) {
  if (count_of(t) != 1)
    fail(LOOM_ERROR_INVALID_MODEL,
         what + " must hold exactly one element, got " + std::to_string(count_of(t)));
  return read_as<double>(t, what)[0];
}

// Writes `values` (in the compute type) into a tensor of any numeric dtype.
template <typename Acc, typename What>
void write_as(loom_tensor_t& out, std::span<const Acc> values, const What& what) {
  dispatch<kNumeric | kBool>(out.dtype, what, [&]<typename T>() {
    T* p = sdk::data_of<T>(out);
    for (size_t i = 0; i < values.size(); ++i) p[i] = convert<T>(values[i]);
  });
}

// ONNX TensorProto.DataType numbers coincide with loom_dtype_t (FLOAT=1 ... BFLOAT16=16);
// this checks the value is one the kernel can produce.
inline loom_dtype_t dtype_from_onnx(int64_t v, unsigned groups, const std::string& where) {
  if (v < 1 || v > 16 || v == LOOM_DTYPE_COMPLEX64 || v == LOOM_DTYPE_COMPLEX128)
    fail(LOOM_ERROR_UNSUPPORTED, where + ": data type " + std::to_string(v) + " is not supported");
  loom_dtype_t d = static_cast<loom_dtype_t>(v);
  bool ok = false;
  switch (d) {
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      ok = (groups & kFloats) != 0;
      break;
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_INT64:
      ok = (groups & kSignedInts) != 0;
      break;
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_UINT16:
    case LOOM_DTYPE_UINT32:
    case LOOM_DTYPE_UINT64:
      ok = (groups & kUnsignedInts) != 0;
      break;
    case LOOM_DTYPE_BOOL:
      ok = (groups & kBool) != 0;
      break;
    default:
      break;
  }
  if (!ok)
    fail(LOOM_ERROR_UNSUPPORTED,
         where + ": output data type " + sdk::dtype_name(d) + " is not supported by this operator");
  return d;
}

// Guards allocations whose size comes from tensor *values* (window sizes, K, sample counts):
// a malformed model must get an error, not an attempt to allocate terabytes.
inline void check_output_size(int64_t elements, const std::string& where) {
  constexpr int64_t kMaxElements = int64_t{1} << 30;
  if (elements < 0 || elements > kMaxElements)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": requested output of " + std::to_string(elements) +
                                       " elements is negative or unreasonably large");
}

}  // namespace loom::cpu::misc
