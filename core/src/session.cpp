#include "session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "memory_planner.hpp"
#include "shape_inference.hpp"
#include "shape_subgraphs.hpp"
#include "status.hpp"

namespace loom::core {

namespace {

// Levenshtein distance, for "did you mean" on a misspelled device name.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

int32_t max_session_threads() {
  // Every device starts its own pool of this many threads: an absurd count would exhaust the
  // process's thread ids (32,000 threads for --threads 100000) and starve the machine.
  return std::max<int32_t>(64, 4 * static_cast<int32_t>(std::thread::hardware_concurrency()));
}

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

size_t tensor_bytes(loom_dtype_t dtype, const Shape& s) {
  size_t elem = dtype_size(dtype);
  if (elem == 0 || !s.is_static()) return 0;
  return static_cast<size_t>(s.element_count()) * elem;
}

// ---- devices ---------------------------------------------------------------------------------

DeviceInstance::DeviceInstance(const DeviceEntry& entry, int32_t instance, int32_t threads,
                               const std::string& options, loom_host_t* host)
    : entry_(entry) {
  loom_device_create_args_t args;
  std::memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.host = host;
  args.instance = instance;
  args.threads = threads;
  args.options = options.c_str();
  throw_if_error(entry.api.create(entry.api.user, &args, &handle_),
                 std::string("device '") + entry.api.name + "' is unavailable");
  if (!handle_)
    fail(LOOM_ERROR_INTERNAL, std::string("device '") + entry.api.name + "' returned no handle");
  std::memset(&info_, 0, sizeof info_);
  info_.struct_size = sizeof info_;
  entry.api.get_info(handle_, &info_);
  if (!info_.available) {
    std::string reason = info_.unavailable_reason;
    entry.api.destroy(handle_);
    handle_ = nullptr;
    fail(LOOM_ERROR_UNAVAILABLE,
         std::string("device '") + entry.api.name + "' is unavailable: " + reason);
  }
}

DeviceInstance::~DeviceInstance() {
  if (handle_) entry_.api.destroy(handle_);
}

// ---- session ---------------------------------------------------------------------------------

Session::Session(Runtime& runtime, std::shared_ptr<Model> model,
                 const loom_session_options_t& options)
    : runtime_(runtime), model_(std::move(model)) {
  config_.placements = options.placements ? options.placements : "";
  config_.cost_model = options.cost_model ? options.cost_model : "";
  config_.no_fallback = options.no_fallback;
  if (options.plan_cache_entries < 0 || options.plan_cache_bytes < 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "plan cache bounds must not be negative (0 takes the defaults: 16 plans, 1 GiB)");
  if (options.plan_cache_entries > 0)
    config_.plan_cache_entries = static_cast<size_t>(options.plan_cache_entries);
  if (options.plan_cache_bytes > 0)
    config_.plan_cache_bytes = static_cast<size_t>(options.plan_cache_bytes);
  config_.limits = run_limits_from(options.max_tensor_bytes, options.max_run_bytes,
                                   options.max_loop_iterations, options.deadline_ms);
  const int32_t max_threads = max_session_threads();
  if (options.threads < 0 || options.threads > max_threads)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "threads = " + std::to_string(options.threads) +
                                          " is out of range: give 0 (one per "
                                          "core) or a count up to " +
                                          std::to_string(max_threads) +
                                          " (the larger of 64 and 4 per core of this machine)");
  create_devices(options);
  apply_shape_overrides(options.shape_overrides ? options.shape_overrides : "");
  // Inputs with open dimensions: runs are planned and compiled per input-shape signature
  // (session_plans.cpp). The plan on the declared shapes is still made, for --explain before
  // the first run and so that pins and cost overrides are checked now.
  per_shape_ = has_symbolic_inputs();
  if (per_shape_)
    runtime_.log(LOOM_LOG_INFO, "scheduler",
                 "the model's inputs have symbolic dimensions: it is planned and compiled for "
                 "the shapes of each run");
  finish_construction();
  compile_declared();
}

void Session::finish_construction() {
  // Shape computations whose inputs are static on the declared shapes become initializers
  // before placement, so devices are asked about nodes with constant shape inputs.
  if (depth_ == 0) {
    const Graph* callers_graph = model_->graph.get();
    model_ = fold_shape_computations(model_, runtime_.schemas, fold_stats_);
    // Results of constants computed once on cpu may make more shapes static, which folds
    // more shape computations, which may leave more constant nodes: repeat until nothing
    // changes (each round removes nodes; the bound only caps pathological graphs). Swin-T
    // needs 20 rounds to fold its shifted-window masks.
    for (int round = 0; round < kMaxFoldRounds; ++round) {
      auto evaluated = fold_constant_nodes(runtime_, runtime_.schemas, model_, fold_stats_);
      if (evaluated == model_) break;
      model_ = fold_shape_computations(evaluated, runtime_.schemas, fold_stats_);
    }
    model_ = fold_nested_graphs(model_, 0);
    // The session's own graph, even when nothing folded: release_constant edits its
    // values, and the application's model must stay whole for other sessions.
    if (model_->graph.get() == callers_graph) {
      auto own = std::make_shared<Model>(*model_);
      own->graph = std::make_shared<Graph>(*model_->graph);
      model_ = std::move(own);
    }
  } else {
    model_ = fold_body(model_);
  }
  if (fold_stats_.nodes || fold_stats_.constant_nodes || fold_stats_.identities ||
      fold_stats_.noop_pads || fold_stats_.fused_pads || fold_stats_.evaluated_nodes)
    runtime_.log(LOOM_LOG_INFO, "scheduler",
                 fmt::format("folded {} shape-computation nodes into {} constants, {} Constant "
                             "nodes into initializers and {} Identity nodes of constants; "
                             "bypassed {} Pad nodes with zero pads and moved {} into their "
                             "Conv/AveragePool; evaluated {} nodes of constants on cpu",
                             fold_stats_.nodes, fold_stats_.constants, fold_stats_.constant_nodes,
                             fold_stats_.identities, fold_stats_.noop_pads, fold_stats_.fused_pads,
                             fold_stats_.evaluated_nodes));
  partition();
}

std::shared_ptr<Model> Session::fold_body(const std::shared_ptr<Model>& body) {
  // A control-flow body's inputs are whatever the step feeds (Loop-carried values may change
  // shape; declarations of [] and [1] both occur), so no extent is checked at run time and
  // folding must not trust the declared ones: fold with the inputs' shapes unknown, then give
  // the folded graph its declarations back for placement.
  auto relaxed = std::make_shared<Model>(*body);
  relaxed->graph = std::make_shared<Graph>(*body->graph);
  for (int id : relaxed->graph->inputs)
    if (!relaxed->graph->values[id].constant) relaxed->graph->values[id].shape = Shape{};
  auto folded = fold_shape_computations(relaxed, runtime_.schemas, fold_stats_);
  if (folded == relaxed) return body;
  for (int id : folded->graph->inputs)
    folded->graph->values[id].shape = body->graph->values[id].shape;
  return folded;
}

std::shared_ptr<Model> Session::fold_nested_graphs(const std::shared_ptr<Model>& model, int depth) {
  // The bodies of If/Loop/Scan nodes are folded as their child sessions would fold them, and
  // their nodes of constants evaluated, before this graph is placed: PyTorch exports F.pad's
  // pads as a chain of constant nodes inside each branch, and only once that chain is folded
  // can inference tell the branches' shapes, and so the If's outputs, on which everything after
  // it depends (a streaming model's LSTM ran on cpu behind an If on its sample rate). The
  // builder bounds nesting; so does kMaxNestedFoldDepth here.
  constexpr int kMaxNestedFoldDepth = 16;
  if (depth >= kMaxNestedFoldDepth) return model;
  std::shared_ptr<Graph> changed;
  const Graph& g = *model->graph;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (size_t j = 0; j < g.nodes[k].attributes.size(); ++j) {
      const std::shared_ptr<Graph>& graph = g.nodes[k].attributes[j].graph;
      if (!graph) continue;
      auto body = std::make_shared<Model>(*model);
      body->graph = graph;
      auto folded = fold_nested_graphs(fold_body(body), depth + 1);
      auto evaluated = fold_constant_nodes(runtime_, runtime_.schemas, folded, fold_stats_);
      if (evaluated != folded) folded = fold_body(evaluated);
      if (folded == body) continue;
      if (!changed) changed = std::make_shared<Graph>(g);
      changed->nodes[k].attributes[j].graph = folded->graph;
    }
  if (!changed) return model;
  auto result = std::make_shared<Model>(*model);
  result->graph = std::move(changed);
  return result;
}

Session::~Session() {
  for (auto& [key, p] : prepared_) release(*p);
}

void Session::create_devices(const loom_session_options_t& options) {
  std::string list = options.devices && *options.devices ? options.devices : "cpu";
  std::vector<std::string> names = split_list(list);
  if (names.empty()) fail(LOOM_ERROR_INVALID_ARGUMENT, "no device named in '" + list + "'");
  bool has_cpu = false;
  for (const std::string& n : names)
    if (n == "cpu" || n.rfind("cpu:", 0) == 0) has_cpu = true;
  // The reference cpu device is the last resort unless the user forbids fallback.
  if (!has_cpu && !options.no_fallback && runtime_.find_device("cpu")) names.push_back("cpu");
  std::string device_options = options.device_options ? options.device_options : "";
  for (const std::string& n : names) {
    std::string family = n;
    int32_t instance = -1;
    auto colon = n.find(':');
    if (colon != std::string::npos) {
      family = n.substr(0, colon);
      try {
        instance = std::stoi(n.substr(colon + 1));
      } catch (...) {
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "device '" + n + "': the part after ':' must be an instance number");
      }
    }
    const DeviceEntry* entry = runtime_.find_device(family);
    if (!entry) {
      std::string installed, closest;
      size_t closest_distance = 3;  // a typo: at most two edits away
      for (const DeviceEntry& d : runtime_.devices) {
        installed += (installed.empty() ? "" : ", ") + std::string(d.api.name);
        const size_t distance = edit_distance(family, d.api.name);
        if (distance < closest_distance) {
          closest_distance = distance;
          closest = d.api.name;
        }
      }
      // In-tree devices ship as Debian packages loom-device-<family> (packaging/).
      const bool package_name =
          !family.empty() && std::all_of(family.begin(), family.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
          });
      fail(LOOM_ERROR_NOT_FOUND,
           "device '" + family + "' is not installed (installed devices: " +
               (installed.empty() ? "none" : installed) + ")" +
               (closest.empty() ? "" : "; did you mean '" + closest + "'?") + "; install " +
               (package_name ? "its plugin package (loom-device-" + family + ")"
                             : std::string("its plugin package")) +
               " or pass --plugin");
    }
    for (const auto& d : devices_)
      if (d->name() == n) fail(LOOM_ERROR_INVALID_ARGUMENT, "device '" + n + "' is listed twice");
    devices_.push_back(std::make_unique<DeviceInstance>(*entry, instance, options.threads,
                                                        device_options, &runtime_.host));
    device_labels_.push_back(n);
  }
}

