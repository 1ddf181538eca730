// Session::prepare: what one set of input shapes compiles to. Every shape inferred, each
// part's boundary connected (inputs, transfers, consumers), its memory planned and its view
// compiled by its device; the constants a device copied released, and what a plan holds
// released again when it is evicted.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "memory_planner.hpp"
#include "session.hpp"
#include "shape_inference.hpp"
#include "status.hpp"

namespace loom::core {

// Which parts read each value, and which part makes it (-1: none, the application's).
Session::PartLinks Session::part_links() const {
  const Graph& g = *model_->graph;
  PartLinks links;
  // Which part reads which value.
  links.readers.resize(g.values.size());
  for (size_t s = 0; s < subgraphs_.size(); ++s)
    for (int k : subgraphs_[s].nodes) {
      for (int id : g.nodes[k].inputs)
        if (id >= 0) links.readers[id].insert(s);
      for (int id : g.nodes[k].implicit_inputs) links.readers[id].insert(s);
    }
  links.producer_part.assign(g.values.size(), -1);
  for (size_t s = 0; s < subgraphs_.size(); ++s)
    for (int k : subgraphs_[s].nodes)
      for (int id : g.nodes[k].outputs)
        if (id >= 0) links.producer_part[id] = static_cast<int>(s);
  return links;
}

// Part `s`'s boundary: its inputs (counted as consumers) with how each arrives, its outputs
// and its FLOPs for p.facts.
void Session::connect_part(size_t s, const PartLinks& links, const std::set<int>& fed,
                           Prepared& p) const {
  const Graph& g = *model_->graph;
  Prepared::Part& part = p.parts[s];
  const Subgraph& sg = subgraphs_[s];
  std::set<int> seen;
  auto is_constant = [&](int id) { return g.values[id].constant && !fed.count(id); };
  for (int k : sg.nodes) {
    auto consider = [&](int id) {
      if (id < 0 || links.producer_part[id] == static_cast<int>(s) || is_constant(id)) return;
      if (seen.insert(id).second) {
        part.inputs.push_back(id);
        p.consumers[id] += 1;
      }
    };
    for (int id : g.nodes[k].inputs) consider(id);
    for (int id : g.nodes[k].implicit_inputs) consider(id);
  }
  bool target_host = device_host_memory(sg.device);
  for (int id : part.inputs) {
    Prepared::Transfer t;
    t.value = id;
    const int producer = links.producer_part[id];
    t.from_device = producer >= 0 ? static_cast<int>(subgraphs_[producer].device) : -1;
    bool source_host = t.from_device < 0 || device_host_memory(t.from_device);
    t.copy = t.from_device != static_cast<int>(sg.device) && !(source_host && target_host);
    // Sequences and optionals stay on the host: nothing to copy, and their facts describe
    // elements, not the value.
    t.bytes = p.facts[id].kind == ValueKind::kTensor
                  ? tensor_bytes(p.facts[id].dtype, p.facts[id].shape)
                  : 0;
    part.transfers.push_back(t);
  }
  for (int k : sg.nodes) part.flops += estimate_flops(g, g.nodes[k], p.facts);
  for (int k : sg.nodes)
    for (int id : g.nodes[k].outputs) {
      if (id < 0) continue;
      bool external = g.values[id].graph_output;
      for (size_t r : links.readers[id])
        if (r != s) external = true;
      if (external) part.outputs.push_back(id);
    }
}

// Part `s`'s memory plan: values made and consumed inside the part, with static shapes. Returns
// p.facts with their arena offsets; sets the part's arena and adds it to the planned peak.
std::vector<ValueFacts> Session::plan_part_memory(size_t s, Prepared& p) const {
  const Graph& g = *model_->graph;
  Prepared::Part& part = p.parts[s];
  const Subgraph& sg = subgraphs_[s];
  std::vector<int> position(g.values.size(), -1);
  std::vector<BufferRequest> requests;
  std::vector<int> request_value;
  std::set<int> boundary(part.outputs.begin(), part.outputs.end());
  for (size_t step = 0; step < sg.nodes.size(); ++step) {
    const Node& node = g.nodes[sg.nodes[step]];
    for (int id : node.outputs) {
      if (id < 0 || boundary.count(id)) continue;
      size_t bytes = tensor_bytes(p.facts[id].dtype, p.facts[id].shape);
      if (bytes == 0) continue;
      position[id] = static_cast<int>(requests.size());
      requests.push_back({bytes, static_cast<int>(step), static_cast<int>(step)});
      request_value.push_back(id);
    }
    auto touch = [&](int id) {
      if (id >= 0 && position[id] >= 0) requests[position[id]].last_use = static_cast<int>(step);
    };
    for (int id : node.inputs) touch(id);
    for (int id : node.implicit_inputs) touch(id);
  }
  MemoryPlan plan = plan_memory(requests);
  std::vector<ValueFacts> facts = p.facts;
  for (size_t r = 0; r < requests.size(); ++r)
    facts[request_value[r]].arena_offset = static_cast<int64_t>(plan.offsets[r]);
  part.arena_bytes = plan.arena_size;
  p.planned_peak += plan.arena_size;
  return facts;
}

namespace {

// What loom_compile_args_t.constant_copied needs: the session, and per view index the value
// id of a constant the device may copy and the session then free.
struct CopiedConstants {
  Session* session;
  std::vector<int> value_of;  // per view index: the releasable value id, or -1
  // free_axis (ABI 1.8): the view's inputs, and the (value id, axis) pairs the device named.
  const loom_graph_t* view = nullptr;
  const std::vector<int>* inputs = nullptr;
  FreeAxes* free_axes = nullptr;
};

}  // namespace

// Part `s`'s view on `facts` (with arena offsets), compiled by its device; on failure releases
// everything `p` compiled so far and throws.
void Session::compile_part(size_t s, const PartLinks& links, const std::set<int>& fed,
                           const std::vector<ValueFacts>& facts, Prepared& p) {
  const Graph& g = *model_->graph;
  Prepared::Part& part = p.parts[s];
  const Subgraph& sg = subgraphs_[s];
  auto is_constant = [&](int id) { return g.values[id].constant && !fed.count(id); };
  ViewOptions vo;
  vo.facts = &facts;
  vo.fed_constants = &fed;
  part.view = std::make_unique<GraphView>(g, sg.nodes, part.inputs, part.outputs, vo);
  // Constants only this part reads may be freed as its device copies them (ABI 1.3), where
  // prepare never runs again.
  CopiedConstants copied{this, std::vector<int>(part.view->get()->num_values, -1)};
  if (single_signature())
    for (int k : sg.nodes)
      for (int id : g.nodes[k].inputs)
        if (id >= 0 && is_constant(id) && links.readers[id].size() == 1 &&
            !g.values[id].graph_output && !g.values[id].graph_input &&
            g.values[id].constant->data) {
          const int32_t index = part.view->index_of(id);
          if (index >= 0) copied.value_of[index] = id;
        }
  loom_compile_args_t args;
  std::memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.graph = part.view->get();
  args.arena_size = part.arena_bytes;
  args.host_user = &copied;
  args.constant_copied = [](void* user, int32_t index) {
    auto* c = static_cast<CopiedConstants*>(user);
    if (index < 0 || static_cast<size_t>(index) >= c->value_of.size() || c->value_of[index] < 0)
      return;
    c->session->release_constant(c->value_of[index]);
    c->value_of[index] = -1;
  };
  copied.view = args.graph;
  copied.inputs = &part.inputs;
  copied.free_axes = &part.free_axes;
  args.free_axis = [](void* user, int32_t input, int32_t axis) {
    auto* c = static_cast<CopiedConstants*>(user);
    // A device's word about an input it does not have, or an axis past its rank, is ignored.
    if (input < 0 || static_cast<size_t>(input) >= c->inputs->size() ||
        static_cast<size_t>(input) >= c->view->num_inputs)
      return;
    const loom_value_info_t& v = *c->view->values[c->view->inputs[input]];
    if (axis < 0 || axis >= v.rank) return;
    const int id = (*c->inputs)[input];
    if (!is_free_axis(*c->free_axes, id, axis)) c->free_axes->emplace_back(id, axis);
  };
  DeviceInstance& dev = *devices_[sg.device];
  loom_status_t* st = dev.api().compile(dev.handle(), &args, &part.exe);
  if (st) {
    release(p);
    throw_if_error(st,
                   "device '" + dev.name() + "' cannot compile its subgraph " + std::to_string(s));
  }
}

std::unique_ptr<Prepared> Session::prepare(const std::vector<ValueFacts>& input_facts,
                                           const std::set<int>& fed) {
  const Graph& g = *model_->graph;
  // Devices were handed constants' bytes that are gone now (release_constant): only when the
  // first compile failed half-way does a single-signature session get here again.
  if (released_constants_)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "this session freed weights its devices had copied and cannot compile again after a "
         "failed first run; create a new session");
  auto p = std::make_unique<Prepared>();
  p->facts = input_facts;
  // A fed default is an input like any other: its declared shape is the initializer's, but the
  // user's tensor wins.
  infer_shapes(g, runtime_.schemas, p->facts);

