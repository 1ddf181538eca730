// Helpers for devices whose buffers are plain host memory (LOOM_DEVICE_HOST_MEMORY): aligned
// allocation and the bounds-checked bodies of copy_to_host / copy_from_host. Header-only, on
// top of plugin.hpp.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <loom/plugin.hpp>
#include <memory>
#include <string>

namespace loom::sdk {

// `size` bytes, 64-byte aligned, rounded up to whole cache lines plus one (vector loops may read,
// never use, past the end), freed when the last owner goes. Fails with LOOM_ERROR_OUT_OF_MEMORY
// naming `who`: above SIZE_MAX / 4 without trying, or when the allocation fails.
inline std::shared_ptr<void> allocate_host_block(size_t size, const std::string& who) {
  if (size > (SIZE_MAX >> 2))
    fail(LOOM_ERROR_OUT_OF_MEMORY, who + ": " + std::to_string(size) + " bytes is too large");
  void* p = std::aligned_alloc(64, (size + 63) / 64 * 64 + 64);
  if (!p)
    fail(LOOM_ERROR_OUT_OF_MEMORY,
         who + ": out of memory allocating " + std::to_string(size) + " bytes");
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

// Fails unless [offset, offset + size) lies inside a buffer of `capacity` bytes at `base` (NULL:
// no buffer was given; allocate_host_block never returns NULL, even for 0 bytes).
inline void check_host_range(const void* base, size_t capacity, size_t offset, size_t size,
                             const char* what) {
  if (!base) fail(LOOM_ERROR_INVALID_ARGUMENT, std::string(what) + ": buffer is NULL");
  if (offset > capacity || size > capacity - offset)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         std::string(what) + ": range [" + std::to_string(offset) + ", +" + std::to_string(size) +
             ") exceeds the buffer of " + std::to_string(capacity) + " bytes");
}

// The whole of a host-memory device's copy_to_host: `base`/`capacity` describe the buffer (NULL
// for a missing one).
inline loom_status_t* copy_host_to_user(const void* base, size_t capacity, size_t offset, void* dst,
                                        size_t size) {
  return guard([&] {
    check_host_range(base, capacity, offset, size, "copy_to_host");
    if (size) std::memcpy(dst, static_cast<const char*>(base) + offset, size);
  });
}

// The whole of a host-memory device's copy_from_host.
inline loom_status_t* copy_user_to_host(const void* src, void* base, size_t capacity, size_t offset,
                                        size_t size) {
  return guard([&] {
    check_host_range(base, capacity, offset, size, "copy_from_host");
    if (size) std::memcpy(static_cast<char*>(base) + offset, src, size);
  });
}

}  // namespace loom::sdk
