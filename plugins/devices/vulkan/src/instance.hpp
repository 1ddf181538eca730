// The Vulkan instance and the physical devices it sees, with what --list-devices shows about
// each and the order the plugin prefers them in (discrete GPU first, CPU implementations such
// as lavapipe last).
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom::vulkan {

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  std::string driver;  // driver name and info, when the device reports them (Vulkan 1.2)
  uint32_t subgroup_size = 0;
  bool fp16_storage = false;  // storageBuffer16BitAccess
  bool fp16_arithmetic = false;
  bool int8_storage = false;
  bool int8_arithmetic = false;
  uint32_t compute_queue_family = UINT32_MAX;
  uint64_t device_local_bytes = 0;
  std::string unavailable;  // why the plugin cannot use it; empty when usable

  std::string type_name() const;
  std::string describe() const;  // one line for --list-devices
  int preference() const;        // lower is better
};

class Instance {
 public:
  // Creates the instance; throws LOOM_ERROR_UNAVAILABLE when there is no loader or driver.
  // `validation` enables VK_LAYER_KHRONOS_validation when installed; its messages go to
  // stderr prefixed "loom vulkan validation:" and are counted.
  explicit Instance(bool validation);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  uint64_t validation_messages() const { return messages_.load(); }
  // Physical devices, best first.
  const std::vector<PhysicalDevice>& devices() const { return devices_; }

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user);
  void release();
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t api_version_ = VK_API_VERSION_1_1;
  std::atomic<uint64_t> messages_{0};
  std::vector<PhysicalDevice> devices_;
};

// True when LOOM_VULKAN_VALIDATION is set to a non-empty value other than "0".
bool validation_requested_by_environment();

}  // namespace loom::vulkan
