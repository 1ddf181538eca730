// Session::run: moves tensors between devices at subgraph boundaries, runs every compiled part
// in order and hands the outputs back (session_prepare.cpp compiles the plan this executes,
// session_bind.cpp checks and binds the application's inputs).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <loom/heap_trim.hpp>
#include <optional>
#include <set>

#include "profile_hooks.hpp"
#include "session.hpp"
#include "status.hpp"

namespace loom::core {

using profile_hooks::CoreEvent;
using profile_hooks::DeviceCall;
using profile_hooks::input_shapes;

namespace {

// A constant as a host value: a view of its bytes, which the model keeps alive.
HostValue constant_host_value(const ConstantData& c) {
  HostValue h;
  h.present = true;
  h.t.struct_size = sizeof h.t;
  h.t.dtype = c.dtype;
  h.t.rank = static_cast<int32_t>(c.dims.size());
  for (int32_t d = 0; d < h.t.rank; ++d) h.t.dims[d] = c.dims[d];
  h.t.data = const_cast<void*>(c.data);
  h.t.byte_size = c.size;
  return h;
}

Shape shape_of(const loom_tensor_t& t) {
  Shape s;
  s.rank = t.rank;
  s.dims.assign(t.dims, t.dims + t.rank);
  return s;
}

// The shape every element has (unknown where they differ; unknown rank when there are none).
Shape common_shape(const std::vector<HostValue>& elements) {
  Shape s;
  for (size_t e = 0; e < elements.size(); ++e) {
    Shape x = shape_of(elements[e].t);
    if (e == 0) {
      s = x;
    } else if (s.rank != x.rank) {
      return Shape{};
    } else {
      for (int32_t d = 0; d < s.rank; ++d)
        if (s.dims[d] != x.dims[d]) s.dims[d] = -1;
    }
  }
  return s;
}

// What inference starts from for a bound input.
ValueFacts facts_of(const HostValue& h, const Value& v) {
  ValueFacts f;
  f.known = true;
  f.kind = h.kind;
  if (h.is_tensor()) {
    f.dtype = h.t.dtype;
    f.shape = shape_of(h.t);
    return f;
  }
  f.dtype = h.elem_dtype != LOOM_DTYPE_UNDEFINED ? h.elem_dtype : v.dtype;
  if (h.kind == ValueKind::kSequence) f.shape = common_shape(h.elements);
  if (h.kind == ValueKind::kOptionalTensor && !h.elements.empty())
    f.shape = shape_of(h.elements[0].t);
  if (h.kind == ValueKind::kOptionalSequence && !h.elements.empty())
    f.shape = common_shape(h.elements[0].elements);
  return f;
}

}  // namespace

void Session::profile_start(size_t max_events) {
  auto profiler = std::make_shared<Profiler>(max_events);
  std::lock_guard<std::mutex> lock(profile_mutex_);
  profiler_ = std::move(profiler);
}

void Session::profile_stop() {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  if (profiler_) profiler_->stop();
}

void Session::share_profiler(std::shared_ptr<Profiler> profiler) {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  profiler_ = std::move(profiler);
}

std::shared_ptr<Profiler> Session::profiler() {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  return profiler_;
}

void Session::run(size_t num_inputs, const char* const* names, const loom_host_tensor_t* inputs,
                  size_t num_outputs, loom_host_tensor_t* outputs) {
  const Graph& g = *model_->graph;
  if (num_inputs && (!names || !inputs))
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input names or tensors are NULL");
  if (num_outputs < g.outputs.size() || (g.outputs.size() && !outputs))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "room for " + std::to_string(g.outputs.size()) + " outputs is needed");
  std::vector<std::string> input_names;
  std::vector<HostValue> values;
  for (size_t i = 0; i < num_inputs; ++i) {
    input_names.push_back(names[i] ? names[i] : "");
    values.push_back(borrow_host_tensor(input_names.back(), inputs[i]));
  }
  size_t done = 0;
  try {
    run_values(input_names, values, [&](size_t i, const HostValue& v) {
      if (!v.is_tensor())
        fail(LOOM_ERROR_UNSUPPORTED, "output '" + g.values[g.outputs[i]].name + "' is of type " +
                                         value_kind_name(v.kind) +
                                         ": read it with loom_session_run_values");
      std::memset(&outputs[i], 0, sizeof outputs[i]);
      copy_to_host_tensor(v.t, outputs[i]);
      done = i + 1;
    });
  } catch (...) {
    for (size_t i = 0; i < done; ++i) std::free(outputs[i].data);
    throw;
  }
}

