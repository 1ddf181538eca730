#include "pipelines.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>

#include "shaders.hpp"
#include "vk_check.hpp"

namespace loom::vulkan {

const EmbeddedShader& find_shader(std::string_view name) {
  for (const EmbeddedShader& s : embedded_shaders())
    if (name == s.name) return s;
  sdk::fail(LOOM_ERROR_INTERNAL, "vulkan: shader '" + std::string(name) + "' is not built in");
}

uint64_t shaders_hash() {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over names and words
  for (const EmbeddedShader& s : embedded_shaders()) {
    for (const char* c = s.name; *c; ++c) h = (h ^ static_cast<uint8_t>(*c)) * 1099511628211ull;
    for (size_t i = 0; i < s.word_count; ++i) h = (h ^ s.words[i]) * 1099511628211ull;
  }
  return h;
}

std::filesystem::path pipeline_cache_path(const PhysicalDevice& device) {
  std::filesystem::path dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = std::filesystem::path(xdg);
  else if (const char* home = std::getenv("HOME"); home && *home)
    dir = std::filesystem::path(home) / ".cache";
  else
    return {};
  const VkPhysicalDeviceProperties& p = device.properties;
  char name[160];
  std::string uuid;
  for (uint8_t b : p.pipelineCacheUUID) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    uuid += hex;
  }
  std::snprintf(name, sizeof name, "%04x-%04x-%08x-%s-%016llx.bin", p.vendorID, p.deviceID,
                p.driverVersion, uuid.c_str(), static_cast<unsigned long long>(shaders_hash()));
  return dir / "loom" / "vulkan" / name;
}

PipelineStore::PipelineStore(VkDevice device, std::filesystem::path cache_file)
    : device_(device), cache_file_(std::move(cache_file)) {
  std::vector<char> data;
  if (!cache_file_.empty()) {
    std::ifstream in(cache_file_, std::ios::binary);
    if (in) data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  VkPipelineCacheCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  // The driver validates the header (vendor, device, UUID) and ignores a foreign cache; a
  // corrupt file still makes creation fail on some drivers, so retry without it.
  if (vkCreatePipelineCache(device_, &info, nullptr, &cache_) != VK_SUCCESS) {
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    vk_check(vkCreatePipelineCache(device_, &info, nullptr, &cache_), "vkCreatePipelineCache");
  } else {
    cache_loaded_ = !data.empty();
  }
}

PipelineStore::~PipelineStore() {
  try {
    save();
  } catch (...) {
    // A cache that cannot be written only costs time on the next start.
  }
  for (auto& [key, p] : pipelines_) vkDestroyPipeline(device_, p->pipeline, nullptr);
  for (auto& [n, l] : layouts_) {
    vkDestroyPipelineLayout(device_, l.second, nullptr);
    vkDestroyDescriptorSetLayout(device_, l.first, nullptr);
  }
  for (auto& [name, m] : modules_) vkDestroyShaderModule(device_, m, nullptr);
  if (cache_) vkDestroyPipelineCache(device_, cache_, nullptr);
}

void PipelineStore::save() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cache_file_.empty() || created_ == saved_at_) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(device_, cache_, &size, data.data()) != VK_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(cache_file_.parent_path(), ec);
  // Write beside and rename: concurrent processes never see a half-written file.
  std::filesystem::path tmp = cache_file_;
  tmp += ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(this));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(data.data(), static_cast<std::streamsize>(size));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, cache_file_, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  saved_at_ = created_;
}

VkShaderModule PipelineStore::module(std::string_view shader) {
  auto it = modules_.find(shader);
  if (it != modules_.end()) return it->second;
  const EmbeddedShader& s = find_shader(shader);
  VkShaderModuleCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  info.codeSize = s.word_count * sizeof(uint32_t);
  info.pCode = s.words;
  VkShaderModule m = VK_NULL_HANDLE;
  vk_check(vkCreateShaderModule(device_, &info, nullptr, &m), "vkCreateShaderModule");
  modules_.emplace(std::string(shader), m);
  return m;
}

VkDescriptorSetLayout PipelineStore::set_layout(uint32_t bindings) {
  auto it = layouts_.find(bindings);
  if (it != layouts_.end()) return it->second.first;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  info.bindingCount = bindings;
  info.pBindings = b.data();
  VkDescriptorSetLayout set = VK_NULL_HANDLE;
  vk_check(vkCreateDescriptorSetLayout(device_, &info, nullptr, &set),
           "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxBindings * sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkResult r = vkCreatePipelineLayout(device_, &pl, nullptr, &layout);
  if (r != VK_SUCCESS) {
    vkDestroyDescriptorSetLayout(device_, set, nullptr);
    vk_check(r, "vkCreatePipelineLayout");
  }
  layouts_[bindings] = {set, layout};
  return set;
}

const Pipeline& PipelineStore::get(std::string_view shader, uint32_t bindings,
                                   std::span<const uint32_t> spec) {
  std::string key(shader);
  key += "/" + std::to_string(bindings);
  for (uint32_t v : spec) key += "," + std::to_string(v);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return *it->second;

  auto start = std::chrono::steady_clock::now();
  VkShaderModule m = module(shader);
  VkDescriptorSetLayout set = set_layout(bindings);
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i)
    entries[i] = {i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<uint32_t>(entries.size());
  si.pMapEntries = entries.data();
  si.dataSize = spec.size() * sizeof(uint32_t);
  si.pData = spec.data();
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = m;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  info.layout = layouts_[bindings].second;
  auto p = std::make_unique<Pipeline>();
  p->layout = info.layout;
  p->set_layout = set;
  p->bindings = bindings;
  vk_check(vkCreateComputePipelines(device_, cache_, 1, &info, nullptr, &p->pipeline),
           "vkCreateComputePipelines");
  ++created_;
  creation_ms_ +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return *pipelines_.emplace(std::move(key), std::move(p)).first->second;
}

size_t PipelineStore::created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

double PipelineStore::creation_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return creation_ms_;
}

}  // namespace loom::vulkan
