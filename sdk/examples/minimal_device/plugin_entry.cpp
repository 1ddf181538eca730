// The minimal device plugin: a device family on the SDK's device kit. The kit implements the
// loom_device_api_t functions (argument and range checks, no exception across the C ABI, outputs
// freed when a run fails); the plugin says which instance exists, which options it reads, which
// nodes it takes and how it compiles them.
#include <loom/device_kit.hpp>

#include "device.hpp"
#include "executable.hpp"

namespace minimal {
namespace {

namespace kit = loom::sdk::kit;

constexpr const char* kName = "minimal";
constexpr const char* kDescription = "SDK example: float32 Relu and same-shape Add in host memory";

// What the scheduler should assume of this device (ABI 1.9 cost hints; 0 = the host's default):
// scalar loops, about a GFLOP/s, and a cheap launch. Host memory: no transfer costs.
constexpr kit::CostHints kCost{1, 0, 0, 1};

kit::InstanceInfo instance() {
  return {kName, kDescription, "", LOOM_DEVICE_HOST_MEMORY, kCost};
}

class Device final : public kit::Device {
 public:
  Device() : kit::Device(instance()) {}
  std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) override {
    return minimal::why_unsupported(graph, node);
  }
  // The core's arena plan (arena_offset/arena_size) is ignored: every value gets its own
  // allocation, which the ABI allows.
  std::unique_ptr<kit::Executable> compile(const kit::CompileRequest& request) override {
    return std::make_unique<Executable>(request.graph());
  }
};

class Family final : public kit::Family {
 public:
  Family() : kit::Family(kName) {}
  std::vector<kit::InstanceInfo> enumerate() override { return {instance()}; }
  std::unique_ptr<kit::Device> create(const kit::CreateArgs& args) override {
    kit::pick_instance(enumerate(), args.instance, name());
    // The options reach every device of the session: accept the common keys, reject any other.
    int threads = 0;  // single-threaded: read and ignored
    std::string precision = "f32";
    kit::OptionReader(name()).threads(&threads).precision(&precision).read(args.options);
    if (precision != "f32")  // what a device cannot do in the asked precision runs in f32
      loom::sdk::log(LOOM_LOG_WARNING, kName,
                     "precision=" + precision + " is not supported; computing in f32");
    return std::make_unique<Device>();
  }
};

Family family;
const loom_device_api_t kDeviceApi = kit::device_api(family, kDescription);

}  // namespace
}  // namespace minimal

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info, {"minimal", "1.0.0", "SDK example: a minimal host-memory device"},
      minimal::kDeviceApi);
}
