// Parsers of ncnn's network description: the text .param (first line 7767517) and the binary
// .param.bin (first word 7767517, little-endian). Both yield the same ParsedParam; structural
// checks shared by both (blob producers, duplicate names) are done by the graph converter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "param_dict.hpp"

namespace loom::ncnnfmt {

inline constexpr int32_t kParamMagic = 7767517;
// Bounds that keep hostile counts from turning into huge allocations.
inline constexpr int64_t kMaxLayers = 1 << 20;
inline constexpr int64_t kMaxBlobs = 1 << 22;
inline constexpr int64_t kMaxLayerIo = 1 << 12;

// 100 for a text param, 90 for a binary one, 0 otherwise.
int32_t probe_param(const uint8_t* head, size_t size);
bool is_binary_param(const uint8_t* data, size_t size);

ParsedParam parse_text_param(const uint8_t* data, size_t size);
ParsedParam parse_binary_param(const uint8_t* data, size_t size);

}  // namespace loom::ncnnfmt
