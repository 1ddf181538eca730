// Plans by the shapes of the run. A model exported with symbolic dimensions (dynamic batch,
// sequence length, image size) used to be partitioned once on its declared shapes, where
// devices that need static shapes (onednn, vulkan) refused every node and the whole model ran
// on the reference device. Here such a session makes, per input-shape signature, a child
// session whose graph declares exactly the fed shapes: folding, placement and compilation then
// see static shapes, as for a static export. The children live in an LRU cache bounded in
// entries and in bytes of compiled state, so memory stays flat when shapes keep changing.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <loom/heap_trim.hpp>

#include "session.hpp"
#include "shape_inference.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

constexpr int64_t kMaxOverrideElements = int64_t{1} << 40;

// "1x3x224x224"; a free axis of input `id` as "*".
std::string dims_text(const int64_t* dims, int32_t rank, int id = -1, const FreeAxes& free = {}) {
  std::string s;
  for (int32_t d = 0; d < rank; ++d)
    s += (d ? "x" : "") + (is_free_axis(free, id, d) ? std::string("*") : std::to_string(dims[d]));
  return s;
}

// Whether a plan for the tensor inputs `inputs` serves the fed tensor inputs `fed` as they are:
// the same inputs, dtypes and ranks, and the same extents except on the plan's `free` axes
// (none: the very same signature). Compared field by field: a streaming model runs every few
// dozen microseconds, and a formatted key cost it about one of them.
bool signature_serves(const FedTensors& inputs, const FreeAxes& free, const FedTensors& fed) {
  if (fed.size() != inputs.size()) return false;
  for (size_t i = 0; i < fed.size(); ++i) {
    const auto& [id, t] = inputs[i];
    const loom_tensor_t& f = fed[i].second;
    if (fed[i].first != id || f.dtype != t.dtype || f.rank != t.rank) return false;
    for (int32_t d = 0; d < t.rank; ++d)
      if (f.dims[d] != t.dims[d] && !is_free_axis(free, id, d)) return false;
  }
  return true;
}

// The non-constant tensor inputs the run feeds.
FedTensors fed_tensors(const Graph& g, const std::vector<HostValue>& bound) {
  FedTensors fed;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const int id = g.inputs[k];
    const HostValue& h = bound[k];
    if (g.values[id].constant || g.values[id].kind != ValueKind::kTensor || !h.present ||
        !h.is_tensor())
      continue;
    loom_tensor_t t = h.t;
    t.data = nullptr;  // only the dtype and dims are kept
    t.buffer = nullptr;
    fed.emplace_back(id, t);
  }
  return fed;
}

// "x=1x3x224x224, mask=1x128", free axes as "*".
std::string shapes_text(const Graph& g, const FedTensors& fed, const FreeAxes& free = {}) {
  std::string s;
  for (const auto& [id, t] : fed)
    s += (s.empty() ? "" : ", ") + g.values[id].name + "=" + dims_text(t.dims, t.rank, id, free);
  return s;
}

// "1x3x224x224" -> dims; "" -> a scalar. `what` names the override in errors.
std::vector<int64_t> parse_dims(const std::string& text, const std::string& what) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find_first_of("x,", pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    int64_t v = -1;
    size_t used = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 0 || v > kMaxOverrideElements)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           what + ": '" + item + "' is not a dimension (expected e.g. 1x3x224x224)");
    dims.push_back(v);
    pos = end + 1;
    if (end == text.size()) break;
  }
  if (dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         what + ": more than " + std::to_string(LOOM_MAX_RANK) + " dimensions");
  // No data backs an override, so nothing else bounds it before the session plans buffers
  // for it: the element count must stay countable (and far below what memory could hold).
  int64_t count = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(count, d, &count) || count > kMaxOverrideElements)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           what + ": more than 2^40 elements; give the shape the model will really be fed");
  return dims;
}

}  // namespace

Session::Session(const Session& parent, std::shared_ptr<Model> specialized, Specialized)
    : runtime_(parent.runtime_),
      model_(std::move(specialized)),
      config_(parent.config_),
      depth_(0),
      devices_(parent.devices_),
      device_labels_(parent.device_labels_) {
  finish_construction();
  compile_declared();
}

