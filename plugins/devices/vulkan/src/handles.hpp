// The opaque ABI handles of the Vulkan device plugin.
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <string>

#include "context.hpp"
#include "memory.hpp"

namespace loom::vulkan {
class Executable;
}

struct loom_device_t {
  loom_host_t* host = nullptr;
  std::unique_ptr<loom::vulkan::Context> context;
};

struct loom_buffer_t {
  loom::vulkan::Allocation allocation;
  size_t size = 0;  // bytes the core asked for
};

struct loom_executable_t {
  std::unique_ptr<loom::vulkan::Executable> impl;
};