std::string Session::signature_key(const std::vector<ValueFacts>& facts) const {
  std::vector<ValueFacts> per_input;
  per_input.reserve(model_->graph->inputs.size());
  for (int id : model_->graph->inputs) per_input.push_back(facts[id]);
  return input_signature_key(per_input);
}

std::string Session::input_signature_key(const std::vector<ValueFacts>& per_input) const {
  std::string key;
  const std::vector<int>& inputs = model_->graph->inputs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int id = inputs[k];
    const ValueFacts& f = per_input[k];
    if (!f.known) continue;
    auto out = std::back_inserter(key);
    fmt::format_to(out, "{}:{}:{}:{}:", id, static_cast<int>(f.kind), static_cast<int>(f.dtype),
                   f.shape.rank);
    for (size_t d = 0; d < f.shape.dims.size(); ++d) {
      if (is_free_axis(free_axes_, id, static_cast<int32_t>(d)))
        key += "*,";
      else
        fmt::format_to(out, "{},", f.shape.dims[d]);
    }
    key += ';';
  }
  return key;
}

// The compiled plan for the signature of `per_input` (facts of each graph input, in order):
// the cached one, or one prepared now.
Prepared& Session::find_plan(const std::vector<ValueFacts>& per_input, const std::set<int>& fed) {
  // The previous run's plan when this run's inputs have its signature, compared field by field:
  // no key to format (a streaming model runs every few dozen microseconds). Free axes (which
  // the key writes as "*") take the keyed path.
  if (current_ && free_axes_.empty()) {
    const std::vector<int>& inputs = model_->graph->inputs;
    bool same = current_->facts.size() == model_->graph->values.size();
    for (size_t k = 0; same && k < inputs.size(); ++k) {
      const ValueFacts &a = per_input[k], &b = current_->facts[inputs[k]];
      same = a.known == b.known &&
             (!a.known || (a.kind == b.kind && a.dtype == b.dtype && a.shape.rank == b.shape.rank &&
                           a.shape.dims == b.shape.dims));
    }
    if (same) {
      ++plan_hits_;
      return *current_;
    }
  }
  std::string key = input_signature_key(per_input);
  auto it = prepared_.find(key);
  if (it != prepared_.end()) ++plan_hits_;
  if (it == prepared_.end()) {
    ++plan_misses_;
    // Bounded like the plans of symbolic-dimension models: least recently used first, the
    // freed memory handed back when it was much (loom/heap_trim.hpp).
    {
      sdk::HeapTrim trim(kEvictionTrimBytes);
      while (!prepared_.empty() && prepared_.size() >= config_.plan_cache_entries) {
        auto oldest = prepared_.begin();
        for (auto i = prepared_.begin(); i != prepared_.end(); ++i)
          if (i->second->last_used < oldest->second->last_used) oldest = i;
        if (current_ == oldest->second.get()) current_ = nullptr;
        release(*oldest->second);
        prepared_.erase(oldest);
        ++plan_evictions_;
      }
    }
    // Facts per value id only here: a run that finds its plan needs none.
    std::vector<ValueFacts> input_facts(model_->graph->values.size());
    for (size_t k = 0; k < per_input.size(); ++k)
      input_facts[model_->graph->inputs[k]] = per_input[k];
    it = prepared_.emplace(key, prepare(input_facts, fed)).first;
  }
  return *it->second;
}