namespace {

// Glob match with * and ?, for --place patterns. Iterative with one backtrack point, so a
// pattern full of stars stays O(pattern x text) instead of exponential.
bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

std::vector<int> Session::parse_placements(const std::string& spec) const {
  const Graph& g = *model_->graph;
  std::vector<int> pinned(g.nodes.size(), -1);
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(';', pos);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "placement '" + item + "' must look like PATTERN=DEVICE (e.g. Conv=cpu)");
    std::string pattern = item.substr(0, eq), device = item.substr(eq + 1);
    int d = -1;
    for (size_t i = 0; i < devices_.size(); ++i)
      if (device_labels_[i] == device || devices_[i]->name() == device) d = static_cast<int>(i);
    if (d < 0) {
      std::string list;
      for (const std::string& l : device_labels_) list += (list.empty() ? "" : ", ") + l;
      fail(LOOM_ERROR_INVALID_ARGUMENT, "placement '" + item + "' names device '" + device +
                                            "', which is not among the session's devices (" + list +
                                            ")");
    }
    size_t matched = 0;
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (glob_match(pattern, g.nodes[k].name) || glob_match(pattern, g.nodes[k].op_type)) {
        pinned[k] = d;
        ++matched;
      }
    if (matched == 0 && depth_ == 0)  // a body may well lack the pinned nodes
      runtime_.log(LOOM_LOG_WARNING, "scheduler",
                   "placement '" + item + "' matches no node name or op type");
  }
  return pinned;
}

