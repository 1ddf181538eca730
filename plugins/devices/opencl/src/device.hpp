// The OpenCL device instance (a kit::Device, see loom/device_kit.hpp): one context on one
// cl_device_id with two in-order queues (kernels; uploads from the host), and the kernel program
// in the variant of the storage precision, built (or loaded from the disk cache) on first use.
#pragma once

#include <array>
#include <loom/device_kit.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cl_api.hpp"
#include "discovery.hpp"

namespace loom::opencl {

class Executable;

// Options from "key=value;..." in the shared convention of sdk::device_options (common keys
// and opencl.KEY; infer-run --precision f16 passes precision=f16).
struct DeviceOptions {
  // precision=f16: float32 tensors are stored as fp16 in device buffers (vload_half /
  // vstore_half_rte, OpenCL 1.2 core, so every device can), arithmetic stays f32.
  bool f16_storage = false;
  bool bf16_requested = false;  // no bf16 kernels: warned, computed in f32
  // GEMM kernel family: "auto" (tiled on GPUs, blocked on CPU drivers), "tiled", "blocked".
  std::string gemm = "auto";
  // How fp16 storage converts: "auto" (integer arithmetic on CPU drivers, the built-in
  // vload_half/vstore_half_rte elsewhere), "builtin", "bits". Same results either way.
  std::string f16_convert = "auto";
};
DeviceOptions parse_device_options(const char* options);

// Per OpenCL device and process: the context, the queues and the program (one per storage
// precision). Sessions come and go (a test creates hundreds); each program variant is built or
// loaded once per process.
struct SharedContext {
  ContextHandle context;
  QueueHandle queue;  // kernels, in order
  // Host-to-device uploads (copy_from_host), so they proceed while kernels already queued run;
  // the kernels that read an uploaded buffer wait for its write event. Device-to-host reads go
  // here too: after the writes to the same buffer, and a run's outputs are complete when it
  // returns. In-order, used without a lock (OpenCL queues are thread-safe).
  QueueHandle transfer_queue;
  std::mutex program_mutex;
  // [0]: f32 storage, [1]: f16 storage with the built-in conversions, [2]: f16 storage with
  // integer conversions (see Device::converts_half_bits).
  std::array<ProgramHandle, 3> programs;
  // Serializes enqueueing a run's kernels (they set arguments on shared kernel objects); the
  // run then waits for its own marker event outside the lock.
  std::mutex queue_mutex;
};

// Frees the shared contexts (the plugin's shutdown hook: before the driver goes away).
void release_shared_contexts();

// A device buffer, with the uploads still in flight into it: each non-blocking write on the
// transfer queue reads a host copy of the caller's data that lives here until it completes.
struct Buffer final : sdk::kit::Buffer {
  struct PendingWrite {
    EventHandle done;
    std::vector<uint8_t> staging;
  };
  MemHandle mem;
  std::mutex pending_mutex;
  std::vector<PendingWrite> pending;
  // Waits for the uploads in flight, so the staging copies they read outlive them.
  ~Buffer() override;
};

// The opencl buffer behind a tensor's loom_buffer_t.
inline Buffer& buffer_of(loom_buffer_t* handle) {
  return sdk::kit::buffer_of<Buffer>(handle);
}

// The scheduler's cost hints (ABI 1.9) for every OpenCL instance: a GPU-class throughput, and
// copies through the host that cost a fixed latency plus PCIe-class bandwidth. They rank
// placements (whether an island is worth its copies); users correct them with --cost.
inline constexpr sdk::kit::CostHints kCostHints{500, 8, 20, 20};

class Device final : public sdk::kit::Device {
 public:
  Device(DeviceEntry entry, std::string name, const DeviceOptions& options);

  const DeviceEntry& entry() const { return entry_; }
  const std::string& name() const { return info_.name; }

  // ---- kit::Device ----
  std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) override;
  std::unique_ptr<sdk::kit::Executable> compile(const sdk::kit::CompileRequest& request) override;
  std::unique_ptr<sdk::kit::Buffer> allocate(size_t size) override;
  void read(sdk::kit::Buffer& src, size_t offset, void* dst, size_t size) override;
  void write(const void* src, sdk::kit::Buffer& dst, size_t offset, size_t size) override;

  cl_context context() const { return shared_->context.get(); }
  cl_command_queue queue() const { return shared_->queue.get(); }
  cl_command_queue transfer_queue() const { return shared_->transfer_queue.get(); }
  // Float32 tensors live in device buffers as fp16 (precision=f16).
  bool f16_storage() const { return options_.f16_storage; }
  // The work-group size of the 1-D kernels.
  size_t lanes() const { return 64; }
  // GEMMs staged through local memory (gemm_tiled: 16x16 work-groups, 8.5 KiB) suit GPUs;
  // CPU drivers do better with register blocks read through their caches (gemm_blocked).
  bool prefers_local_tiles() const {
    if (options_.gemm != "auto") return options_.gemm == "tiled" && tiles_fit();
    return (entry_.type & CL_DEVICE_TYPE_CPU) == 0 && tiles_fit();
  }
  bool tiles_fit() const { return entry_.max_work_group >= 256 && entry_.local_memory >= 16384; }
  // fp16 storage converts with integer arithmetic (LOOM_HALF_BITS) rather than the driver's
  // vload_half/vstore_half_rte: CPU drivers implement those as per-element library calls that
  // keep the kernels' loops scalar (ResNet-50 on PoCL ran 3.5x slower than f32 with them).
  bool converts_half_bits() const {
    if (options_.f16_convert != "auto") return options_.f16_convert == "bits";
    return (entry_.type & CL_DEVICE_TYPE_CPU) != 0;
  }

  // A new kernel object of the program (one per step: kernel arguments are per object).
  KernelHandle create_kernel(const char* name);

  // A device buffer of at least one byte.
  MemHandle allocate(size_t bytes, const char* what);

  std::mutex& mutex() { return shared_->queue_mutex; }

 private:
  cl_program program();

  DeviceEntry entry_;
  DeviceOptions options_;
  std::shared_ptr<SharedContext> shared_;
};

}  // namespace loom::opencl
