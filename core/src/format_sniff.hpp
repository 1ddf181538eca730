// Names the likely format of a model file no loaded format plugin recognized, from a few
// well-known signatures, so the error can say which plugin to install instead of only "unknown
// format".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::core {

struct SniffedFormat {
  std::string description;  // "a TFLite model"; empty when nothing matched
  std::string plugin;       // format plugin that reads it ("tflite"), or empty when none does
  std::string advice;       // what to do when no Loom plugin reads it at all
};

// Looks at the first bytes of a file (never past `size`).
SniffedFormat sniff_format(const uint8_t* data, size_t size);

}  // namespace loom::core
