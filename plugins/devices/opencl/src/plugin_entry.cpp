// The opencl device plugin: a device family on the SDK's device kit (loom/device_kit.hpp), which
// implements the loom_device_api_t functions; this file lists the OpenCL devices and creates one.
#include <loom/device_kit.hpp>

#include "device.hpp"
#include "discovery.hpp"

namespace loom::opencl {
namespace {

namespace kit = sdk::kit;

std::vector<kit::InstanceInfo> listing(const Discovery& found) {
  std::vector<kit::InstanceInfo> listed;
  for (size_t i = 0; i < found.devices.size(); ++i) {
    const DeviceEntry& e = found.devices[i];
    listed.push_back(
        {"opencl:" + std::to_string(i), e.describe(), e.unusable_reason(), 0, kCostHints});
  }
  return listed;
}

class Family final : public kit::Family {
 public:
  Family() : kit::Family("opencl") {}

  std::vector<kit::InstanceInfo> enumerate() override {
    Discovery found = discover_devices();
    // No platform or no device: one unavailable entry that says why.
    if (found.devices.empty()) return {{"opencl", "OpenCL device", found.error, 0}};
    return listing(found);
  }

  std::unique_ptr<kit::Device> create(const kit::CreateArgs& args) override {
    DeviceOptions options = parse_device_options(args.options);
    Discovery found = discover_devices();
    if (found.devices.empty()) sdk::fail(LOOM_ERROR_UNAVAILABLE, found.error);
    std::vector<kit::InstanceInfo> listed = listing(found);
    // -1: the best usable device (GPUs before CPU drivers), not simply the first; when none is
    // usable, pick_instance fails naming every device's reason.
    int index = args.instance < 0 ? best_device(found.devices) : args.instance;
    size_t picked = kit::pick_instance(listed, index, name());
    return std::make_unique<Device>(found.devices[picked], "opencl:" + std::to_string(picked),
                                    options);
  }
};

Family family;
const loom_device_api_t kDeviceApi =
    kit::device_api(family, "GPU (or any OpenCL 1.2 device) through the OpenCL ICD loader");

}  // namespace
}  // namespace loom::opencl

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {"opencl", "0.1.0", "OpenCL device: GPUs (and any OpenCL 1.2 device) through the ICD loader",
       LOOM_ABI_VERSION, [] { loom::opencl::release_shared_contexts(); }},
      loom::opencl::kDeviceApi);
}