  const PartLinks links = part_links();
  p->consumers.assign(g.values.size(), 0);
  for (int id : g.outputs) p->consumers[id] += 1;
  p->parts.resize(subgraphs_.size());
  for (size_t s = 0; s < subgraphs_.size(); ++s) {
    connect_part(s, links, fed, *p);
    // Control-flow steps compile nothing here: their bodies are child sessions.
    if (subgraphs_[s].device == host_step_device()) continue;
    const std::vector<ValueFacts> facts = plan_part_memory(s, *p);
    compile_part(s, links, fed, facts, *p);
  }
  return p;
}

bool Session::single_signature() const {
  if (depth_ != 0) return false;
  const Graph& g = *model_->graph;
  for (int id : g.inputs) {
    const Value& v = g.values[id];
    // An overridable initializer may be fed or not, and a fed one may take any shape.
    if (v.constant || v.kind != ValueKind::kTensor || !v.shape.is_static()) return false;
  }
  return true;
}

// Devices that repack weights (onednn's reordered blocked weights) keep their own copy, and
// the core's copy of the original bytes is then dead weight: BERT-base would hold its 418 MiB
// of weights twice. The value stays a constant of known type and shape, without bytes; its
// owner frees them when the application's model no longer shares them.
void Session::release_constant(int id) {
  Value& v = model_->graph->values[id];
  if (!v.constant || !v.constant->data) return;
  auto stripped = std::make_shared<ConstantData>();
  stripped->dtype = v.constant->dtype;
  stripped->dims = v.constant->dims;
  released_constant_bytes_ += v.constant->size;
  ++released_constants_;
  v.constant = std::move(stripped);
}

void Session::release(Prepared& p) {
  for (size_t s = 0; s < p.parts.size(); ++s)
    if (p.parts[s].exe) {
      DeviceInstance& dev = *devices_[subgraphs_[s].device];
      dev.api().release_executable(dev.handle(), p.parts[s].exe);
      p.parts[s].exe = nullptr;
    }
}

}  // namespace loom::core