void Session::apply_shape_overrides(const std::string& spec) {
  if (spec.empty()) return;
  auto own = std::make_shared<Model>(*model_);
  own->graph = std::make_shared<Graph>(*model_->graph);
  Graph& g = *own->graph;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(';', pos);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "shape override '" + item +
                                            "' must look like INPUT=DIMS (e.g. "
                                            "input=1x3x224x224) or DIM_NAME=EXTENT");
    std::string name = item.substr(0, eq);
    std::string what = "shape override '" + item + "'";
    std::vector<int64_t> dims = parse_dims(item.substr(eq + 1), what);
    int id = g.find(name);
    if (id >= 0 && g.values[id].graph_input && !g.values[id].constant) {
      Value& v = g.values[id];
      if (v.kind != ValueKind::kTensor)
        fail(LOOM_ERROR_INVALID_ARGUMENT, what + ": input '" + name + "' is not a tensor");
      bool ok = v.shape.rank < 0 || v.shape.rank == static_cast<int32_t>(dims.size());
      for (size_t d = 0; ok && v.shape.rank >= 0 && d < dims.size(); ++d)
        if (v.shape.dims[d] >= 0 && v.shape.dims[d] != dims[d]) ok = false;
      if (!ok)
        fail(LOOM_ERROR_INVALID_ARGUMENT, what + " contradicts the model, which declares input '" +
                                              name + "' as " + v.shape.to_string());
      v.shape.rank = static_cast<int32_t>(dims.size());
      v.shape.dims = dims;
      v.shape.dim_params.clear();
      continue;
    }
    // A symbolic dimension's name (ONNX Runtime's free-dimension override by name): every
    // input dimension with that name takes the extent.
    size_t matched = 0;
    for (int in : g.inputs) {
      Value& v = g.values[in];
      if (v.constant) continue;
      for (size_t d = 0; d < v.shape.dim_params.size() && d < v.shape.dims.size(); ++d)
        if (v.shape.dim_params[d] == name && v.shape.dims[d] < 0) {
          if (dims.size() != 1)
            fail(LOOM_ERROR_INVALID_ARGUMENT,
                 what + ": '" + name + "' is a symbolic dimension and takes one extent");
          v.shape.dims[d] = dims[0];
          v.shape.dim_params[d].clear();
          ++matched;
        }
    }
    if (matched == 0) {
      std::string list;
      for (int in : g.inputs)
        if (!g.values[in].constant)
          list +=
              (list.empty() ? "" : ", ") + g.values[in].name + " " + g.values[in].shape.to_string();
      fail(LOOM_ERROR_INVALID_ARGUMENT, what +
                                            " names neither a graph input nor a symbolic "
                                            "dimension of one (inputs: " +
                                            list + ")");
    }
  }
  model_ = std::move(own);
}

bool Session::has_symbolic_inputs() const {
  const Graph& g = *model_->graph;
  for (int id : g.inputs) {
    const Value& v = g.values[id];
    if (!v.constant && v.kind == ValueKind::kTensor && !v.shape.is_static()) return true;
  }
  return false;
}

void Session::compile_declared() {
  if (!single_signature()) return;
  const Graph& g = *model_->graph;
  std::vector<ValueFacts> facts(g.values.size());
  for (int id : g.inputs) {
    ValueFacts& f = facts[id];
    f.known = true;
    f.kind = g.values[id].kind;
    f.dtype = g.values[id].dtype;
    f.shape.rank = g.values[id].shape.rank;
    f.shape.dims = g.values[id].shape.dims;
  }
  std::string key = signature_key(facts);
  std::unique_ptr<Prepared> p = prepare(facts, {});
  ++plan_misses_;  // a plan made, as a run with a new signature would
  p->last_used = ++tick_;
  current_ = p.get();
  prepared_.emplace(key, std::move(p));
}

size_t Session::prepared_bytes(const Prepared& p) const {
  return p.planned_peak + released_constant_bytes_;
}