// The facts inference tells from the declared inputs alone (none where it fails on a valid
// model).
std::vector<ValueFacts> Session::declared_facts() const {
  const Graph& g = *model_->graph;
  std::vector<ValueFacts> declared(g.values.size());
  try {
    infer_shapes(g, runtime_.schemas, declared);
  } catch (const Error& e) {
    // A model the spec rules out (pads not below the kernel, a bad attribute) is refused now,
    // in one line naming the node, rather than warned about here and refused at the run.
    if (e.code() == LOOM_ERROR_INVALID_MODEL) throw;
    runtime_.log(LOOM_LOG_WARNING, "scheduler",
                 std::string("type inference on the declared shapes failed, placing without it: ") +
                     e.what());
    declared.assign(g.values.size(), ValueFacts{});
  }
  return declared;
}

// Fills device_costs_ and returns the devices' labels, in --device order.
std::vector<std::string> Session::init_device_costs() {
  // The cost model: what each device states (ABI 1.9 hints over generic defaults), then
  // $LOOM_COST_MODEL, then the session option.
  std::vector<std::string> names;
  for (size_t d = 0; d < devices_.size(); ++d) {
    std::vector<std::string> ignored;
    device_costs_.push_back(device_cost(devices_[d]->info(), &ignored));
    for (const std::string& why : ignored) runtime_.log(LOOM_LOG_WARNING, "scheduler", why);
    names.push_back(device_labels_[d]);
  }
  if (const char* env = std::getenv("LOOM_COST_MODEL"); env && *env) {
    try {
      apply_cost_overrides(env, names, device_costs_);
    } catch (const Error& e) {
      fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("LOOM_COST_MODEL: ") + e.what());
    }
  }
  if (!config_.cost_model.empty()) apply_cost_overrides(config_.cost_model, names, device_costs_);
  return names;
}