// Values in flight during one run of a plan: where each lives and who frees it. What it still
// holds is freed when it is destroyed (the run ended, or threw).
class Session::RunState {
 public:
  RunState(Session& session, Prepared& p, const RunGuard& guard, const std::set<int>& fed)
      : session_(session),
        g_(*session.model_->graph),
        p_(p),
        guard_(guard),
        fed_(fed),
        slots_(take_slots(g_.values.size())) {}
  ~RunState() {
    step_values_.clear();
    for (Slot& s : slots_)
      if (s.present) free_slot(s);
    give_back_slots(std::move(slots_));
  }
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  void bind(const std::vector<HostValue>& bound);
  void run_steps(size_t si);
  void run_device_part(size_t si);
  void emit_outputs(const OutputSink& emit);

 private:
  struct Slot {
    bool present = false;
    loom_tensor_t t{};
    int device = -1;  // -1: host memory not owned by a device
    int remaining = 0;
    std::shared_ptr<void> owner;  // host memory a control-flow step made
    HostValue container;          // a sequence or optional a step made (t unused)
  };

  // A slot per value of the graph, taken from a per-thread pool: making and destroying them for
  // every run cost a streaming model (a few dozen microseconds a chunk) several percent of its
  // time. Pooled vectors hold only empty slots (free_slot leaves a slot empty, and a slot is
  // filled only together with `present`); nested runs (control-flow bodies) take their own.
  static constexpr size_t kPooledSlots = 4096;  // larger graphs' slots are not kept
  static constexpr size_t kPoolDepth = 8;
  static std::vector<std::vector<Slot>>& slot_pool() {
    thread_local std::vector<std::vector<Slot>> pool;
    return pool;
  }
  static std::vector<Slot> take_slots(size_t n) {
    std::vector<Slot> slots;
    if (auto& pool = slot_pool(); !pool.empty()) {
      slots = std::move(pool.back());
      pool.pop_back();
    }
    slots.resize(n);
    return slots;
  }
  static void give_back_slots(std::vector<Slot>&& slots) {
    auto& pool = slot_pool();
    if (slots.size() <= kPooledSlots && pool.size() < kPoolDepth) pool.push_back(std::move(slots));
  }

  void free_slot(Slot& s) {
    if (s.present && s.device >= 0 && s.t.buffer)
      session_.devices_[s.device]->api().free_buffer(session_.devices_[s.device]->handle(),
                                                     s.t.buffer);
    s = Slot{};
  }
  HostValue host_value(int id);
  void store_step_outputs(const Prepared::Part& part);
  loom_tensor_t stage_input(int id, DeviceInstance& dev, int dev_index,
                            std::vector<loom_buffer_t*>& staged);
  void call_device(size_t si, DeviceInstance& dev, std::vector<loom_tensor_t>& ins,
                   std::vector<loom_tensor_t>& outs);
  void release_inputs(const Prepared::Part& part);

  Session& session_;
  const Graph& g_;
  Prepared& p_;
  const RunGuard& guard_;
  const std::set<int>& fed_;
  std::vector<Slot> slots_;
  std::map<int, HostValue> step_values_;  // made by steps, read by later steps of the part
};

// The application's (bound) graph inputs into their slots.
void Session::RunState::bind(const std::vector<HostValue>& bound) {
  for (size_t k = 0; k < g_.inputs.size(); ++k) {
    if (!bound[k].present) continue;
    const int id = g_.inputs[k];
    const HostValue& h = bound[k];
    Slot& s = slots_[id];
    s.present = true;
    if (h.is_tensor()) {
      s.t = h.t;
      s.owner = h.owner;
    } else {
      s.container = h;
    }
    s.remaining = p_.consumers[id];
  }
}

