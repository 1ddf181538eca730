// One opened Vulkan device: logical device, compute queue, memory pool, staging buffer,
// pipelines. Shared by the plugin's device handle and every executable compiled on it.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "instance.hpp"
#include "memory.hpp"
#include "pipelines.hpp"

namespace loom::vulkan {

struct Options {
  bool fp16 = false;        // precision=f16 was asked for
  bool bf16 = false;        // precision=bf16 was asked for (no bf16 kernels: f32, warned)
  bool validation = false;  // validation=1 or LOOM_VULKAN_VALIDATION=1
  bool pipeline_cache = true;
};

// Parses "key=value;..." (precision=f32|f16, validation=0|1, pipeline_cache=0|1); throws
// LOOM_ERROR_INVALID_ARGUMENT naming an unknown key or value.
Options parse_options(const char* text);

class Context {
 public:
  // Opens physical device `index` (in preference order) of `instance`.
  Context(std::shared_ptr<Instance> instance, size_t index, const Options& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkDevice device() const { return device_; }
  const PhysicalDevice& physical() const { return physical_; }
  const VkPhysicalDeviceLimits& limits() const { return physical_.properties.limits; }
  const std::string& name() const { return name_; }
  std::string description() const;
  const Options& options() const { return options_; }
  // precision=f16 is in effect: float tensors are stored as fp16 in device buffers (the device
  // has storageBuffer16BitAccess, enabled at creation); kernels compute in f32.
  bool f16_storage() const { return f16_storage_; }
  // A CPU implementation (lavapipe, SwiftShader): kernels without shared-memory tiling are
  // faster there, since barriers are costly and caches already do the tiling.
  bool cpu_like() const { return physical_.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  MemoryPool& memory() { return *memory_; }
  PipelineStore& pipelines() { return *pipelines_; }
  uint32_t queue_family() const { return physical_.compute_queue_family; }

  // Submits command buffers in order and waits for them (the queue is shared: serialized).
  void submit_and_wait(std::span<const VkCommandBuffer> buffers, VkFence fence);
  // The two halves: submit signals `fence` when the buffers are done; wait waits for it and
  // resets it for the next submit.
  void submit(std::span<const VkCommandBuffer> buffers, VkFence fence);
  void wait(VkFence fence);
  // Host <-> device copies through the mapping (unified memory) or the staging buffer.
  void upload(const void* src, const Allocation& dst, VkDeviceSize offset, VkDeviceSize size);
  void download(const Allocation& src, VkDeviceSize offset, void* dst, VkDeviceSize size);

 private:
  void cleanup();
  void staged_copy(bool to_device, const Allocation& device_range, VkDeviceSize offset, char* host,
                   VkDeviceSize size);

  std::shared_ptr<Instance> instance_;
  PhysicalDevice physical_;
  Options options_;
  bool f16_storage_ = false;
  std::string name_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex queue_mutex_;
  std::unique_ptr<MemoryPool> memory_;
  std::unique_ptr<PipelineStore> pipelines_;
  // Staging state, guarded by transfer_mutex_.
  std::mutex transfer_mutex_;
  StagingBuffer staging_;
  VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer transfer_cmd_ = VK_NULL_HANDLE;
  VkFence transfer_fence_ = VK_NULL_HANDLE;
};

}  // namespace loom::vulkan
