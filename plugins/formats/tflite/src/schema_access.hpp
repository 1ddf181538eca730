// Typed access to the verified flatbuffers Operator behind an OperatorView (the generated
// schema header stays out of converter.hpp so only the files reading options include it).
#pragma once

#include "converter.hpp"
#include "tflite_subset_generated.h"

namespace loom::tflite {
namespace fb = loom::tflite_schema;

inline const fb::Operator& raw_operator(const Converter& c) {
  return *static_cast<const fb::Operator*>(c.op().raw);
}

// The operator's options table of type T, or nullptr when the file has none (TFLite then
// uses the defaults, which an empty table also gives).
template <typename T>
const T* options_of(const Converter& c) {
  return raw_operator(c).builtin_options_as<T>();
}

}  // namespace loom::tflite
