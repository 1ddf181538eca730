// A session: a model bound to an ordered list of devices. It partitions the graph into
// subgraphs per device, and for each set of input shapes infers shapes, plans memory and
// compiles every subgraph once; runs then only move tensors and call the devices.
#pragma once

#include <loom/loom.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "constant_folding.hpp"
#include "control_flow.hpp"
#include "cost_model.hpp"
#include "graph_view.hpp"
#include "ir/graph.hpp"
#include "partitioner.hpp"
#include "profiler.hpp"
#include "run_guard.hpp"
#include "runtime.hpp"
#include "shape_folding.hpp"

namespace loom::core {

// An eviction that frees more heap than this hands it back to the system (loom/heap_trim.hpp).
// Lower than a compile's threshold: the evicting run compiles a plan anyway (milliseconds),
// next to which a trim is cheap, and a smaller model's plans (a sentence encoder's, 2-6 MiB)
// otherwise grew the heap by 25% over 500 runs that evicted every time.
inline constexpr size_t kEvictionTrimBytes = size_t{1} << 20;

// The largest thread count a session accepts (loom_max_threads): the larger of 64 and 4 per
// online core.
int32_t max_session_threads();

// Bytes of a tensor of `dtype` and static shape `s` (0 when the shape is not static).
size_t tensor_bytes(loom_dtype_t dtype, const Shape& s);

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

// One device's share of the graph (node ids in execution order). A subgraph whose device is
// Session::host_step_device() holds control-flow steps the core runs itself.
using Subgraph = PlannedSubgraph;

// (input value id, axis) pairs whose extent may change without compiling again (ABI 1.8).
using FreeAxes = std::vector<std::pair<int, int32_t>>;
inline bool is_free_axis(const FreeAxes& free, int id, int32_t axis) {
  return std::find(free.begin(), free.end(), std::pair<int, int32_t>{id, axis}) != free.end();
}
// A run's non-constant tensor inputs by value id, in graph order; only dtype and dims are set
// (what an input-shape signature is made of).
using FedTensors = std::vector<std::pair<int, loom_tensor_t>>;

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
    loom_executable_t* exe = nullptr;  // null for control-flow steps
    size_t arena_bytes = 0;
    // The input axes the executable runs at any extent (ABI 1.8 free_axis).
    FreeAxes free_axes;
  };
  std::vector<Part> parts;
  std::vector<ValueFacts> facts;
  std::vector<int> consumers;  // per value: parts that read it (+1 if graph output)
  size_t planned_peak = 0;
  uint64_t last_used = 0;  // Session::tick_ of the last run that used it (LRU eviction)
};

// A malloc'd host copy of host tensor `t` for the application (session_bind.cpp): one block,
// STRING tensors packed as their loom_string_t array followed by the characters, so one free()
// of out.data releases everything.
void copy_to_host_tensor(const loom_tensor_t& t, loom_host_tensor_t& out);

// The application's tensor `t` as a host value, borrowed (no owner); checks its rank.
HostValue borrow_host_tensor(const std::string& name, const loom_host_tensor_t& t);

// `s` as the inside of a JSON string (plan_report.cpp).
std::string json_escape(const std::string& s);

// The options a session keeps for the child sessions of control-flow bodies.
struct SessionConfig {
  std::string placements, cost_model;
  bool no_fallback = false;
  size_t plan_cache_entries = 16;             // plans kept per session (at least 1)
  size_t plan_cache_bytes = size_t{1} << 30;  // their compiled state
  RunLimits limits = default_run_limits();    // of every run (docs/limits.md)
};

class Session {
 public:
  Session(Runtime& runtime, std::shared_ptr<Model> model, const loom_session_options_t& options);
  ~Session();