// A value as a host tensor for a control-flow step (copied out of remote memory).
HostValue Session::RunState::host_value(int id) {
  HostValue h;
  if (id < 0) return h;
  if (auto it = step_values_.find(id); it != step_values_.end()) return it->second;
  const Value& v = g_.values[id];
  if (v.constant && !fed_.count(id)) return constant_host_value(*v.constant);
  Slot& s = slots_[id];
  if (!s.present) fail(LOOM_ERROR_INTERNAL, "value '" + v.name + "' was not computed before use");
  if (!s.container.is_tensor()) return s.container;
  if (s.t.data || !s.t.byte_size) {
    h.present = true;
    h.t = s.t;
    h.t.buffer = nullptr;
    h.t.offset = 0;
    h.owner = s.owner;
    return h;
  }
  std::vector<int64_t> dims(s.t.dims, s.t.dims + s.t.rank);
  h = allocate_host_value(s.t.dtype, dims);
  if (host_value_bytes(h.t) != s.t.byte_size)
    fail(LOOM_ERROR_INTERNAL,
         "value '" + v.name + "' has a byte size that does not match its shape");
  DeviceInstance& from = *session_.devices_[s.device];
  throw_if_error(
      from.api().copy_to_host(from.handle(), s.t.buffer, s.t.offset, h.t.data, s.t.byte_size),
      "copy from device '" + from.name() + "'");
  return h;
}

// Part `si` of control-flow steps: each step on host values, in order.
void Session::RunState::run_steps(size_t si) {
  const Prepared::Part& part = p_.parts[si];
  step_values_.clear();
  for (int k : session_.subgraphs_[si].nodes) {
    guard_.poll();
    const Node& node = g_.nodes[k];
    std::vector<HostValue> ins;
    for (int id : node.inputs) ins.push_back(host_value(id));
    std::map<int, HostValue> outer;
    for (int id : node.implicit_inputs) outer[id] = host_value(id);
    // A control-flow node's time is its bodies' steps (recorded by their own runs); a
    // sequence or optional op's is its own.
    CoreEvent event(guard_, "host", node.name.empty() ? node.op_type : node.name, "host",
                    !session_.bodies_.count(k));
    if (ProfileRecord* r = event.record()) {
      r->op_type = node.op_type;
      r->shapes = input_shapes(g_, node, p_.facts);
    }
    std::vector<HostValue> outs = session_.run_step(k, ins, outer);
    for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i)
      if (node.outputs[i] >= 0) step_values_[node.outputs[i]] = outs[i];
  }
  store_step_outputs(part);
  step_values_.clear();
  release_inputs(part);
}

// The outputs of a part of steps into their slots (host memory).
void Session::RunState::store_step_outputs(const Prepared::Part& part) {
  for (int id : part.outputs) {
    auto it = step_values_.find(id);
    if (it == step_values_.end() || !it->second.present)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "output '" + g_.values[id].name + "' of a control-flow step was not produced");
    Slot& s = slots_[id];
    s.present = true;
    if (it->second.is_tensor()) {
      s.t = it->second.t;
      s.owner = it->second.owner;
    } else {
      s.container = it->second;
    }
    s.device = -1;
    s.remaining = p_.consumers[id];
    if (s.remaining == 0) free_slot(s);
  }
}

// Frees the part's inputs that no later part reads (graph outputs stay for the application).
void Session::RunState::release_inputs(const Prepared::Part& part) {
  for (int id : part.inputs) {
    Slot& s = slots_[id];
    if (--s.remaining <= 0 && !g_.values[id].graph_output) free_slot(s);
  }
}

