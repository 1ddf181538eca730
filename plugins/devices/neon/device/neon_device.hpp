// The neon device on the SDK's device kit (loom/device_kit.hpp): the kit implements the
// loom_device_api_t functions and the ABI's handle types (buffers are plain host memory,
// kit::HostBuffer; executables loom::neon::Executable). The plugin lists its instance, reads its
// options, says which nodes it takes and compiles them (device/plugin_entry.cpp).
#pragma once

#include <loom/device_kit.hpp>
#include <loom/thread_pool.hpp>
#include <memory>
#include <string>

#include "device/executable.hpp"

namespace loom::neon {

class Device final : public sdk::kit::Device {
 public:
  Device(sdk::kit::InstanceInfo info, int threads, const CompileOptions& compile)
      : sdk::kit::Device(std::move(info)), pool_(threads), compile_(compile) {}

  std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) override {
    return neon::why_unsupported(graph, node);
  }
  // The core's arena plan is not used: Flatten aliases its input, which a plan made outside
  // the device cannot see; every value gets its own reference-counted allocation.
  std::unique_ptr<sdk::kit::Executable> compile(const sdk::kit::CompileRequest& request) override {
    return std::make_unique<Executable>(request.graph(), pool_, compile_);
  }

 private:
  sdk::ThreadPool pool_;
  CompileOptions compile_;  // from the device options (precision)
};

}  // namespace loom::neon