// The partitioner's devices (the host-step pseudo-device last when `any_step`) and values; no
// nodes yet.
PartitionProblem Session::partition_problem(const std::vector<std::string>& names,
                                            const std::vector<ValueFacts>& declared,
                                            bool any_step) const {
  const Graph& g = *model_->graph;
  PartitionProblem problem;
  problem.device_names = names;
  problem.devices = device_costs_;
  if (any_step) {
    problem.device_names.push_back(device_name(host_step_device()));
    DeviceCost host_cost;
    host_cost.host_memory = true;
    host_cost.launch_us = 0;
    problem.devices.push_back(host_cost);
  }
  problem.num_values = g.values.size();
  problem.value_bytes.resize(g.values.size());
  problem.graph_output.resize(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    problem.value_bytes[v] = value_bytes(g, static_cast<int>(v), declared);
    problem.graph_output[v] = g.values[v].graph_output;
  }
  return problem;
}

// Node `k` for the partitioner: its label, the values it moves and its FLOPs on the declared
// shapes (recorded in declared_flops_ too).
PartitionNode Session::partition_node(size_t k, const std::vector<ValueFacts>& declared) {
  const Graph& g = *model_->graph;
  const Node& node = g.nodes[k];
  PartitionNode n;
  n.label = node.describe();
  // Initializers are part of every view; only values that flow between nodes move.
  auto reads = [&](int id) {
    return id >= 0 && (!g.values[id].constant || g.values[id].graph_input);
  };
  for (int id : node.inputs)
    if (reads(id)) n.inputs.push_back(id);
  for (int id : node.implicit_inputs)
    if (reads(id)) n.inputs.push_back(id);
  for (int id : node.outputs)
    if (id >= 0) n.outputs.push_back(id);
  n.flops = estimate_flops(g, node, declared);
  declared_flops_.push_back(n.flops);
  return n;
}

// Asks each device whether it takes node `k`, appending to n.supported and n.reasons.
void Session::ask_devices(const GraphView& view, size_t k, PartitionNode& n) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    loom_support_t support;
    std::memset(&support, 0, sizeof support);
    support.struct_size = sizeof support;
    devices_[d]->api().supports_node(devices_[d]->handle(), view.get(), view.node(k), &support);
    support.reason[sizeof support.reason - 1] = '\0';
    n.supported.push_back(support.supported);
    n.reasons.push_back(support.supported ? ""
                                          : (support.reason[0] ? support.reason : "not supported"));
  }
}

