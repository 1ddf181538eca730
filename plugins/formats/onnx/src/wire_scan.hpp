// A minimal reader of the protobuf wire format, used where the generated parser cannot help:
// probing a file head by content, and explaining why a file failed to parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace loom::onnx {

// Confidence 0..100 that `head` (the first head_size bytes of a file) starts a serialized
// ModelProto. Reads nothing past head_size. `path` may be NULL; a ".onnx" name only raises a
// content-based guess, it never makes one.
int32_t probe_model_head(const uint8_t* head, size_t head_size, const char* path);

// Walks the top-level fields of a whole serialized ModelProto and returns a one-line
// description of the first structural problem (truncation, a bad tag, a known field with the
// wrong wire type), or nullopt if the top level is well-formed.
std::optional<std::string> describe_wire_problem(const uint8_t* data, size_t size);

}  // namespace loom::onnx
