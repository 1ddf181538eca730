// Compute pipelines keyed by (shader, binding count, specialization constants), created
// through a VkPipelineCache that is loaded from and saved to disk, so the second start of a
// process skips the driver's shader compilation. The cache file is keyed by vendor, device,
// driver version, pipeline-cache UUID and a hash of the embedded shaders.
#pragma once

#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "instance.hpp"

namespace loom::vulkan {

// Every kernel gets its tensors' word offsets as push constants (see shaders/common.glsl).
constexpr uint32_t kMaxBindings = 8;

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
};

class PipelineStore {
 public:
  // cache_file empty: no disk cache.
  PipelineStore(VkDevice device, std::filesystem::path cache_file);
  ~PipelineStore();  // saves the cache when pipelines were created
  PipelineStore(const PipelineStore&) = delete;
  PipelineStore& operator=(const PipelineStore&) = delete;

  // Thread-safe; the pipeline lives as long as the store. spec[i] is constant_id i.
  const Pipeline& get(std::string_view shader, uint32_t bindings, std::span<const uint32_t> spec);

  // Statistics for the logs and docs/vulkan-device.md: pipelines created and the time spent.
  size_t created() const;
  double creation_ms() const;
  const std::filesystem::path& cache_file() const { return cache_file_; }
  bool cache_loaded() const { return cache_loaded_; }
  void save();

 private:
  VkDescriptorSetLayout set_layout(uint32_t bindings);
  VkShaderModule module(std::string_view shader);

  VkDevice device_;
  std::filesystem::path cache_file_;
  bool cache_loaded_ = false;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  mutable std::mutex mutex_;
  std::map<std::string, VkShaderModule, std::less<>> modules_;
  std::map<uint32_t, std::pair<VkDescriptorSetLayout, VkPipelineLayout>> layouts_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  size_t created_ = 0;
  size_t saved_at_ = 0;
  double creation_ms_ = 0;
};

// $XDG_CACHE_HOME/loom/vulkan (or ~/.cache/loom/vulkan) / <device key>.bin; empty when neither
// variable is set.
std::filesystem::path pipeline_cache_path(const PhysicalDevice& device);

}  // namespace loom::vulkan
