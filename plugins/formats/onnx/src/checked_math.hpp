// Overflow-safe arithmetic for sizes read from model files. Every size that comes from a file
// goes through these before it is used to allocate or index.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Product of non-negative extents; nullopt on overflow of int64 (the type every consumer of the
// element count uses). A zero extent anywhere makes the product 0 without overflow.
inline std::optional<int64_t> element_count(std::span<const int64_t> dims) {
  for (int64_t d : dims)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

// count * element_size as a size_t, nullopt when it does not fit.
inline std::optional<size_t> byte_size(int64_t count, size_t element_size) {
  if (count < 0) return std::nullopt;
  size_t r;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), element_size, &r)) return std::nullopt;
  return r;
}

}  // namespace loom::onnx
