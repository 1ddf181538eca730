// Bytes -> onnx::ModelProto with protobuf's own parser, bounded, with one-line diagnostics.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>

namespace loom::onnx {

// Nested graphs (If/Loop/Scan bodies) deeper than this are refused by the loader. The protobuf
// recursion limit is set above what that many graph levels need, so a deep but legal model
// reaches the loader's clear error instead of a generic parse failure.
inline constexpr int kMaxGraphDepth = 64;

// Parses `size` bytes as a ModelProto. Throws sdk::Error(LOOM_ERROR_INVALID_MODEL) naming the
// problem when the bytes are not a well-formed ModelProto, or LOOM_ERROR_UNSUPPORTED for files
// protobuf cannot address (2 GiB and more).
void parse_model(const uint8_t* data, size_t size, ::onnx::ModelProto& model);

}  // namespace loom::onnx
