#include "context.hpp"

#include <algorithm>
#include <cstring>
#include <loom/device_kit.hpp>

#include "vk_check.hpp"

namespace loom::vulkan {
namespace {

constexpr VkDeviceSize kBlockSize = 256ull << 20;   // device-local sub-allocation blocks
constexpr VkDeviceSize kStagingSize = 16ull << 20;  // host transfers go in chunks of this

}  // namespace

Options parse_options(const char* text) {
  Options o;
  o.validation = validation_requested_by_environment();
  std::string precision = "f32";
  // The core passes the user's thread count to every device; a GPU has no use for it (the
  // option is still checked).
  int threads = 0;
  sdk::kit::OptionReader("vulkan")
      .threads(&threads)
      .precision(&precision)
      .flag("validation", &o.validation)
      .flag("pipeline_cache", &o.pipeline_cache)
      .read(text);
  o.fp16 = precision == "f16";
  o.bf16 = precision == "bf16";
  return o;
}

Context::Context(std::shared_ptr<Instance> instance, size_t index, const Options& options)
    : instance_(std::move(instance)), options_(options) {
  const auto& devices = instance_->devices();
  if (index >= devices.size())
    sdk::fail(LOOM_ERROR_NOT_FOUND, "vulkan: instance " + std::to_string(index) +
                                        " does not exist (there are " +
                                        std::to_string(devices.size()) + ")");
  physical_ = devices[index];
  name_ = "vulkan:" + std::to_string(index);
  if (!physical_.unavailable.empty())
    sdk::fail(LOOM_ERROR_UNAVAILABLE, name_ + " is unavailable: " + physical_.unavailable);

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = physical_.compute_queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  // precision=f16 needs 16-bit storage buffers (core feature of Vulkan 1.1, optional); without
  // them the kernels keep f32, as the options convention asks, with a warning.
  f16_storage_ = options_.fp16 && physical_.fp16_storage;
  if (options_.fp16 && !f16_storage_)
    sdk::log(LOOM_LOG_WARNING, "vulkan",
             name_ + ": precision=f16 was asked for, but " + physical_.properties.deviceName +
                 " lacks storageBuffer16BitAccess (VK_KHR_16bit_storage); computing in f32");
  if (options_.bf16)
    sdk::log(LOOM_LOG_WARNING, "vulkan",
             name_ +
                 ": precision=bf16 was asked for, but the vulkan device has no bf16 kernels; "
                 "computing in f32");
  VkPhysicalDevice16BitStorageFeatures storage16{};
  storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  storage16.storageBuffer16BitAccess = VK_TRUE;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  if (f16_storage_) info.pNext = &storage16;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  VkResult r = vkCreateDevice(physical_.handle, &info, nullptr, &device_);
  if (r != VK_SUCCESS)
    sdk::fail(LOOM_ERROR_UNAVAILABLE, name_ + " (" + physical_.properties.deviceName +
                                          ") is unavailable: vkCreateDevice failed with " +
                                          result_name(r));
  try {
    vkGetDeviceQueue(device_, physical_.compute_queue_family, 0, &queue_);
    memory_ = std::make_unique<MemoryPool>(device_, physical_, kBlockSize);
    pipelines_ = std::make_unique<PipelineStore>(device_, options_.pipeline_cache
                                                              ? pipeline_cache_path(physical_)
                                                              : std::filesystem::path());
    if (!memory_->host_visible())
      staging_ = create_staging_buffer(device_, physical_, kStagingSize);
    VkCommandPoolCreateInfo pool{};
    pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = physical_.compute_queue_family;
    vk_check(vkCreateCommandPool(device_, &pool, nullptr, &transfer_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.commandPool = transfer_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    vk_check(vkAllocateCommandBuffers(device_, &alloc, &transfer_cmd_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence{};
    fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    vk_check(vkCreateFence(device_, &fence, nullptr, &transfer_fence_), "vkCreateFence");
  } catch (...) {
    cleanup();
    throw;
  }
}

Context::~Context() {
  cleanup();
}

void Context::cleanup() {
  if (device_ == VK_NULL_HANDLE) return;
  vkDeviceWaitIdle(device_);
  if (transfer_fence_) vkDestroyFence(device_, transfer_fence_, nullptr);
  if (transfer_pool_) vkDestroyCommandPool(device_, transfer_pool_, nullptr);
  destroy_staging_buffer(device_, staging_);
  pipelines_.reset();
  memory_.reset();
  vkDestroyDevice(device_, nullptr);
  device_ = VK_NULL_HANDLE;
  transfer_fence_ = VK_NULL_HANDLE;
  transfer_pool_ = VK_NULL_HANDLE;
}

std::string Context::description() const {
  std::string text = physical_.describe();
  if (f16_storage_)
    text += ", precision=f16: fp16 storage, f32 arithmetic";
  else if (options_.fp16)
    text += ", precision=f16 requested: no 16-bit storage, computing in f32";
  if (instance_->validation_enabled()) text += ", validation layer on";
  return text;
}

void Context::submit_and_wait(std::span<const VkCommandBuffer> buffers, VkFence fence) {
  submit(buffers, fence);
  wait(fence);
}

void Context::submit(std::span<const VkCommandBuffer> buffers, VkFence fence) {
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.commandBufferCount = static_cast<uint32_t>(buffers.size());
  info.pCommandBuffers = buffers.data();
  std::lock_guard<std::mutex> lock(queue_mutex_);
  vk_check(vkQueueSubmit(queue_, 1, &info, fence), "vkQueueSubmit");
}

void Context::wait(VkFence fence) {
  vk_check(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vk_check(vkResetFences(device_, 1, &fence), "vkResetFences");
}

void Context::upload(const void* src, const Allocation& dst, VkDeviceSize offset,
                     VkDeviceSize size) {
  if (size == 0) return;
  if (dst.mapped) {
    std::memcpy(static_cast<char*>(dst.mapped) + offset, src, size);
    return;
  }
  staged_copy(true, dst, offset, static_cast<char*>(const_cast<void*>(src)), size);
}

void Context::download(const Allocation& src, VkDeviceSize offset, void* dst, VkDeviceSize size) {
  if (size == 0) return;
  if (src.mapped) {
    std::memcpy(dst, static_cast<const char*>(src.mapped) + offset, size);
    return;
  }
  staged_copy(false, src, offset, static_cast<char*>(dst), size);
}

void Context::staged_copy(bool to_device, const Allocation& range, VkDeviceSize offset, char* host,
                          VkDeviceSize size) {
  std::lock_guard<std::mutex> lock(transfer_mutex_);
  for (VkDeviceSize done = 0; done < size;) {
    VkDeviceSize chunk = std::min(size - done, staging_.size);
    if (to_device) std::memcpy(staging_.mapped, host + done, chunk);
    vk_check(vkResetCommandBuffer(transfer_cmd_, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk_check(vkBeginCommandBuffer(transfer_cmd_, &begin), "vkBeginCommandBuffer");
    VkBufferCopy region{};
    region.size = chunk;
    if (to_device) {
      region.dstOffset = range.offset + offset + done;
      vkCmdCopyBuffer(transfer_cmd_, staging_.buffer, range.buffer, 1, &region);
    } else {
      region.srcOffset = range.offset + offset + done;
      vkCmdCopyBuffer(transfer_cmd_, range.buffer, staging_.buffer, 1, &region);
    }
    // Make the copy visible to later queue work (to_device) or to the host (download).
    VkMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = to_device ? VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT
                                      : VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(transfer_cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         to_device
                             ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT
                             : VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &barrier, 0, nullptr, 0, nullptr);
    vk_check(vkEndCommandBuffer(transfer_cmd_), "vkEndCommandBuffer");
    submit_and_wait(std::span<const VkCommandBuffer>(&transfer_cmd_, 1), transfer_fence_);
    if (!to_device) std::memcpy(host + done, staging_.mapped, chunk);
    done += chunk;
  }
}

}  // namespace loom::vulkan
