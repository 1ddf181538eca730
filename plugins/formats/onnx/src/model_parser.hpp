// Bytes -> onnx::ModelProto with protobuf's own parser, bounded, with one-line diagnostics.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace loom::onnx {

// Nested graphs (If/Loop/Scan bodies) deeper than this are refused by the loader. The protobuf
// recursion limit is set above what that many graph levels need, so a deep but legal model
// reaches the loader's clear error instead of a generic parse failure.
inline constexpr int kMaxGraphDepth = 64;

// A main-graph initializer's raw_data left in the model bytes: nullopt when the initializer
// has no raw_data field, else its bytes (which may be empty).
using RawDataSpan = std::optional<std::span<const uint8_t>>;

// Parses `size` bytes as a ModelProto. Throws sdk::Error(LOOM_ERROR_INVALID_MODEL) naming the
// problem when the bytes are not a well-formed ModelProto, or LOOM_ERROR_UNSUPPORTED for files
// protobuf cannot address (2 GiB and more).
//
// When `lifted` is given and the main graph's initializer raw_data is most of the file (the
// weights of every exported network), that raw_data is not copied into `model`: `lifted` gets
// one entry per initializer of model.graph(), pointing into `data`, which must outlive its use.
// Otherwise `lifted` is left empty and the proto holds everything. Either way the model's
// meaning is the same; this only keeps a second copy of the weights out of memory.
void parse_model(const uint8_t* data, size_t size, ::onnx::ModelProto& model,
                 std::vector<RawDataSpan>* lifted = nullptr);

}  // namespace loom::onnx
