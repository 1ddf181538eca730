// The cpu device's ABI handle types. loom_device_t, loom_buffer_t and loom_executable_t are
// opaque to the core; the plugin defines them here.
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <string>
#include <vector>

#include "executable.hpp"
#include "thread_pool.hpp"

struct loom_device_t {
  loom_host_t* host = nullptr;  // for find_kernel; outlives the device
  std::string name = "cpu";
  std::string description;
  std::unique_ptr<loom::cpu::ThreadPool> pool;
};

// Host memory. A buffer either owns an aligned allocation or shares ownership of a tensor the
// interpreter produced (run hands its outputs over without copying them).
struct loom_buffer_t {
  void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
  std::shared_ptr<std::vector<std::string>> strings;  // bytes behind a string tensor's views
};

struct loom_executable_t {
  std::unique_ptr<loom::cpu::Executable> impl;
};

namespace loom::cpu {

// "Intel(R) Core(TM) ... (8 hardware threads)" from /proc/cpuinfo; a generic text elsewhere.
std::string describe_host_cpu();

}  // namespace loom::cpu
