// A session: a model bound to an ordered list of devices. It partitions the graph into
// subgraphs per device, and for each set of input shapes infers shapes, plans memory and
// compiles every subgraph once; runs then only move tensors and call the devices.
#pragma once

#include "graph_view.hpp"
#include "ir/graph.hpp"
#include "runtime.hpp"

#include <loom/loom.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::core {

class DeviceInstance {
 public:
  DeviceInstance(const DeviceEntry& entry, int32_t instance, int32_t threads,
                 const std::string& options, loom_host_t* host);
  ~DeviceInstance();
  DeviceInstance(const DeviceInstance&) = delete;
  DeviceInstance& operator=(const DeviceInstance&) = delete;

  const loom_device_api_t& api() const { return entry_.api; }
  loom_device_t* handle() const { return handle_; }
  const loom_device_info_t& info() const { return info_; }
  bool host_memory() const { return info_.flags & LOOM_DEVICE_HOST_MEMORY; }
  std::string name() const { return info_.name; }

 private:
  const DeviceEntry& entry_;
  loom_device_t* handle_ = nullptr;
  loom_device_info_t info_{};
};

// One device's share of the graph.
struct Subgraph {
  size_t device = 0;
  std::vector<int> nodes;  // node ids, execution order
};

// What a set of input shapes compiled to.
struct Prepared {
  struct Part {
    std::vector<int> inputs, outputs;  // value ids at the subgraph boundary
    std::unique_ptr<GraphView> view;
    loom_executable_t* exe = nullptr;
    size_t arena_bytes = 0;
  };
  std::vector<Part> parts;
  std::vector<ValueFacts> facts;
  std::vector<int> consumers;  // per value: parts that read it (+1 if graph output)
  size_t planned_peak = 0;
};

class Session {
 public:
  Session(Runtime& runtime, std::shared_ptr<Model> model, const loom_session_options_t& options);
  ~Session();

  void run(size_t num_inputs, const char* const* names, const loom_host_tensor_t* inputs,
           size_t num_outputs, loom_host_tensor_t* outputs);
  std::string explain();
  std::string plan_json();
  size_t planned_peak() const { return current_ ? current_->planned_peak : 0; }

 private:
  void create_devices(const loom_session_options_t& options);
  void partition(bool no_fallback);
  std::unique_ptr<Prepared> prepare(const std::vector<ValueFacts>& input_facts,
                                    const std::set<int>& fed);
  void release(Prepared& p);

  Runtime& runtime_;
  std::shared_ptr<Model> model_;
  std::vector<std::unique_ptr<DeviceInstance>> devices_;
  std::vector<int> node_device_;  // per node
  std::vector<std::string> fallback_notes_;  // why nodes left their preferred device
  std::vector<Subgraph> subgraphs_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Prepared>> prepared_;  // by input signature
  Prepared* current_ = nullptr;
};

}  // namespace loom::core
