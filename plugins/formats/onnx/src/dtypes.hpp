// ONNX element types as Loom dtypes, and the names used in error messages.
#pragma once

#include <loom/plugin.h>

#include <cstdint>
#include <span>
#include <string>

namespace loom::onnx {

// Loom dtypes are numbered like ONNX TensorProto.DataType; returns UNDEFINED for a type Loom
// does not know (one added to ONNX after FLOAT6E3M2).
loom_dtype_t dtype_from_onnx(int32_t elem_type);

// "float32", "float8e4m3fn", or "type 42" for an ONNX type Loom does not know.
std::string onnx_type_name(int32_t elem_type);

// "64x3x7x7"; "scalar" for rank 0.
std::string format_shape(std::span<const int64_t> dims);

// Quotes a name read from a file for an error message: 'name', with control characters escaped
// and very long names shortened, so a hostile file cannot forge multi-line messages.
std::string quote_name(const std::string& name);

}  // namespace loom::onnx
