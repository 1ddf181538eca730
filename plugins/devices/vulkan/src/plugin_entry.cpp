// The Vulkan device plugin: a device family on the SDK's device kit (loom/device_kit.hpp), which
// implements the loom_device_api_t functions; this file lists the Vulkan physical devices and
// opens one as a kit::Device around a Context.
#include <cstdio>
#include <loom/device_kit.hpp>

#include "executable.hpp"
#include "handles.hpp"
#include "instance.hpp"
#include "ops/ops.hpp"

namespace loom::vulkan {
namespace {

namespace kit = sdk::kit;

constexpr const char* kNoDevice =
    "no Vulkan physical device (install a GPU driver or mesa-vulkan-drivers)";

// The scheduler's cost hints (ABI 1.9) for every Vulkan instance: a GPU-class throughput, and
// copies through staging buffers that cost a fixed latency plus PCIe-class bandwidth. They rank
// placements (whether an island is worth its copies); users correct them with --cost.
constexpr kit::CostHints kCostHints{1000, 8, 20, 20};

std::vector<kit::InstanceInfo> listing(const Instance& instance) {
  std::vector<kit::InstanceInfo> listed;
  // Device memory (flags 0): the core copies through copy_to_host / copy_from_host.
  for (size_t i = 0; i < instance.devices().size(); ++i) {
    const PhysicalDevice& d = instance.devices()[i];
    listed.push_back({"vulkan:" + std::to_string(i), d.describe(), d.unavailable, 0, kCostHints});
  }
  return listed;
}

class Device final : public kit::Device {
 public:
  explicit Device(std::unique_ptr<Context> context)
      : kit::Device({context->name(), context->description(), "", 0, kCostHints}),
        context_(std::move(context)) {}

  std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) override {
    return vulkan::why_unsupported(graph, node);
  }

  std::unique_ptr<kit::Executable> compile(const kit::CompileRequest& request) override {
    PipelineStore& pipelines = context_->pipelines();
    size_t created = pipelines.created();
    double ms = pipelines.creation_ms();
    auto exe = std::make_unique<Executable>(*context_, request.graph(), request.arena_size());
    // Weights live on in the device's constants buffer: the core may free its bytes.
    for (int id : exe->uploaded_constants()) request.constant_copied(id);
    size_t new_pipelines = pipelines.created() - created;
    if (new_pipelines) {
      pipelines.save();
      char text[160];
      std::snprintf(text, sizeof text, "%zu pipelines created in %.1f ms (disk cache %s)",
                    new_pipelines, pipelines.creation_ms() - ms,
                    pipelines.cache_loaded() ? "loaded" : "empty");
      sdk::log(LOOM_LOG_INFO, "vulkan", text);
    }
    return exe;
  }

  std::unique_ptr<kit::Buffer> allocate(size_t size) override {
    auto buffer = std::make_unique<Buffer>();
    buffer->allocation = context_->memory().allocate(size);
    buffer->pool = &context_->memory();
    buffer->size = size;
    return buffer;
  }

  void read(kit::Buffer& src, size_t offset, void* dst, size_t size) override {
    context_->download(static_cast<Buffer&>(src).allocation, offset, dst, size);
  }

  void write(const void* src, kit::Buffer& dst, size_t offset, size_t size) override {
    context_->upload(src, static_cast<Buffer&>(dst).allocation, offset, size);
  }

 private:
  std::unique_ptr<Context> context_;
};

class Family final : public kit::Family {
 public:
  Family() : kit::Family("vulkan") {}

  std::vector<kit::InstanceInfo> enumerate() override {
    Instance instance(false);
    if (instance.devices().empty()) return {{"vulkan:0", "Vulkan compute device", kNoDevice, 0}};
    return listing(instance);
  }

  std::unique_ptr<kit::Device> create(const kit::CreateArgs& args) override {
    Options options = parse_options(args.options);
    auto instance = std::make_shared<Instance>(options.validation);
    if (instance->devices().empty())
      sdk::fail(LOOM_ERROR_UNAVAILABLE, std::string("vulkan: ") + kNoDevice);
    // -1: the first usable device in preference order.
    size_t index = kit::pick_instance(listing(*instance), args.instance, name());
    return std::make_unique<Device>(std::make_unique<Context>(instance, index, options));
  }
};

Family family;
const loom_device_api_t kDeviceApi = kit::device_api(
    family, "Vulkan compute device: GLSL compute shaders on any Vulkan 1.1 GPU (or lavapipe)");

}  // namespace
}  // namespace loom::vulkan

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {"vulkan", "0.1.0", "Vulkan compute device (GLSL compute shaders, SPIR-V embedded)",
       LOOM_MAKE_ABI_VERSION(1, 0)},
      loom::vulkan::kDeviceApi);
}
