// The buffers of the minimal device: plain host memory (LOOM_DEVICE_HOST_MEMORY), so the core
// hands tensors to and from the cpu device without copies. The device kit (loom/device_kit.hpp)
// implements the ABI's handle types and functions; this plugin only says what differs.
#pragma once

#include <cstddef>
#include <loom/device_kit.hpp>
#include <memory>

namespace minimal {

// 64-byte aligned host memory; throws loom::sdk::Error on failure.
inline std::unique_ptr<loom::sdk::kit::HostBuffer> allocate(size_t size) {
  return loom::sdk::kit::HostBuffer::allocate(size, "minimal");
}

}  // namespace minimal
