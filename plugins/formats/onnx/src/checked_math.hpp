// Overflow-safe arithmetic for sizes read from model files. Every size that comes from a file
// goes through these before it is used to allocate or index. Element counts and byte sizes are
// the SDK's (loom/plugin.hpp), shared with the core and every device; the unsigned products of
// file offsets stay here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <loom/plugin.hpp>
#include <optional>
#include <span>

namespace loom::onnx {

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of non-negative extents; nullopt on a negative extent or an overflow of int64.
inline std::optional<int64_t> element_count(std::span<const int64_t> dims) {
  return sdk::try_element_count(dims);
}

// count * element_size as a size_t, nullopt when it does not fit.
inline std::optional<size_t> byte_size(int64_t count, size_t element_size) {
  return sdk::try_byte_size(count, element_size);
}

}  // namespace loom::onnx
