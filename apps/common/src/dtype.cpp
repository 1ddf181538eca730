#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <loom/narrow_types.hpp>
#include <loom/plugin.hpp>
#include <loom_apps/dtype.hpp>

namespace loom::apps {

// The element sizes and names are the SDK's (one table for plugins and apps); strings differ:
// the apps hold them as std::string, so they have no fixed element size here.
size_t dtype_size(loom_dtype_t dtype) {
  return dtype == LOOM_DTYPE_STRING ? 0 : sdk::dtype_size(dtype);
}

std::string_view dtype_name(loom_dtype_t dtype) {
  return sdk::dtype_name(dtype);
}

bool dtype_is_float(loom_dtype_t dtype) {
  return dtype == LOOM_DTYPE_FLOAT16 || dtype == LOOM_DTYPE_FLOAT32 ||
         dtype == LOOM_DTYPE_FLOAT64 || dtype == LOOM_DTYPE_BFLOAT16 ||
         sdk::narrow::is_narrow_float(dtype);
}

bool dtype_is_integer(loom_dtype_t dtype) {
  switch (dtype) {
    case LOOM_DTYPE_INT8:
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_INT64:
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_UINT16:
    case LOOM_DTYPE_UINT32:
    case LOOM_DTYPE_UINT64:
      return true;
    default:
      return sdk::narrow::is_narrow_int(dtype);
  }
}

bool dtype_is_real_number(loom_dtype_t dtype) {
  return dtype_is_float(dtype) || dtype_is_integer(dtype) || dtype == LOOM_DTYPE_BOOL;
}

namespace {
template <typename T>
T load(const void* data, size_t index) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(data) + index * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

double element_as_double(loom_dtype_t dtype, const void* data, size_t index) {
  switch (dtype) {
    case LOOM_DTYPE_FLOAT32:
      return load<float>(data, index);
    case LOOM_DTYPE_FLOAT64:
      return load<double>(data, index);
    case LOOM_DTYPE_FLOAT16:
      return half_to_float(load<uint16_t>(data, index));
    case LOOM_DTYPE_BFLOAT16:
      return bfloat16_to_float(load<uint16_t>(data, index));
    case LOOM_DTYPE_INT8:
      return load<int8_t>(data, index);
    case LOOM_DTYPE_INT16:
      return load<int16_t>(data, index);
    case LOOM_DTYPE_INT32:
      return load<int32_t>(data, index);
    case LOOM_DTYPE_INT64:
      return static_cast<double>(load<int64_t>(data, index));
    case LOOM_DTYPE_UINT8:
      return load<uint8_t>(data, index);
    case LOOM_DTYPE_UINT16:
      return load<uint16_t>(data, index);
    case LOOM_DTYPE_UINT32:
      return load<uint32_t>(data, index);
    case LOOM_DTYPE_UINT64:
      return static_cast<double>(load<uint64_t>(data, index));
    case LOOM_DTYPE_BOOL:
      return load<uint8_t>(data, index) != 0 ? 1.0 : 0.0;
    case LOOM_DTYPE_COMPLEX64:
      return load<float>(data, 2 * index);
    case LOOM_DTYPE_COMPLEX128:
      return load<double>(data, 2 * index);
    default:
      // The narrow types of ABI 1.6: one byte per element, decoded exactly.
      if (sdk::narrow::is_narrow(dtype))
        return sdk::narrow::to_float(dtype, load<uint8_t>(data, index));
      return 0.0;
  }
}

}  // namespace loom::apps
