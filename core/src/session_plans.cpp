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

#include "session.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

constexpr int64_t kMaxOverrideElements = int64_t{1} << 40;

std::string dims_text(const int64_t* dims, int32_t rank) {
  std::string s;
  for (int32_t d = 0; d < rank; ++d) s += (d ? "x" : "") + std::to_string(dims[d]);
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
  std::string key, shapes;
  for (int id : g.inputs) {
    const Value& v = g.values[id];
    const HostValue& h = bound.values[id];
    if (v.constant || v.kind != ValueKind::kTensor || !h.present || !h.is_tensor()) continue;
    key += fmt::format("{}:{}:{};", id, static_cast<int>(h.t.dtype), dims_text(h.t.dims, h.t.rank));
    shapes += (shapes.empty() ? "" : ", ") + v.name + "=" + dims_text(h.t.dims, h.t.rank);
  }
  auto it = std::find_if(shape_plans_.begin(), shape_plans_.end(),
                         [&](const ShapePlan& p) { return p.key == key; });
  if (it != shape_plans_.end()) {
    ++plan_hits_;
    shape_plans_.splice(shape_plans_.begin(), shape_plans_, it);
  } else {
    ++plan_misses_;
    auto specialized = std::make_shared<Model>(*model_);
    specialized->graph = std::make_shared<Graph>(*model_->graph);
    for (int id : g.inputs) {
      const HostValue& h = bound.values[id];
      Value& v = specialized->graph->values[id];
      if (v.constant || v.kind != ValueKind::kTensor || !h.present || !h.is_tensor()) continue;
      v.shape.rank = h.t.rank;
      v.shape.dims.assign(h.t.dims, h.t.dims + h.t.rank);
      v.shape.dim_params.clear();
    }
    ShapePlan plan;
    plan.key = key;
    plan.shapes = shapes;
    const auto start = std::chrono::steady_clock::now();
    plan.session = std::unique_ptr<Session>(new Session(*this, specialized, Specialized{}));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    plan.bytes = plan.session->plan_cache_stats().bytes;
    runtime_.log(
        LOOM_LOG_INFO, "scheduler",
        fmt::format("planned for input shapes {} in {:.2f} ms ({} bytes of compiled state)", shapes,
                    ms, plan.bytes));
    shape_plan_bytes_ += plan.bytes;
    shape_plans_.push_front(std::move(plan));
    evict_plans();
  }
  shape_plans_.front().session->run_values(names, inputs, emit);
}

void Session::evict_plans() {
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
