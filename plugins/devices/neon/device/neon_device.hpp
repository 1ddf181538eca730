// The neon device's ABI handle types (opaque to the core).
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <string>

#include "device/executable.hpp"
#include "thread_pool.hpp"

struct loom_device_t {
  std::string name = "neon";
  std::string description;
  std::unique_ptr<loom::cpu::ThreadPool> pool;
  loom::neon::CompileOptions compile;  // from the device options (precision)
};

// Plain host memory: either an aligned allocation or a tensor an executable produced (run
// hands outputs over without copying them).
struct loom_buffer_t {
  void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
};

struct loom_executable_t {
  std::unique_ptr<loom::neon::Executable> impl;
};