  // The tensor API (loom_session_run): outputs are malloc'd copies the application frees.
  void run(size_t num_inputs, const char* const* names, const loom_host_tensor_t* inputs,
           size_t num_outputs, loom_host_tensor_t* outputs);
  // Any input and output kind (tensors, sequences, optionals). `inputs` are borrowed for the
  // call; `emit(i, value)` receives output i in order: a tensor's bytes are valid during the
  // call only (copy what you keep), a container's elements own theirs or are the caller's.
  using OutputSink = std::function<void(size_t index, const HostValue& value)>;
  void run_values(const std::vector<std::string>& names, const std::vector<HostValue>& inputs,
                  const OutputSink& emit);
  size_t num_outputs() const { return model_->graph->outputs.size(); }
  std::string explain();
  std::string plan_json();
  std::string plan_dot();  // plan_dot.cpp
  size_t planned_peak() const;
  // loom_session_cancel: the runs in progress or waiting end at their next step.
  void cancel() { cancel_generation_.fetch_add(1, std::memory_order_acq_rel); }
  loom_plan_cache_stats_t plan_cache_stats();
  // Profiling (loom_session_profile_*): start replaces what was recorded; the profiler stays
  // readable after stop.
  void profile_start(size_t max_events);
  void profile_stop();
  std::shared_ptr<Profiler> profiler();
  // Records into `profiler` (a replica of a SessionPool joins its primary's).
  void share_profiler(std::shared_ptr<Profiler> profiler);

 private:
  // A control-flow body as a child session sharing this session's devices
  // (session_control_flow.cpp).
  struct Body {
    std::string attribute;
    std::shared_ptr<Graph> graph;     // the body, its outer-scope reads made inputs
    std::vector<std::string> formal;  // the body's own inputs, in order
    std::vector<std::string> outer;   // outer-scope values it reads, fed after them
    std::unique_ptr<Session> session;
  };
  class StepRunner;
  class RunState;  // the values in flight during one run (session_run.cpp)

  Session(const Session& parent, std::shared_ptr<Model> body, int depth);
  void finish_construction();
  // A control-flow body folded with its inputs' extents unknown (session.cpp).
  std::shared_ptr<Model> fold_body(const std::shared_ptr<Model>& body);
  // `model` with the graphs of its If/Loop/Scan nodes folded (recursively), or `model`.
  std::shared_ptr<Model> fold_nested_graphs(const std::shared_ptr<Model>& model, int depth);
  // Graph inputs read from the application, with what binding them tells (session_bind.cpp).
  struct BoundInputs {
    std::vector<HostValue> values;  // per graph input, in the order of Graph::inputs
    std::set<int> fed;              // overridable initializers the application fed
  };
  BoundInputs bind_inputs(const std::vector<std::string>& names,
                          const std::vector<HostValue>& inputs) const;

