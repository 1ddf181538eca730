// The Vulkan device plugin's buffers, as the device kit (loom/device_kit.hpp) sees them.
#pragma once

#include <loom/device_kit.hpp>

#include "memory.hpp"

namespace loom::vulkan {

// Device memory: a sub-allocation of the device's pool, given back to it when the buffer goes.
// The core frees buffers before it destroys their device, so the pool outlives them.
struct Buffer final : sdk::kit::Buffer {
  MemoryPool* pool = nullptr;
  Allocation allocation;
  ~Buffer() override {
    if (pool) pool->release(allocation);
  }
};

// The vulkan buffer behind a tensor's loom_buffer_t.
inline Buffer& buffer_of(loom_buffer_t* handle) {
  return sdk::kit::buffer_of<Buffer>(handle);
}

}  // namespace loom::vulkan
