// The cpu device plugin: the entry point and the device family on the SDK's device kit, which
// implements the loom_device_api_t functions (guards, argument and range checks, run's input
// checks and output rollback, device info).
#include <algorithm>
#include <fstream>
#include <loom/device_kit.hpp>
#include <loom/device_plugin.hpp>
#include <loom/plugin.hpp>
#include <thread>

#include "cpu_device.hpp"
#include "executable.hpp"

// Test-only variants (tests/scheduler builds them through loom_cpu_test_variant()): the same
// kernels under another device name, limited to an op subset, optionally with "remote" memory
// that the core must copy through copy_to_host/copy_from_host. The real plugin defines none.
#ifndef LOOM_CPU_DEVICE_NAME
#define LOOM_CPU_DEVICE_NAME "cpu"
#endif
#ifndef LOOM_CPU_ONLY_OPS
#define LOOM_CPU_ONLY_OPS ""  // comma-separated; "" = every op
#endif
#ifndef LOOM_CPU_EXCLUDED_OPS
#define LOOM_CPU_EXCLUDED_OPS ""
#endif
#ifdef LOOM_CPU_REMOTE_MEMORY
constexpr bool kRemoteMemory = true;
#else
constexpr bool kRemoteMemory = false;
#endif

namespace loom::cpu {
namespace {

bool in_list(const char* list, const std::string& op) {
  std::string text = std::string(",") + list + ",";
  return text.find("," + op + ",") != std::string::npos;
}

// Empty when the variant's op filter lets the op through.
std::string filtered_out(const std::string& op) {
  if (LOOM_CPU_ONLY_OPS[0] != '\0' && !in_list(LOOM_CPU_ONLY_OPS, op))
    return std::string("test device " LOOM_CPU_DEVICE_NAME " runs only ") + LOOM_CPU_ONLY_OPS;
  if (in_list(LOOM_CPU_EXCLUDED_OPS, op))
    return "test device " LOOM_CPU_DEVICE_NAME " leaves " + op + " to others";
  return "";
}

// ---- the device on the kit -----------------------------------------------------------------

// The scheduler's cost hints (ABI 1.9): plain loops, a few GFLOP/s per core. Test variants
// state what their tests expect (loom_cpu_test_variant's COST "gflops,gbps,latency_us,launch_us").
#ifndef LOOM_CPU_COST_HINTS
#define LOOM_CPU_COST_HINTS 20, 0, 0, 1
#endif
constexpr sdk::kit::CostHints kCost{LOOM_CPU_COST_HINTS};

// Remote memory (test variants): flags 0, so the kit's host_pointer says NULL and the core
// copies through copy_to_host/copy_from_host, which still memcpy the buffers' host bytes.
constexpr uint32_t kFlags = kRemoteMemory ? 0 : LOOM_DEVICE_HOST_MEMORY;

class Device final : public sdk::kit::Device {
 public:
  Device(loom_host_t* host, int threads)
      : sdk::kit::Device({LOOM_CPU_DEVICE_NAME,
                          describe_host_cpu() + ", " + std::to_string(threads) + " threads", "",
                          kFlags, kCost}),
        host_(host),
        pool_(threads) {}

  std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) override {
    std::string reason = cpu::why_unsupported(host_, graph, node);
    if (reason.empty() && node.op_type) reason = filtered_out(node.op_type);
    return reason;
  }

  // The core's arena plan is not used: kernels like Identity or Reshape alias their input,
  // which a liveness plan made outside the device cannot see, so every value gets its own
  // reference-counted allocation instead (see docs/cpu-device.md).
  std::unique_ptr<sdk::kit::Executable> compile(const sdk::kit::CompileRequest& request) override {
    return std::make_unique<Executable>(host_, pool_, request.graph(), !kRemoteMemory);
  }

 private:
  loom_host_t* host_;  // for find_kernel; outlives the device
  ThreadPool pool_;
};

class Family final : public sdk::kit::Family {
 public:
  Family() : sdk::kit::Family(LOOM_CPU_DEVICE_NAME) {}

  std::vector<sdk::kit::InstanceInfo> enumerate() override {
    return {{LOOM_CPU_DEVICE_NAME, describe_host_cpu(), "", kFlags, kCost}};
  }

  // Options (see sdk::device_options): threads=N, and precision, which the reference device
  // accepts and ignores: it always computes in the model's own types.
  std::unique_ptr<sdk::kit::Device> create(const sdk::kit::CreateArgs& args) override {
    sdk::kit::pick_instance(enumerate(), args.instance, name());
    int threads = args.threads;
    std::string precision = "f32";
    sdk::kit::OptionReader(name()).threads(&threads).precision(&precision).read(args.options);
    return std::make_unique<Device>(args.host, sdk::kit::resolve_threads(threads));
  }
};

Family family;
const loom_device_api_t kDeviceApi = sdk::kit::device_api(
    family, "portable reference CPU device: every supported ONNX op, plainly implemented");

}  // namespace

std::string describe_host_cpu() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    // x86 says "model name", many ARM kernels "Hardware" or "Processor".
    if (line.rfind("model name", 0) == 0 || line.rfind("Processor", 0) == 0 ||
        line.rfind("Hardware", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(" \t"));
        if (!model.empty()) break;
      }
    }
  }
  if (model.empty()) model = "host CPU";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return model + " (" + std::to_string(cores) + " hardware threads)";
}

}  // namespace loom::cpu

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {LOOM_CPU_DEVICE_NAME, "0.1.0",
       "reference cpu device: portable, dependency-free kernels for the ONNX operator set"},
      loom::cpu::kDeviceApi);
}
