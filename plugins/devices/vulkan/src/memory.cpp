#include "memory.hpp"

#include <algorithm>
#include <string>

#include "vk_check.hpp"

namespace loom::vulkan {
namespace {

constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// The first memory type allowed by `bits` with all of `required`; UINT32_MAX if none.
uint32_t find_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t bits,
                   VkMemoryPropertyFlags required) {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & required) == required)
      return i;
  return UINT32_MAX;
}

VkBuffer make_buffer(VkDevice device, VkDeviceSize size, VkBufferUsageFlags usage) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  vk_check(vkCreateBuffer(device, &info, nullptr, &buffer), "vkCreateBuffer");
  return buffer;
}

VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize a) {
  return (v + a - 1) / a * a;
}

}  // namespace

MemoryPool::MemoryPool(VkDevice device, const PhysicalDevice& physical, VkDeviceSize block_size)
    : device_(device), block_size_(block_size) {
  const VkPhysicalDeviceLimits& limits = physical.properties.limits;
  alignment_ = std::max<VkDeviceSize>(
      {256, limits.minStorageBufferOffsetAlignment, limits.nonCoherentAtomSize});
  VkPhysicalDeviceMaintenance3Properties m3{};
  m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(physical.handle, &p2);
  max_allocation_ = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : (1ull << 31);
  block_size_ = std::min(block_size_, max_allocation_);

  // Which memory types can back our buffers.
  VkBuffer probe = make_buffer(device_, 4096, kUsage);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, probe, &req);
  vkDestroyBuffer(device_, probe, nullptr);
  const auto coherent_local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                              VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  // A discrete GPU's host-visible device memory is a small window (without resizable BAR):
  // keep the plain device-local heap there and stage copies. Unified-memory devices map.
  bool unified = physical.properties.deviceType != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  if (unified) memory_type_ = find_type(physical.memory, req.memoryTypeBits, coherent_local);
  if (memory_type_ == UINT32_MAX)
    memory_type_ =
        find_type(physical.memory, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (memory_type_ == UINT32_MAX) memory_type_ = find_type(physical.memory, req.memoryTypeBits, 0);
  if (memory_type_ == UINT32_MAX)
    sdk::fail(LOOM_ERROR_UNAVAILABLE, "vulkan: no memory type can hold storage buffers");
  auto flags = physical.memory.memoryTypes[memory_type_].propertyFlags;
  host_visible_ = (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                  (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
}

MemoryPool::~MemoryPool() {
  for (auto& b : blocks_) destroy_block(*b);
}

std::unique_ptr<MemoryPool::Block> MemoryPool::create_block(VkDeviceSize size) {
  if (size > max_allocation_)
    sdk::fail(LOOM_ERROR_OUT_OF_MEMORY, "vulkan: " + std::to_string(size) +
                                            " bytes exceed the device's largest allocation (" +
                                            std::to_string(max_allocation_) + " bytes)");
  auto block = std::make_unique<Block>();
  block->size = size;
  block->buffer = make_buffer(device_, size, kUsage);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, block->buffer, &req);
  VkMemoryAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  info.allocationSize = req.size;
  info.memoryTypeIndex = memory_type_;
  VkResult r = vkAllocateMemory(device_, &info, nullptr, &block->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, block->buffer, nullptr);
    sdk::fail(LOOM_ERROR_OUT_OF_MEMORY, "vulkan: cannot allocate " + std::to_string(size) +
                                            " bytes of device memory (" + result_name(r) + ")");
  }
  r = vkBindBufferMemory(device_, block->buffer, block->memory, 0);
  if (r == VK_SUCCESS && host_visible_)
    r = vkMapMemory(device_, block->memory, 0, VK_WHOLE_SIZE, 0,
                    reinterpret_cast<void**>(&block->mapped));
  if (r != VK_SUCCESS) {
    destroy_block(*block);
    vk_check(r, "binding or mapping device memory");
  }
  block->free[0] = size;
  return block;
}

void MemoryPool::destroy_block(Block& block) {
  if (block.mapped) vkUnmapMemory(device_, block.memory);
  if (block.buffer) vkDestroyBuffer(device_, block.buffer, nullptr);
  if (block.memory) vkFreeMemory(device_, block.memory, nullptr);
  block = Block{};
}

Allocation MemoryPool::allocate(VkDeviceSize size) {
  VkDeviceSize need = round_up(std::max<VkDeviceSize>(size, 1), alignment_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto take = [&](Block& b) -> Allocation {
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < need) continue;
      VkDeviceSize offset = it->first, rest = it->second - need;
      b.free.erase(it);
      if (rest) b.free[offset + need] = rest;
      ++b.live;
      return {b.buffer, offset, need, b.mapped ? b.mapped + offset : nullptr, &b};
    }
    return {};
  };
  for (auto& b : blocks_)
    if (Allocation a = take(*b)) return a;
  blocks_.push_back(create_block(std::max(need, block_size_)));
  return take(*blocks_.back());
}

void MemoryPool::release(const Allocation& a) {
  if (!a) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = *blocks_[i];
    if (&b != a.block) continue;
    auto next = b.free.lower_bound(a.offset);
    VkDeviceSize offset = a.offset, size = a.size;
    if (next != b.free.end() && offset + size == next->first) {
      size += next->second;
      next = b.free.erase(next);
    }
    if (next != b.free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        b.free.erase(prev);
      }
    }
    b.free[offset] = size;
    // An empty block beyond the first is returned to the driver.
    if (--b.live == 0 && i > 0) {
      destroy_block(b);
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return;
  }
}

size_t MemoryPool::block_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_.size();
}

StagingBuffer create_staging_buffer(VkDevice device, const PhysicalDevice& physical,
                                    VkDeviceSize size) {
  StagingBuffer s;
  s.size = size;
  s.buffer = make_buffer(device, size,
                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, s.buffer, &req);
  const auto visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type =
      find_type(physical.memory, req.memoryTypeBits, visible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if (type == UINT32_MAX) type = find_type(physical.memory, req.memoryTypeBits, visible);
  if (type == UINT32_MAX) {
    vkDestroyBuffer(device, s.buffer, nullptr);
    sdk::fail(LOOM_ERROR_UNAVAILABLE, "vulkan: no host-visible coherent memory for staging");
  }
  VkMemoryAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  info.allocationSize = req.size;
  info.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(device, &info, nullptr, &s.memory);
  if (r == VK_SUCCESS) r = vkBindBufferMemory(device, s.buffer, s.memory, 0);
  if (r == VK_SUCCESS) r = vkMapMemory(device, s.memory, 0, VK_WHOLE_SIZE, 0, &s.mapped);
  if (r != VK_SUCCESS) {
    destroy_staging_buffer(device, s);
    vk_check(r, "creating the staging buffer");
  }
  return s;
}

void destroy_staging_buffer(VkDevice device, StagingBuffer& s) {
  if (s.mapped) vkUnmapMemory(device, s.memory);
  if (s.buffer) vkDestroyBuffer(device, s.buffer, nullptr);
  if (s.memory) vkFreeMemory(device, s.memory, nullptr);
  s = StagingBuffer{};
}

}  // namespace loom::vulkan
