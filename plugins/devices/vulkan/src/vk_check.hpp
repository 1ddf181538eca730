// VkResult to exceptions: every failing Vulkan call becomes a loom::sdk::Error naming the call
// and the result, converted to a status at the ABI boundary.
#pragma once

#include <vulkan/vulkan.h>

#include <loom/plugin.hpp>
#include <string>

namespace loom::vulkan {

const char* result_name(VkResult result);

inline loom_status_code_t result_code(VkResult result) {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return LOOM_ERROR_OUT_OF_MEMORY;
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
      return LOOM_ERROR_UNAVAILABLE;
    default:
      return LOOM_ERROR_RUNTIME;
  }
}

inline void vk_check(VkResult result, const char* what) {
  if (result != VK_SUCCESS)
    sdk::fail(result_code(result),
              std::string("vulkan: ") + what + " failed: " + result_name(result));
}

}  // namespace loom::vulkan