  // ---- plans by the shapes of the run (session_plans.cpp) ----
  // A model whose inputs have symbolic dimensions is folded, partitioned and compiled once per
  // input-shape signature, by a child session made for exactly those shapes; devices then see
  // static shapes everywhere. The children live in an LRU cache bounded in entries and bytes.
  struct ShapePlan {
    std::string shapes;  // the signature for people: "x=1x3x224x224, mask=1x128" ("*": any extent)
    std::unique_ptr<Session> session;
    size_t bytes = 0;  // compiled state: arenas + constants its devices copied
    // The signature (every non-constant tensor input's dtype and shape), and the axes at which
    // the plan also serves other extents (adopt_free_axes): a signature differing only there
    // reuses it.
    FedTensors inputs;
    FreeAxes free;
  };
  struct Specialized {};
  Session(const Session& parent, std::shared_ptr<Model> specialized, Specialized);
  // Fixes input shapes from "NAME=DIMS;..." (an input's name, or a symbolic dimension's name
  // with a single extent) in the session's own copy of the model.
  void apply_shape_overrides(const std::string& spec);
  // Whether a non-constant tensor input has a dimension the declarations leave open.
  bool has_symbolic_inputs() const;
  void run_per_shape(const std::vector<std::string>& names, const std::vector<HostValue>& inputs,
                     const OutputSink& emit);
  // A plan child's (input value id, axis) pairs at which every device that reads the input
  // runs any extent (ABI 1.8), where nothing else depends on the extent: its folding read no
  // input shape, and an extent one longer changes no shape outside the parts that declared it
  // but graph outputs. The child then takes such runs as its own (its declared extent there
  // becomes open and its signature skips it). Empty when anything disqualifies the plan.
  FreeAxes adopt_free_axes();
  // Evicts least recently used plans until the cache is within its bounds (the front stays).
  void evict_plans();
  // Compiles the only signature a single-signature session can see, at creation.
  void compile_declared();
  // The key under which `prepare` results are cached, from facts per value id (`facts`) or per
  // graph input in the order of Graph::inputs (`per_input`).
  std::string signature_key(const std::vector<ValueFacts>& facts) const;
  std::string input_signature_key(const std::vector<ValueFacts>& per_input) const;
  // The cached plan for the signature of `per_input` (as above), or one prepared now (evicting
  // the least recently used when the cache is full); counts hits, misses and evictions
  // (session_run.cpp).
  Prepared& find_plan(const std::vector<ValueFacts>& per_input, const std::set<int>& fed);
  size_t prepared_bytes(const Prepared& p) const;
  std::string plan_json(bool with_cache);  // a plan child's JSON leaves the cache to its parent
  loom_plan_cache_stats_t plan_cache_stats_locked() const;  // mutex_ held
  std::string plan_cache_text() const;                      // mutex_ held
  std::string plan_cache_json() const;                      // mutex_ held
  std::string symbolic_inputs_text() const;                 // "x [Nx3x?x?], mask [1x128]"
  // Whether a node the devices refused had every shape it reads and writes known (a refusal
  // no run's shapes can change).
  bool refused_with_static_shapes(const PartitionProblem& problem,
                                  const std::vector<ValueFacts>& declared) const;
  std::string explain_locked();  // plan_report.cpp; mutex_ held
  // ---- pieces of explain_locked() and plan_json() (plan_report.cpp; mutex_ held) ----
  void explain_part(size_t s, std::ostringstream& out, size_t& copies, size_t& copy_bytes) const;
  void explain_cost_model(std::ostringstream& out) const;
  std::string cost_model_json() const;
  std::string subgraph_json(size_t s);
  std::string part_json(size_t s) const;
  // ---- pieces of plan_dot() (plan_dot.cpp; mutex_ held) ----
  std::string dot_legend() const;
  std::string dot_cluster(size_t s) const;
  std::string dot_edges(const std::vector<int>& part_of) const;