// Value `id` as device `dev` (index `dev_index`) reads it: as is on the same device, by host
// pointer between host-memory devices, else copied into a buffer added to `staged`.
loom_tensor_t Session::RunState::stage_input(int id, DeviceInstance& dev, int dev_index,
                                             std::vector<loom_buffer_t*>& staged) {
  const std::string& name = g_.values[id].name;
  Slot& s = slots_[id];
  if (!s.present) fail(LOOM_ERROR_INTERNAL, "value '" + name + "' was not computed before use");
  if (!s.container.is_tensor())
    fail(LOOM_ERROR_INTERNAL,
         "value '" + name + "' is a sequence or optional but reached a device");
  loom_tensor_t t = s.t;
  const auto& devices = session_.devices_;
  bool src_host_visible = s.device < 0 || devices[s.device]->host_memory();
  if (s.device < 0 && !t.data && t.byte_size)
    fail(LOOM_ERROR_INTERNAL, "value '" + name + "' has no data");
  if (s.device == dev_index) return t;  // same device: as is
  if (src_host_visible && dev.host_memory() && t.data) {
    t.buffer = nullptr;  // zero copy: the host pointer is all the device needs
    t.offset = 0;
    return t;
  }
  CoreEvent event(guard_, "transfer", name, dev.name(), true);
  if (ProfileRecord* r = event.record())
    r->detail = std::to_string(t.byte_size) + " bytes from " +
                (s.device < 0 ? std::string("the application") : devices[s.device]->name()) +
                " to " + dev.name();
  std::vector<uint8_t> bounce;
  const void* src = t.data;
  if (!src && t.byte_size) {
    bounce.resize(t.byte_size);
    DeviceInstance& from = *devices[s.device];
    throw_if_error(
        from.api().copy_to_host(from.handle(), t.buffer, t.offset, bounce.data(), t.byte_size),
        "copy from device '" + from.name() + "'");
    src = bounce.data();
  }
  loom_buffer_t* buf = nullptr;
  throw_if_error(dev.api().alloc(dev.handle(), std::max<size_t>(t.byte_size, 1), &buf),
                 "allocation on device '" + dev.name() + "'");
  staged.push_back(buf);
  if (t.byte_size)
    throw_if_error(dev.api().copy_from_host(dev.handle(), src, buf, 0, t.byte_size),
                   "copy to device '" + dev.name() + "'");
  t.buffer = buf;
  t.offset = 0;
  t.data = dev.api().buffer_host_ptr(dev.handle(), buf);
  return t;
}

// Runs part `si`'s executable on `dev` (profiled when the run is).
void Session::RunState::call_device(size_t si, DeviceInstance& dev, std::vector<loom_tensor_t>& ins,
                                    std::vector<loom_tensor_t>& outs) {
  const Prepared::Part& part = p_.parts[si];
  loom_run_args_t args;
  std::memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.num_inputs = ins.size();
  args.inputs = ins.data();
  args.num_outputs = outs.size();
  args.outputs = outs.data();
  args.control = guard_.control();
  if (!guard_.profiler()) {
    throw_if_error(dev.api().run(dev.handle(), part.exe, &args));
    return;
  }
  // The device call as a whole; a leaf only when the device reported no steps of its own
  // (a plugin older than ABI 1.5).
  DeviceCall call(guard_.control(), guard_.profiler(), guard_.profiled_run(), dev.name(), g_,
                  session_.subgraphs_[si].nodes, p_.facts);
  CoreEvent event(guard_, "subgraph", "subgraph " + std::to_string(si), dev.name(), false);
  args.control = &call.control;
  loom_status_t* status = dev.api().run(dev.handle(), part.exe, &args);
  event.set_leaf(call.steps.load() == 0);
  throw_if_error(status);
}

// Part `si` on its device: inputs staged, the executable run, outputs into their slots.
void Session::RunState::run_device_part(size_t si) {
  const Prepared::Part& part = p_.parts[si];
  int dev_index = static_cast<int>(session_.subgraphs_[si].device);
  DeviceInstance& dev = *session_.devices_[dev_index];
  std::vector<loom_tensor_t> ins(part.inputs.size());
  std::vector<loom_buffer_t*> staged;
  struct StageCleanup {
    DeviceInstance& dev;
    std::vector<loom_buffer_t*>& bufs;
    ~StageCleanup() {
      for (loom_buffer_t* b : bufs) dev.api().free_buffer(dev.handle(), b);
    }
  } stage_cleanup{dev, staged};
  for (size_t i = 0; i < part.inputs.size(); ++i)
    ins[i] = stage_input(part.inputs[i], dev, dev_index, staged);
  std::vector<loom_tensor_t> outs(part.outputs.size());
  for (loom_tensor_t& o : outs) {
    std::memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
  }
  call_device(si, dev, ins, outs);
  for (size_t i = 0; i < part.outputs.size(); ++i) {
    Slot& s = slots_[part.outputs[i]];
    s.present = true;
    s.t = outs[i];
    s.device = dev_index;
    s.remaining = p_.consumers[part.outputs[i]];
    if (s.remaining == 0) free_slot(s);
  }
  release_inputs(part);
}

