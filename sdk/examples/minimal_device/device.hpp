// The handle types of the minimal device. The C ABI declares them as opaque structs; the
// plugin defines them. Buffers are plain host memory (LOOM_DEVICE_HOST_MEMORY), so the core
// hands tensors to and from the cpu device without copies.
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "executable.hpp"

struct loom_device_t {
  loom_host_t* host = nullptr;
};

struct loom_buffer_t {
  void* data = nullptr;
  size_t size = 0;
  ~loom_buffer_t() { std::free(data); }
};

struct loom_executable_t {
  std::unique_ptr<minimal::Executable> impl;
};

namespace minimal {

// 64-byte aligned host memory; throws loom::sdk::Error on failure.
std::unique_ptr<loom_buffer_t> allocate(size_t size);

}  // namespace minimal