  // Index of the pseudo-device of control-flow steps: one past the real devices.
  size_t host_step_device() const { return devices_.size(); }
  std::string device_name(size_t d) const;
  bool device_host_memory(size_t d) const;
  // Which nodes run as host steps: control flow whose bodies are split across devices, and
  // every node that makes or reads a sequence or optional value. `candidates` gets the bodies
  // of the chosen nodes, ready for create_bodies; `why` (per node) says why a step is one.
  std::vector<bool> choose_host_steps(const GraphView& view, const std::vector<int>& pinned,
                                      const std::vector<ValueFacts>& declared,
                                      std::map<int, std::vector<Body>>& candidates,
                                      std::vector<std::string>& why);
  // A body as a graph of its own: outer-scope reads become inputs typed from `declared`.
  Body make_body(const Attribute& a, const std::vector<ValueFacts>& declared) const;
  // Earliest device in --device order that takes some node of `body` (at any depth).
  size_t earliest_body_device(const Graph& body) const;
  void create_bodies(std::map<int, std::vector<Body>>& candidates);
  // Runs step node `k` on host tensors (explicit inputs in order; outer reads by value id).
  std::vector<HostValue> run_step(int k, const std::vector<HostValue>& inputs,
                                  const std::map<int, HostValue>& outer);
  std::vector<HostValue> run_body(Body& body, const std::vector<HostValue>& formal,
                                  const std::map<std::string, HostValue>& outer);
  void explain_bodies(int k, std::ostringstream& out, int indent);
  std::string bodies_json(int k);
  void create_devices(const loom_session_options_t& options);
  void partition();
  // ---- partition()'s steps (session.cpp) ----
  std::vector<ValueFacts> declared_facts() const;
  std::vector<std::string> init_device_costs();
  PartitionProblem partition_problem(const std::vector<std::string>& names,
                                     const std::vector<ValueFacts>& declared, bool any_step) const;
  PartitionNode partition_node(size_t k, const std::vector<ValueFacts>& declared);
  void ask_devices(const GraphView& view, size_t k, PartitionNode& n) const;
  bool defer_unsupported(const PartitionProblem& problem, const Partition& result,
                         const std::vector<ValueFacts>& declared);
  // Device index for each node the user pinned ("PATTERN=DEVICE;..."), -1 elsewhere.
  std::vector<int> parse_placements(const std::string& spec) const;
  std::unique_ptr<Prepared> prepare(const std::vector<ValueFacts>& input_facts,
                                    const std::set<int>& fed);
  // ---- prepare()'s steps (session_prepare.cpp) ----
  struct PartLinks {
    std::vector<std::set<size_t>> readers;  // per value: the parts that read it
    std::vector<int> producer_part;         // per value: the part that makes it, or -1
  };
  PartLinks part_links() const;
  void connect_part(size_t s, const PartLinks& links, const std::set<int>& fed, Prepared& p) const;
  std::vector<ValueFacts> plan_part_memory(size_t s, Prepared& p) const;
  void compile_part(size_t s, const PartLinks& links, const std::set<int>& fed,
                    const std::vector<ValueFacts>& facts, Prepared& p);
  void release(Prepared& p);
  // Whether every run binds inputs of the same dtypes and shapes, so `prepare` runs once.
  bool single_signature() const;
  // Drops the session's reference to constant `id`'s bytes, which its only reader copied at
  // compile (ABI 1.3's constant_copied); counts it.
  void release_constant(int id);
  double subgraph_flops(size_t s) const;  // for the last run's shapes, else the declared ones

  Runtime& runtime_;
  std::shared_ptr<Model> model_;  // the model as run: shape computations folded
  FoldStats fold_stats_;
  SessionConfig config_;
  int depth_ = 0;  // nesting of control-flow bodies (0: the model's graph)
  std::vector<std::shared_ptr<DeviceInstance>> devices_;
  std::vector<std::string> device_labels_;  // as requested ("cpu", "vulkan:1")
  std::vector<DeviceCost> device_costs_;
  std::vector<int> node_device_;             // per node
  std::vector<double> declared_flops_;       // per node, from the declared shapes
  std::vector<std::string> fallback_notes_;  // why nodes left their preferred device
  std::vector<Subgraph> subgraphs_;
  std::map<int, std::vector<Body>> bodies_;  // per host-step node
  std::mutex mutex_;
  // Bumped by cancel(); a run's RunGuard compares it with its value when the run began. Read
  // without mutex_, which a cancelled run holds.
  std::atomic<uint64_t> cancel_generation_{0};
  // The profiler of the runs this session starts (null until profile_start). Its own mutex:
  // mutex_ is held by the run in progress, and profiling may start or stop meanwhile.
  std::mutex profile_mutex_;
  std::shared_ptr<Profiler> profiler_;
  std::map<std::string, std::unique_ptr<Prepared>> prepared_;  // by input signature
  Prepared* current_ = nullptr;
  uint64_t tick_ = 0;                 // runs so far (LRU order of prepared_)
  bool per_shape_ = false;            // plans by the shapes of the run
  std::string preview_error_;         // why the declared shapes have no plan (per_shape_)
  std::list<ShapePlan> shape_plans_;  // most recently used first
  size_t shape_plan_bytes_ = 0;       // sum of their bytes
  uint64_t plan_hits_ = 0, plan_misses_ = 0, plan_evictions_ = 0;
  FreeAxes free_axes_;             // a plan child's adopted free axes
  size_t released_constants_ = 0;  // release_constant: how many, how many bytes
  size_t released_constant_bytes_ = 0;
};

}  // namespace loom::core