// Outputs to the application, in order (device memory copied out for the call).
void Session::RunState::emit_outputs(const OutputSink& emit) {
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    int id = g_.outputs[i];
    const Value& v = g_.values[id];
    Slot& s = slots_[id];
    HostValue out;
    std::vector<uint8_t> bounce;
    if (s.present && !s.container.is_tensor()) {
      out = s.container;
    } else if (s.present) {
      out.present = true;
      out.t = s.t;
      out.owner = s.owner;
      if (!s.t.data && s.t.byte_size) {
        DeviceInstance& from = *session_.devices_[s.device];
        CoreEvent event(guard_, "transfer", v.name, from.name(), true);
        if (ProfileRecord* r = event.record())
          r->detail =
              std::to_string(s.t.byte_size) + " bytes from " + from.name() + " to the application";
        bounce.resize(s.t.byte_size);
        throw_if_error(from.api().copy_to_host(from.handle(), s.t.buffer, s.t.offset, bounce.data(),
                                               s.t.byte_size),
                       "copy from device '" + from.name() + "'");
        out.t.data = bounce.data();
      }
      out.t.buffer = nullptr;
      out.t.offset = 0;
    } else if (v.constant) {
      out = constant_host_value(*v.constant);
    } else {
      fail(LOOM_ERROR_INTERNAL, "output '" + v.name + "' was not computed");
    }
    emit(i, out);
  }
}

void Session::run_values(const std::vector<std::string>& names,
                         const std::vector<HostValue>& inputs, const OutputSink& emit) {
  // The outermost run on this thread holds the limits and watches for cancellation; the runs it
  // starts (a plan for its shapes, control-flow bodies) go on under the same guard. Made before
  // the lock, so that a run waiting for the session is cancelled with the one in progress, and
  // destroyed after every slot below is freed.
  std::optional<RunGuard> own_guard;
  if (!RunGuard::current()) {
    std::shared_ptr<Profiler> profiler = this->profiler();
    if (profiler && !profiler->active()) profiler.reset();
    own_guard.emplace(config_.limits, cancel_generation_, std::move(profiler));
  }
  const RunGuard& guard = *RunGuard::current();
  std::optional<CoreEvent> whole_run;
  if (own_guard && guard.profiler()) {
    whole_run.emplace(guard, "run", "run " + std::to_string(guard.profiled_run()), "host", false);
  }
  if (per_shape_) return run_per_shape(names, inputs, emit);
  std::lock_guard<std::mutex> lock(mutex_);
  guard.poll();
  const Graph& g = *model_->graph;
  BoundInputs bound_inputs = bind_inputs(names, inputs);
  const std::vector<HostValue>& bound = bound_inputs.values;

  // Find or build the compiled plan for these shapes.
  std::vector<ValueFacts> per_input(g.inputs.size());
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (bound[k].present) per_input[k] = facts_of(bound[k], g.values[g.inputs[k]]);
  Prepared& p = find_plan(per_input, bound_inputs.fed);
  p.last_used = ++tick_;
  current_ = &p;

  RunState run(*this, p, guard, bound_inputs.fed);
  run.bind(bound);
  for (size_t si = 0; si < subgraphs_.size(); ++si) {
    guard.poll();
    if (subgraphs_[si].device == host_step_device())
      run.run_steps(si);
    else
      run.run_device_part(si);
  }
  run.emit_outputs(emit);
}

}  // namespace loom::core
