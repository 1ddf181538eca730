// The neon device plugin: the entry point and the device family on the SDK's device kit, which
// implements the loom_device_api_t functions (guards, argument and range checks, run's input
// checks and output rollback, device info).
#include <algorithm>
#include <loom/device_kit.hpp>
#include <loom/device_plugin.hpp>
#include <loom/plugin.hpp>
#include <thread>

#include "device/cpu_features.hpp"
#include "device/neon_device.hpp"

namespace loom::neon {
namespace {

std::string base_description() {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return describe_features(cpu_features()) + " (" + std::to_string(cores) + " hardware threads)";
}

// The scheduler's cost hints (ABI 1.9): vectorized kernels in host memory, about five times
// the reference cpu device.
constexpr sdk::kit::CostHints kCost{100, 0, 0, 1};

class Family final : public sdk::kit::Family {
 public:
  Family() : sdk::kit::Family("neon") {}

  std::vector<sdk::kit::InstanceInfo> enumerate() override {
    return {{"neon", base_description(), "", LOOM_DEVICE_HOST_MEMORY, kCost}};
  }

  // Options (see sdk::device_options): threads=N overrides the thread count; precision=f16
  // selects the fp16 GEMM and packed depthwise kernels where the CPU has ARMv8.2 FP16
  // arithmetic. What cannot run in the asked precision (bf16; f16 without FP16) runs in f32.
  std::unique_ptr<sdk::kit::Device> create(const sdk::kit::CreateArgs& args) override {
    sdk::kit::pick_instance(enumerate(), args.instance, name());
    int threads = args.threads;
    std::string precision = "f32";
    sdk::kit::OptionReader(name()).threads(&threads).precision(&precision).read(args.options);
    CompileOptions compile;
    if (precision == "f16" && cpu_features().fp16_arithmetic) {
      compile.fp16 = true;
    } else if (precision != "f32") {
      sdk::log(LOOM_LOG_WARNING, "neon",
               "precision=" + precision +
                   (precision == "f16" ? " needs ARMv8.2 FP16 arithmetic, which this CPU lacks"
                                       : " is not supported by the neon device") +
                   "; computing in f32");
    }
    threads = sdk::kit::resolve_threads(threads);
    sdk::kit::InstanceInfo info{"neon",
                                base_description() + ", " + std::to_string(threads) + " threads" +
                                    (compile.fp16 ? ", fp16 GEMM and depthwise" : ""),
                                "", LOOM_DEVICE_HOST_MEMORY, kCost};
    return std::make_unique<Device>(std::move(info), threads, compile);
  }
};

Family family;
const loom_device_api_t kDeviceApi = sdk::kit::device_api(
    family,
    "aarch64 NEON kernels for the hot ops (conv, GEMM, pooling, elementwise, softmax, layer "
    "norm); fp32, fp16 GEMM and depthwise on ARMv8.2 FP16 CPUs");

}  // namespace
}  // namespace loom::neon

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {"neon", "0.1.0", "neon device: hand-written aarch64 NEON kernels for the hot ops"},
      loom::neon::kDeviceApi);
}
