// A minimal reader of the protobuf wire format, used where the generated parser cannot help:
// probing a file head by content, and explaining why a file failed to parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::onnx {

// Confidence 0..100 that `head` (the first head_size bytes of a file) starts a serialized
// ModelProto. Reads nothing past head_size. `path` may be NULL; a ".onnx" name only raises a
// content-based guess, it never makes one.
int32_t probe_model_head(const uint8_t* head, size_t head_size, const char* path);

// Walks the top-level fields of a whole serialized ModelProto and returns a one-line
// description of the first structural problem (truncation, a bad tag, a known field with the
// wrong wire type), or nullopt if the top level is well-formed.
std::optional<std::string> describe_wire_problem(const uint8_t* data, size_t size);

// Where one main-graph initializer's raw_data lies in the model bytes.
struct RawDataLocation {
  bool present = false;  // the initializer carries a raw_data field (possibly empty)
  size_t offset = 0;     // from the start of the model bytes
  size_t size = 0;
};

// A serialized ModelProto without the raw_data of its main graph's initializers, which is what
// protobuf would otherwise copy out of the file: `bytes` parses to the same ModelProto minus
// those fields, and `raw_data[i]` locates the i-th initializer's raw_data in the original bytes
// (protobuf's rules apply: repeated graph fields merge, the last raw_data of a tensor wins).
struct StrippedModel {
  std::string bytes;
  std::vector<RawDataLocation> raw_data;
  size_t raw_data_bytes = 0;  // raw_data payload bytes left out (repeated fields included)
};

// Builds the StrippedModel of `size` bytes at `data`. Returns nullopt when the bytes are not
// well-formed at the levels it walks (model, graph, initializer) or use groups; the caller then
// parses the original bytes, so malformed files get protobuf's and describe_wire_problem's
// diagnostics. With `copy` false only raw_data and raw_data_bytes are filled (a cheap survey).
std::optional<StrippedModel> strip_initializer_raw_data(const uint8_t* data, size_t size,
                                                        bool copy);

}  // namespace loom::onnx
