// A session: a model bound to an ordered list of devices. It partitions the graph into
// subgraphs per device, and for each set of input shapes infers shapes, plans memory and
// compiles every subgraph once; runs then only move tensors and call the devices.
#pragma once

#include <loom/loom.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cost_model.hpp"
#include "graph_view.hpp"
#include "ir/graph.hpp"
#include "partitioner.hpp"
#include "runtime.hpp"
#include "shape_folding.hpp"

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

// One device's share of the graph (node ids in execution order).
using Subgraph = PlannedSubgraph;

// What a set of input shapes compiled to.
struct Prepared {
  // How one input of a part reaches its device.
  struct Transfer {
    int value = -1;
    int from_device = -1;  // -1: the application's memory
    bool copy = false;     // false: same device, or zero-copy between host-memory devices
    size_t bytes = 0;
  };
  struct Part {
    std::vector<int> inputs, outputs;  // value ids at the subgraph boundary
    std::vector<Transfer> transfers;   // one per input
    double flops = 0;
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
  std::string plan_dot();  // plan_dot.cpp
  size_t planned_peak() const { return current_ ? current_->planned_peak : 0; }

 private:
  void create_devices(const loom_session_options_t& options);
  void partition(const loom_session_options_t& options);
  // Device index for each node the user pinned ("PATTERN=DEVICE;..."), -1 elsewhere.
  std::vector<int> parse_placements(const std::string& spec) const;
  std::unique_ptr<Prepared> prepare(const std::vector<ValueFacts>& input_facts,
                                    const std::set<int>& fed);
  void release(Prepared& p);
  double subgraph_flops(size_t s) const;  // for the last run's shapes, else the declared ones

  Runtime& runtime_;
  std::shared_ptr<Model> model_;  // the model as run: shape computations folded
  FoldStats fold_stats_;
  std::vector<std::unique_ptr<DeviceInstance>> devices_;
  std::vector<std::string> device_labels_;  // as requested ("cpu", "vulkan:1")
  std::vector<DeviceCost> device_costs_;
  std::vector<int> node_device_;             // per node
  std::vector<double> declared_flops_;       // per node, from the declared shapes
  std::vector<std::string> fallback_notes_;  // why nodes left their preferred device
  std::vector<Subgraph> subgraphs_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Prepared>> prepared_;  // by input signature
  Prepared* current_ = nullptr;
};

}  // namespace loom::core
