// The OpenCL device instance behind loom_device_t: one context and one in-order queue on one
// cl_device_id, and the kernel program, built (or loaded from the disk cache) on first use.
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <mutex>
#include <string>

#include "cl_api.hpp"
#include "discovery.hpp"

namespace loom::opencl {

class Executable;

// Options from "key=value;..." (infer-run --precision f16 passes precision=f16).
struct DeviceOptions {
  bool want_fp16 = false;
  // GEMM kernel family: "auto" (tiled on GPUs, blocked on CPU drivers), "tiled", "blocked".
  std::string gemm = "auto";
};
DeviceOptions parse_device_options(const char* options);

// Per OpenCL device and process: the context, the in-order queue and the program. Sessions
// come and go (a test creates hundreds); the program is built or loaded once per process.
struct SharedContext {
  ContextHandle context;
  QueueHandle queue;
  std::mutex program_mutex;
  ProgramHandle program;
  // Serializes runs and copies on the shared queue (a run waits for its own work with
  // clFinish, which would otherwise also wait for another thread's work).
  std::mutex queue_mutex;
};

// Frees the shared contexts (the plugin's shutdown hook: before the driver goes away).
void release_shared_contexts();

class Device {
 public:
  Device(DeviceEntry entry, std::string name, const DeviceOptions& options);

  const DeviceEntry& entry() const { return entry_; }
  const std::string& name() const { return name_; }
  std::string description() const;
  cl_context context() const { return shared_->context.get(); }
  cl_command_queue queue() const { return shared_->queue.get(); }
  // The work-group size of the 1-D kernels.
  size_t lanes() const { return 64; }
  // GEMMs staged through local memory (gemm_tiled: 16x16 work-groups, 8.5 KiB) suit GPUs;
  // CPU drivers do better with register blocks read through their caches (gemm_blocked).
  bool prefers_local_tiles() const {
    if (options_.gemm != "auto") return options_.gemm == "tiled" && tiles_fit();
    return (entry_.type & CL_DEVICE_TYPE_CPU) == 0 && tiles_fit();
  }
  bool tiles_fit() const { return entry_.max_work_group >= 256 && entry_.local_memory >= 16384; }

  // A new kernel object of the program (one per step: kernel arguments are per object).
  KernelHandle create_kernel(const char* name);

  // A device buffer of at least one byte.
  MemHandle allocate(size_t bytes, const char* what);

  std::mutex& mutex() { return shared_->queue_mutex; }

 private:
  cl_program program();

  DeviceEntry entry_;
  std::string name_;
  DeviceOptions options_;
  std::shared_ptr<SharedContext> shared_;
};

}  // namespace loom::opencl

struct loom_device_t {
  std::unique_ptr<loom::opencl::Device> impl;
};

struct loom_buffer_t {
  loom::opencl::MemHandle mem;
  size_t size = 0;
};

struct loom_executable_t {
  std::unique_ptr<loom::opencl::Executable> impl;
};