void Session::run_per_shape(const std::vector<std::string>& names,
                            const std::vector<HostValue>& inputs, const OutputSink& emit) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Graph& g = *model_->graph;
  // Checks names, dtypes and the declared extents once, here, with the model's own names.
  BoundInputs bound = bind_inputs(names, inputs);
  const FedTensors fed = fed_tensors(g, bound.values);
  auto it = std::find_if(shape_plans_.begin(), shape_plans_.end(),
                         [&](const ShapePlan& p) { return signature_serves(p.inputs, {}, fed); });
  // A plan whose devices run any extent where this signature differs serves it as it is: a
  // generation loop's cache grows by one at every step, and would otherwise plan every step.
  if (it == shape_plans_.end())
    it = std::find_if(shape_plans_.begin(), shape_plans_.end(), [&](const ShapePlan& p) {
      return !p.free.empty() && signature_serves(p.inputs, p.free, fed);
    });
  if (it != shape_plans_.end()) {
    ++plan_hits_;
    shape_plans_.splice(shape_plans_.begin(), shape_plans_, it);
  } else {
    ++plan_misses_;
    auto specialized = std::make_shared<Model>(*model_);
    specialized->graph = std::make_shared<Graph>(*model_->graph);
    for (const auto& [id, t] : fed) {
      Value& v = specialized->graph->values[id];
      v.shape.rank = t.rank;
      v.shape.dims.assign(t.dims, t.dims + t.rank);
      v.shape.dim_params.clear();
    }
    ShapePlan plan;
    plan.shapes = shapes_text(g, fed);
    plan.inputs = fed;
    const auto start = std::chrono::steady_clock::now();
    plan.session = std::unique_ptr<Session>(new Session(*this, specialized, Specialized{}));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    plan.bytes = plan.session->plan_cache_stats().bytes;
    runtime_.log(
        LOOM_LOG_INFO, "scheduler",
        fmt::format("planned for input shapes {} in {:.2f} ms ({} bytes of compiled state)",
                    plan.shapes, ms, plan.bytes));
    plan.free = plan.session->adopt_free_axes();
    if (!plan.free.empty()) {
      plan.shapes = shapes_text(g, fed, plan.free);
      runtime_.log(LOOM_LOG_INFO, "scheduler",
                   fmt::format("the plan serves input shapes {} (\"*\": any extent, as its "
                               "devices declared)",
                               plan.shapes));
    }
    shape_plan_bytes_ += plan.bytes;
    shape_plans_.push_front(std::move(plan));
    evict_plans();
  }
  shape_plans_.front().session->run_values(names, inputs, emit);
}

FreeAxes Session::adopt_free_axes() {
  if (!current_ || prepared_.size() != 1) return {};
  // Folding that did anything here (beyond the parent's folding of the symbolic model) read
  // the fed shapes: a Shape whose result became a constant (position ids made from the cache
  // length, a Reshape target) holds for these extents only.
  const FoldStats& f = fold_stats_;
  if (f.nodes || f.constants || f.constant_nodes || f.identities || f.noop_pads || f.fused_pads ||
      f.omitted_outputs || f.evaluated_nodes)
    return {};
  const Graph& g = *model_->graph;
  Prepared& p = *current_;
  const PartLinks links = part_links();
  // An axis counts where every part that reads the input declared it (a control-flow step
  // declares nothing, so one reading the input disqualifies it).
  FreeAxes free;
  std::vector<bool> declaring(p.parts.size(), false);
  for (size_t s = 0; s < p.parts.size(); ++s)
    for (const auto& entry : p.parts[s].free_axes) {
      const auto [id, axis] = entry;
      if (!g.values[id].graph_input || g.values[id].constant || g.values[id].graph_output ||
          is_free_axis(free, id, axis))
        continue;
      bool all = !links.readers[id].empty();
      for (size_t r : links.readers[id]) all = all && is_free_axis(p.parts[r].free_axes, id, axis);
      if (!all) continue;
      free.push_back(entry);
      for (size_t r : links.readers[id]) declaring[r] = true;
    }
  if (free.empty()) return {};
  // Every free extent one longer, together (a cache's keys and values grow together): the
  // shapes that change must stay inside the declaring parts, or be graph outputs.
  std::vector<ValueFacts> grown(g.values.size());
  for (int id : g.inputs) grown[id] = p.facts[id];
  for (const auto& [id, axis] : free) {
    ValueFacts& v = grown[id];
    if (!v.known || axis >= v.shape.rank) return {};
    v.shape.dims[axis] += 1;
  }
  try {
    infer_shapes(g, runtime_.schemas, grown);
  } catch (const std::exception&) {
    return {};
  }
  for (size_t id = 0; id < g.values.size(); ++id) {
    const Shape& a = p.facts[id].shape;
    const Shape& b = grown[id].shape;
    if (p.facts[id].known == grown[id].known && a.rank == b.rank && a.dims == b.dims) continue;
    if (std::count_if(free.begin(), free.end(),
                      [&](const auto& e) { return e.first == static_cast<int>(id); }))
      continue;
    const int producer = links.producer_part[id];
    if (producer < 0 || !declaring[producer]) return {};
    for (size_t r : links.readers[id])
      if (r != static_cast<size_t>(producer)) return {};
  }
  // This session now takes those extents: its declared shapes leave them open (bind_inputs
  // checks the rest) and its signature skips them, so its one plan is found for every run.
  for (const auto& [id, axis] : free) model_->graph->values[id].shape.dims[axis] = -1;
  free_axes_ = free;
  auto node = prepared_.extract(prepared_.begin());
  node.key() = signature_key(p.facts);
  prepared_.insert(std::move(node));
  return free;
}

