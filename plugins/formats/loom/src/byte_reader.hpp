// Bounds-checked little-endian decoder: every read and every count is checked against the bytes
// that remain, so a hostile file fails with one clear line instead of reading out of bounds or
// allocating without limit.
#pragma once

#include <cstdint>
#include <cstring>
#include <loom/plugin.hpp>
#include <string>
#include <string_view>

namespace loom::loomfmt {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8(const char* what) { return get<uint8_t>(what); }
  uint32_t u32(const char* what) { return get<uint32_t>(what); }
  int32_t i32(const char* what) { return get<int32_t>(what); }
  uint64_t u64(const char* what) { return get<uint64_t>(what); }
  int64_t i64(const char* what) { return get<int64_t>(what); }
  float f32(const char* what) { return get<float>(what); }
  std::string_view str(const char* what) {
    uint32_t n = u32(what);
    const uint8_t* p = take(n, what);
    return {reinterpret_cast<const char*>(p), n};
  }
  // A count of elements of at least `min_element_size` bytes each: more than the remaining bytes
  // can hold means the file is damaged, and nothing is allocated for it.
  uint32_t count(const char* what, size_t min_element_size) {
    uint32_t n = u32(what);
    if (min_element_size && n > remaining() / min_element_size)
      fail(std::string(what) + " count " + std::to_string(n) + " exceeds the section's size");
    return n;
  }
  const uint8_t* take(size_t n, const char* what) {
    if (n > remaining()) fail(std::string("truncated ") + what);
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }

  [[noreturn]] static void fail(const std::string& message) {
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "damaged .loom file: " + message);
  }

 private:
  template <typename T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof v, what), sizeof v);
    return v;
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace loom::loomfmt
