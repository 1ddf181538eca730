// Device memory: a few large device-local blocks, each bound to one VkBuffer, sub-allocated
// first-fit with coalescing. Vulkan caps the number of live allocations (often 4096), so
// buffers the core asks for and executables' arenas are ranges of shared blocks, never
// allocations of their own (only a request larger than a block gets a dedicated block).
#pragma once

#include <vulkan/vulkan.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "instance.hpp"

namespace loom::vulkan {

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;  // the block's buffer
  VkDeviceSize offset = 0;           // of the range inside the block's buffer
  VkDeviceSize size = 0;
  void* mapped = nullptr;  // host pointer to the range when the memory is host-visible
  const void* block = nullptr;
  explicit operator bool() const { return buffer != VK_NULL_HANDLE; }
};

class MemoryPool {
 public:
  MemoryPool(VkDevice device, const PhysicalDevice& physical, VkDeviceSize block_size);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // A range of at least `size` bytes (0 is rounded up to one alignment unit), aligned for
  // storage-buffer binding. Throws LOOM_ERROR_OUT_OF_MEMORY with the size when it cannot.
  Allocation allocate(VkDeviceSize size);
  void release(const Allocation& allocation);

  // True when blocks are host-visible and coherent (integrated GPUs, lavapipe): host copies
  // then go through the mapping instead of staging buffers.
  bool host_visible() const { return host_visible_; }
  VkDeviceSize alignment() const { return alignment_; }
  size_t block_count() const;

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    char* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, coalesced
    size_t live = 0;
  };
  std::unique_ptr<Block> create_block(VkDeviceSize size);
  void destroy_block(Block& block);

  VkDevice device_;
  VkDeviceSize block_size_;
  VkDeviceSize alignment_;
  VkDeviceSize max_allocation_;
  uint32_t memory_type_ = UINT32_MAX;
  bool host_visible_ = false;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

// One host-visible buffer for transfers between host memory and device-local memory.
struct StagingBuffer {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  void* mapped = nullptr;
};
StagingBuffer create_staging_buffer(VkDevice device, const PhysicalDevice& physical,
                                    VkDeviceSize size);
void destroy_staging_buffer(VkDevice device, StagingBuffer& staging);

}  // namespace loom::vulkan