void Session::evict_plans() {
  // An evicted plan frees its compiled state: back to the system if that was much (a cache
  // that evicts at every run otherwise grows the heap, loom/heap_trim.hpp).
  sdk::HeapTrim trim(kEvictionTrimBytes);
  while (shape_plans_.size() > 1 && (shape_plans_.size() > config_.plan_cache_entries ||
                                     shape_plan_bytes_ > config_.plan_cache_bytes)) {
    ShapePlan& victim = shape_plans_.back();
    runtime_.log(LOOM_LOG_INFO, "scheduler",
                 fmt::format("evicted the plan for input shapes {} ({} bytes)", victim.shapes,
                             victim.bytes));
    shape_plan_bytes_ -= victim.bytes;
    ++plan_evictions_;
    shape_plans_.pop_back();  // its session releases its executables and graph
  }
}

loom_plan_cache_stats_t Session::plan_cache_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_cache_stats_locked();
}

loom_plan_cache_stats_t Session::plan_cache_stats_locked() const {
  loom_plan_cache_stats_t s{};
  s.struct_size = sizeof s;
  s.capacity_entries = config_.plan_cache_entries;
  s.capacity_bytes = config_.plan_cache_bytes;
  s.hits = plan_hits_;
  s.misses = plan_misses_;
  s.evictions = plan_evictions_;
  if (per_shape_) {
    s.entries = shape_plans_.size();
    s.bytes = shape_plan_bytes_;
  } else {
    s.entries = prepared_.size();
    for (const auto& [key, p] : prepared_) s.bytes += prepared_bytes(*p);
  }
  return s;
}

std::string Session::plan_cache_text() const {
  loom_plan_cache_stats_t s = plan_cache_stats_locked();
  return fmt::format(
      "plan cache: {} of at most {} plans, {} of at most {} bytes of compiled state; {} hits, "
      "{} misses, {} evictions",
      s.entries, s.capacity_entries, s.bytes, s.capacity_bytes, s.hits, s.misses, s.evictions);
}

std::string Session::plan_cache_json() const {
  loom_plan_cache_stats_t s = plan_cache_stats_locked();
  return fmt::format(
      "{{\"entries\":{},\"bytes\":{},\"capacity_entries\":{},\"capacity_bytes\":{},"
      "\"hits\":{},\"misses\":{},\"evictions\":{}}}",
      s.entries, s.bytes, s.capacity_entries, s.capacity_bytes, s.hits, s.misses, s.evictions);
}

std::string Session::symbolic_inputs_text() const {
  const Graph& g = *model_->graph;
  std::string list;
  for (int id : g.inputs)
    if (!g.values[id].constant)
      list += (list.empty() ? "" : ", ") + g.values[id].name + " [" +
              g.values[id].shape.to_string() + "]";
  return list;
}

size_t Session::planned_peak() const {
  if (per_shape_) return shape_plans_.empty() ? 0 : shape_plans_.front().session->planned_peak();
  return current_ ? current_->planned_peak : 0;
}

}  // namespace loom::core