// Refuses the nodes no device takes; returns true instead when each run's static shapes may
// yet change the devices' minds (preview_error_ then says why the declared shapes have none).
bool Session::defer_unsupported(const PartitionProblem& problem, const Partition& result,
                                const std::vector<ValueFacts>& declared) {
  std::string msg =
      std::to_string(result.unsupported.size()) + " nodes are supported by none of the devices";
  msg += config_.no_fallback ? " (fallback to cpu is off): " : ": ";
  for (size_t i = 0; i < result.unsupported.size() && i < 20; ++i)
    msg += (i ? ", " : "") + result.unsupported[i];
  if (result.unsupported.size() > 20) msg += ", ...";
  // A device may refuse a node only because a dimension is still open; each run's plan asks
  // again with static shapes, and fails with this same message if the refusal stands. A node
  // refused with every shape known is refused for good.
  if (per_shape_ && !refused_with_static_shapes(problem, declared)) {
    preview_error_ = msg;
    runtime_.log(LOOM_LOG_INFO, "scheduler",
                 "on the declared shapes " + msg + "; each run's shapes are asked again");
    return true;
  }
  fail(LOOM_ERROR_UNSUPPORTED, msg);
}

void Session::partition() {
  const Graph& g = *model_->graph;
  // Devices decide by dtype and shape, so they must see what inference can tell from the
  // declared inputs (dynamic dims stay unknown) rather than untyped intermediates.
  std::vector<ValueFacts> declared = declared_facts();
  std::vector<std::string> names = init_device_costs();
  std::vector<int> pinned = parse_placements(config_.placements);
  std::vector<bool> shape_nodes = find_shape_computations(g, declared);
  ViewOptions options_view;
  options_view.facts = &declared;
  GraphView view(g, options_view);
  std::map<int, std::vector<Body>> step_bodies;
  std::vector<std::string> step_reasons;
  std::vector<bool> steps = choose_host_steps(view, pinned, declared, step_bodies, step_reasons);

  // Control-flow steps go to a pseudo-device after the real ones: host memory, and nothing
  // else runs there, so islands never move onto or off it. Without steps the problem (and
  // every message about it) is exactly the devices'.
  bool any_step = std::find(steps.begin(), steps.end(), true) != steps.end();
  PartitionProblem problem = partition_problem(names, declared, any_step);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    PartitionNode n = partition_node(k, declared);
    n.pinned = steps[k] ? -1 : pinned[k];  // sequence steps run on the host whatever the pins
    // Shape and Size only read metadata: they stay with their input's device when the cost
    // model agrees (their output is a few int64s), while the integer arithmetic after them
    // stays on the host.
    n.host_preferred = shape_nodes[k] && node.op_type != "Shape" && node.op_type != "Size";
    if (steps[k]) {
      n.supported.assign(devices_.size(), false);
      n.reasons.assign(devices_.size(), step_reasons[k]);
      n.supported.push_back(true);
      n.reasons.push_back("");
      problem.nodes.push_back(std::move(n));
      continue;
    }
    ask_devices(view, k, n);
    if (any_step) {
      n.supported.push_back(false);
      n.reasons.push_back("only control-flow steps run on the host");
    }
    problem.nodes.push_back(std::move(n));
  }

  Partition result = partition_graph(problem);
  if (!result.unsupported.empty() && defer_unsupported(problem, result, declared)) return;
  std::string why;
  if (!is_valid_schedule(problem, result, &why))
    fail(LOOM_ERROR_INTERNAL, "the partitioner produced an invalid plan: " + why);
  node_device_ = result.node_device;
  subgraphs_ = std::move(result.subgraphs);
  fallback_notes_ = std::move(result.notes);
  for (const std::string& note : fallback_notes_) runtime_.log(LOOM_LOG_INFO, "scheduler", note);
  create_bodies(step_bodies);
}

bool Session::refused_with_static_shapes(const PartitionProblem& problem,
                                         const std::vector<ValueFacts>& declared) const {
  const Graph& g = *model_->graph;
  auto is_static = [&](int id) {
    return id < 0 || g.values[id].constant || declared[id].kind != ValueKind::kTensor ||
           declared[id].shape.is_static();
  };
  for (size_t k = 0; k < problem.nodes.size(); ++k) {
    const PartitionNode& n = problem.nodes[k];
    bool refused = n.pinned >= 0 ? !n.supported[n.pinned]
                                 : std::find(n.supported.begin(), n.supported.end(), true) ==
                                       n.supported.end();
    if (!refused) continue;
    const Node& node = g.nodes[k];
    bool all_static = std::all_of(node.inputs.begin(), node.inputs.end(), is_static) &&
                      std::all_of(node.outputs.begin(), node.outputs.end(), is_static);
    if (all_static) return true;
  }
  return false;
}

}  // namespace loom::core
