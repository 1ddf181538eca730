// How a run reports to its Profiler (profiler.hpp): the events the core records itself
// (CoreEvent) and the plugin ABI 1.5 callback that maps a device's steps to the model's nodes
// (DeviceCall). Used by the executor (session_run.cpp).
#pragma once

#include <loom/plugin.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "graph_view.hpp"
#include "ir/graph.hpp"
#include "profiler.hpp"
#include "run_guard.hpp"

namespace loom::core::profile_hooks {

// "1x3x224x224" ("?" for an unknown extent, "[]" for a scalar, "?" for an unknown rank).
inline std::string shape_text(const Shape& s) {
  if (s.rank < 0) return "?";
  if (s.rank == 0) return "[]";
  std::string out;
  for (size_t i = 0; i < s.dims.size(); ++i)
    out += (i ? "x" : "") + (s.dims[i] >= 0 ? std::to_string(s.dims[i]) : std::string("?"));
  return out;
}

// The input shapes of node `node` as this run knows them, comma-separated.
inline std::string input_shapes(const Graph& g, const Node& node,
                                const std::vector<ValueFacts>& facts) {
  std::string out;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) out += ",";
    const int id = node.inputs[i];
    if (id < 0) continue;  // an omitted optional input
    const bool known = static_cast<size_t>(id) < facts.size() && facts[id].known;
    out += shape_text(known ? facts[id].shape : g.values[id].shape);
  }
  return out;
}

// One device call of a profiled run. The device gets the guard's control with `profile` set
// and `user` pointing here (plugin ABI 1.5); `poll` forwards to the guard's. A step's node
// indices are the compiled subgraph's, in the order of the subgraph's node ids.
struct DeviceCall {
  loom_run_control_t control{};
  const loom_run_control_t* guard_control = nullptr;
  Profiler* profiler = nullptr;
  uint64_t run = 0;
  std::string device;
  const Graph* graph = nullptr;
  const std::vector<int>* node_ids = nullptr;
  const std::vector<ValueFacts>* facts = nullptr;
  std::atomic<size_t> steps{0};

  DeviceCall(const loom_run_control_t* guard, Profiler* p, uint64_t run_id, std::string dev,
             const Graph& g, const std::vector<int>& nodes, const std::vector<ValueFacts>& f)
      : guard_control(guard),
        profiler(p),
        run(run_id),
        device(std::move(dev)),
        graph(&g),
        node_ids(&nodes),
        facts(&f) {
    control = *guard;
    control.poll = &DeviceCall::poll;
    control.user = this;
    control.profile = &DeviceCall::profile;
  }

  static loom_status_t* poll(void* user) {
    const loom_run_control_t* g = static_cast<DeviceCall*>(user)->guard_control;
    return g->poll ? g->poll(g->user) : nullptr;
  }

  // Called by the device from C: must not throw. Indices outside the subgraph are ignored.
  static void profile(void* user, const loom_profile_step_t* step) {
    try {
      auto* c = static_cast<DeviceCall*>(user);
      if (!step || !LOOM_HAS_MEMBER(step, loom_profile_step_t, end_ns)) return;
      c->steps.fetch_add(1, std::memory_order_relaxed);
      ProfileRecord r;
      r.run = c->run;
      r.device = c->device;
      r.thread = Profiler::thread_id();
      r.start_ns = step->start_ns;
      r.end_ns = std::max(step->start_ns, step->end_ns);
      r.detail = step->detail ? step->detail : "";
      r.leaf = true;
      std::vector<int> nodes;
      for (size_t i = 0; step->nodes && i < step->num_nodes; ++i) {
        const int32_t k = step->nodes[i];
        if (k >= 0 && static_cast<size_t>(k) < c->node_ids->size())
          nodes.push_back((*c->node_ids)[static_cast<size_t>(k)]);
      }
      const std::string step_name = step->name ? step->name : "";
      if (nodes.empty()) {
        r.category = "device";
        r.name = step_name.empty() ? "(device step)" : step_name;
      } else {
        const Node& first = c->graph->nodes[static_cast<size_t>(nodes[0])];
        r.category = nodes.size() == 1 ? "node" : "fused";
        r.name = step_name.empty() ? first.name : step_name;
        if (r.name.empty()) r.name = first.op_type;
        for (size_t i = 0; i < nodes.size(); ++i) {
          const Node& n = c->graph->nodes[static_cast<size_t>(nodes[i])];
          if (i) r.op_type += "+";
          r.op_type += n.op_type;
          if (nodes.size() > 1) r.nodes += (i ? "," : "") + (n.name.empty() ? n.op_type : n.name);
        }
        r.shapes = input_shapes(*c->graph, first, *c->facts);
      }
      c->profiler->record(std::move(r));
    } catch (...) {
      // Out of memory while profiling: the step goes unrecorded, the run goes on.
    }
  }
};

// Records a core event of a profiled run when it goes out of scope (also when the step fails:
// the trace then shows how far the run got).
class CoreEvent {
 public:
  CoreEvent(const RunGuard& guard, const char* category, std::string name, std::string device,
            bool leaf)
      : profiler_(guard.profiler()) {
    if (!profiler_) return;
    r_.category = category;
    r_.name = std::move(name);
    r_.device = std::move(device);
    r_.run = guard.profiled_run();
    r_.leaf = leaf;
    r_.thread = Profiler::thread_id();
    r_.start_ns = Profiler::now_ns();
  }
  ~CoreEvent() {
    if (!profiler_) return;
    try {
      r_.end_ns = Profiler::now_ns();
      profiler_->record(std::move(r_));
    } catch (...) {
    }
  }
  CoreEvent(const CoreEvent&) = delete;
  CoreEvent& operator=(const CoreEvent&) = delete;
  ProfileRecord* record() { return profiler_ ? &r_ : nullptr; }
  void set_leaf(bool leaf) { r_.leaf = leaf; }

 private:
  Profiler* profiler_;
  ProfileRecord r_;
};

}  // namespace loom::core::profile_hooks
