#include "dtypes.hpp"

#include <loom/plugin.hpp>

namespace loom::onnx {

loom_dtype_t dtype_from_onnx(int32_t elem_type) {
  // Loom numbers its dtypes like TensorProto.DataType, up to the narrow types of ABI 1.6.
  if (elem_type >= LOOM_DTYPE_FLOAT32 && elem_type <= LOOM_DTYPE_FLOAT6E3M2)
    return static_cast<loom_dtype_t>(elem_type);
  return LOOM_DTYPE_UNDEFINED;
}

std::string onnx_type_name(int32_t elem_type) {
  loom_dtype_t t = dtype_from_onnx(elem_type);
  if (t != LOOM_DTYPE_UNDEFINED) return sdk::dtype_name(t);
  // Types added to ONNX after the protos we build against; named so users know what they have.
  switch (elem_type) {
    case 0:
      return "undefined";
    default:
      return "type " + std::to_string(elem_type);
  }
}

std::string format_shape(std::span<const int64_t> dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

std::string quote_name(const std::string& name) {
  constexpr size_t kMaxShown = 200;
  std::string s = "'";
  for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    } else {
      s += static_cast<char>(c);
    }
  }
  if (name.size() > kMaxShown) s += "...";
  s += "'";
  return s;
}

}  // namespace loom::onnx
