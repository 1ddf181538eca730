#include "instance.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vk_check.hpp"

namespace loom::vulkan {
namespace {

bool has_layer(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool has_instance_extension(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(count);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, exts.data()) != VK_SUCCESS)
    return false;
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

std::string format_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  else
    std::snprintf(text, sizeof text, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  return text;
}

PhysicalDevice query(VkPhysicalDevice handle) {
  PhysicalDevice d;
  d.handle = handle;
  vkGetPhysicalDeviceProperties(handle, &d.properties);
  vkGetPhysicalDeviceMemoryProperties(handle, &d.memory);
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; ++i)
    if (d.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.device_local_bytes += d.memory.memoryHeaps[i].size;

  uint32_t api = d.properties.apiVersion;
  if (VK_API_VERSION_MAJOR(api) == 1 && VK_API_VERSION_MINOR(api) < 1) {
    d.unavailable = "needs Vulkan 1.1, the driver offers " +
                    std::to_string(VK_API_VERSION_MAJOR(api)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(api));
    return d;
  }
  bool v12 = VK_API_VERSION_MINOR(api) >= 2 || VK_API_VERSION_MAJOR(api) > 1;

  // Properties: subgroup size (1.1), driver name (1.2).
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  if (v12) subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 props2{};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props2.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(handle, &props2);
  d.subgroup_size = subgroup.subgroupSize;
  if (v12) d.driver = std::string(driver.driverName) + " " + driver.driverInfo;

  // Features: 16-bit storage (1.1), fp16/int8 arithmetic and 8-bit storage (1.2).
  VkPhysicalDevice16BitStorageFeatures storage16{};
  storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDevice8BitStorageFeatures storage8{};
  storage8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{};
  f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  if (v12) {
    storage16.pNext = &storage8;
    storage8.pNext = &f16i8;
  }
  VkPhysicalDeviceFeatures2 features2{};
  features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features2.pNext = &storage16;
  vkGetPhysicalDeviceFeatures2(handle, &features2);
  d.fp16_storage = storage16.storageBuffer16BitAccess;
  d.int8_storage = v12 && storage8.storageBuffer8BitAccess;
  d.fp16_arithmetic = v12 && f16i8.shaderFloat16;
  d.int8_arithmetic = v12 && f16i8.shaderInt8;

  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(handle, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  vkGetPhysicalDeviceQueueFamilyProperties(handle, &families, family.data());
  // Prefer a compute queue without graphics (async compute) but take any compute queue.
  for (uint32_t i = 0; i < families; ++i)
    if ((family[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && family[i].queueCount > 0 &&
        (d.compute_queue_family == UINT32_MAX || !(family[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)))
      d.compute_queue_family = i;
  if (d.compute_queue_family == UINT32_MAX) d.unavailable = "the device has no compute queue";
  return d;
}

}  // namespace

std::string PhysicalDevice::type_name() const {
  switch (properties.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

int PhysicalDevice::preference() const {
  switch (properties.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 4;
    default:
      return 3;
  }
}

std::string PhysicalDevice::describe() const {
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  std::string text = std::string(properties.deviceName) + ", " + type_name();
  if (!driver.empty()) text += ", driver " + driver;
  text += ", Vulkan " + std::to_string(VK_API_VERSION_MAJOR(properties.apiVersion)) + "." +
          std::to_string(VK_API_VERSION_MINOR(properties.apiVersion));
  text += ", " + format_bytes(device_local_bytes) + " device-local";
  text += ", subgroup " + std::to_string(subgroup_size);
  text +=
      std::string(", fp16 storage/arith ") + yes_no(fp16_storage) + "/" + yes_no(fp16_arithmetic);
  text +=
      std::string(", int8 storage/arith ") + yes_no(int8_storage) + "/" + yes_no(int8_arithmetic);
  return text;
}

bool validation_requested_by_environment() {
  const char* v = std::getenv("LOOM_VULKAN_VALIDATION");
  return v && *v && std::strcmp(v, "0") != 0;
}

Instance::Instance(bool validation) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS)
    loader_version = VK_API_VERSION_1_0;
  if (VK_API_VERSION_MINOR(loader_version) < 1 && VK_API_VERSION_MAJOR(loader_version) == 1)
    sdk::fail(LOOM_ERROR_UNAVAILABLE, "the Vulkan loader supports only Vulkan 1.0 (1.1 needed)");
  api_version_ = std::min(loader_version, static_cast<uint32_t>(VK_API_VERSION_1_3));

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "loom";
  app.pEngineName = "loom";
  app.apiVersion = api_version_;
  std::vector<const char*> layers, extensions;
  bool debug_utils = false;
  if (validation) {
    if (!has_layer("VK_LAYER_KHRONOS_validation")) {
      std::fprintf(stderr,
                   "loom vulkan: validation requested but VK_LAYER_KHRONOS_validation is not "
                   "installed (Debian: vulkan-validationlayers); running without it\n");
    } else {
      layers.push_back("VK_LAYER_KHRONOS_validation");
      debug_utils = has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
  }
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkResult r = vkCreateInstance(&info, nullptr, &instance_);
  if (r != VK_SUCCESS)
    sdk::fail(
        LOOM_ERROR_UNAVAILABLE,
        std::string("no usable Vulkan driver: vkCreateInstance failed with ") + result_name(r));

  if (debug_utils) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerCreateInfoEXT m{};
    m.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    m.pfnUserCallback = &Instance::on_message;
    m.pUserData = this;
    if (create) create(instance_, &m, nullptr, &messenger_);
  }

  uint32_t count = 0;
  r = vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  if (r == VK_SUCCESS && count) r = vkEnumeratePhysicalDevices(instance_, &count, handles.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    release();
    sdk::fail(LOOM_ERROR_UNAVAILABLE,
              std::string("vkEnumeratePhysicalDevices failed: ") + result_name(r));
  }
  for (VkPhysicalDevice h : handles) devices_.push_back(query(h));
  std::stable_sort(devices_.begin(), devices_.end(),
                   [](const PhysicalDevice& a, const PhysicalDevice& b) {
                     return a.preference() < b.preference();
                   });
}

Instance::~Instance() {
  release();
}

void Instance::release() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
  instance_ = VK_NULL_HANDLE;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::on_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<Instance*>(user);
  self->messages_.fetch_add(1);
  std::fprintf(stderr, "loom vulkan validation: %s: %s\n",
               (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning",
               data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

const char* result_name(VkResult result) {
  switch (result) {
#define LOOM_VK_RESULT(name) \
  case name:                 \
    return #name;
    LOOM_VK_RESULT(VK_SUCCESS)
    LOOM_VK_RESULT(VK_NOT_READY)
    LOOM_VK_RESULT(VK_TIMEOUT)
    LOOM_VK_RESULT(VK_INCOMPLETE)
    LOOM_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    LOOM_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    LOOM_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    LOOM_VK_RESULT(VK_ERROR_DEVICE_LOST)
    LOOM_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    LOOM_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    LOOM_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    LOOM_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    LOOM_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    LOOM_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    LOOM_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    LOOM_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    LOOM_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    LOOM_VK_RESULT(VK_ERROR_UNKNOWN)
#undef LOOM_VK_RESULT
    default:
      return "VkResult error";
  }
}

}  // namespace loom::vulkan
