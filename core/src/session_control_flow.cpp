// Control-flow steps: an If/Loop/Scan node whose bodies hold work for a device earlier in the
// --device order than the one that would take the whole node (or that no device takes whole)
// runs on the host, each body a child session partitioned like the model's graph with the
// same devices, pins and fallback rules. control_flow.cpp has the ONNX semantics.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "session.hpp"
#include "shape_inference.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

// Sequence and optional values are not in the ABI: nodes that make or read them keep today's
// whole-node placement on a device that interprets them.
bool is_sequence_op(const std::string& op) {
  return op.find("Sequence") != std::string::npos || op.rfind("Optional", 0) == 0;
}

bool graph_uses_sequences(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (is_sequence_op(n.op_type)) return true;
    for (const Attribute& a : n.attributes)
      if (a.graph && graph_uses_sequences(*a.graph)) return true;
  }
  return false;
}

// Earliest device (in priority order) that takes some node of `graph` or of its nested
// graphs; `devices.size()` when none does.
size_t earliest_device_for_body(const std::vector<std::shared_ptr<DeviceInstance>>& devices,
                                const loom_graph_t& graph) {
  size_t best = devices.size();
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    for (size_t d = 0; d < best; ++d) {
      loom_support_t support;
      std::memset(&support, 0, sizeof support);
      support.struct_size = sizeof support;
      devices[d]->api().supports_node(devices[d]->handle(), &graph, &node, &support);
      if (support.supported) {
        best = d;
        break;
      }
    }
    for (size_t a = 0; a < node.num_attributes; ++a) {
      const loom_attribute_t* attr = node.attributes[a];
      if (attr->type == LOOM_ATTR_GRAPH && attr->graph)
        best = std::min(best, earliest_device_for_body(devices, *attr->graph));
    }
  }
  return best;
}

loom_host_tensor_t to_host_tensor(const HostValue& v) {
  loom_host_tensor_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  h.dtype = v.t.dtype;
  h.rank = v.t.rank;
  for (int32_t d = 0; d < v.t.rank; ++d) h.dims[d] = v.t.dims[d];
  h.data = v.t.data;
  h.byte_size = v.t.byte_size;
  return h;
}

std::string indent_lines(const std::string& text, int indent) {
  std::string pad(static_cast<size_t>(indent), ' '), out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out += pad + text.substr(pos, end - pos) + "\n";
    pos = end + 1;
  }
  return out;
}

}  // namespace

Session::Session(const Session& parent, std::shared_ptr<Model> body, int depth)
    : runtime_(parent.runtime_),
      model_(std::move(body)),
      config_(parent.config_),
      depth_(depth),
      devices_(parent.devices_),
      device_labels_(parent.device_labels_) {
  finish_construction();
}

std::string Session::device_name(size_t d) const {
  return d < devices_.size() ? devices_[d]->name() : "host (control flow)";
}

bool Session::device_host_memory(size_t d) const {
  return d >= devices_.size() || devices_[d]->host_memory();
}

Session::Body Session::make_body(const Attribute& a,
                                 const std::vector<ValueFacts>& declared) const {
  const Graph& g = *model_->graph;
  Body b;
  b.attribute = a.name;
  b.graph = std::make_shared<Graph>(*a.graph);
  Graph& bg = *b.graph;
  bg.parent = nullptr;  // nested graphs inside still resolve names through the original
  for (int id : bg.inputs) b.formal.push_back(bg.values[id].name);
  for (size_t id = 0; id < bg.values.size(); ++id) {
    Value& v = bg.values[id];
    if (!v.outer_scope) continue;
    v.outer_scope = false;
    v.graph_input = true;
    bg.inputs.push_back(static_cast<int>(id));
    b.outer.push_back(v.name);
    // Typed from what the enclosing graph infers, for placement; the child session checks
    // no extents of its inputs at run time (see Session::run).
    int pid = g.find(v.name);
    if (pid >= 0 && v.dtype == LOOM_DTYPE_UNDEFINED) {
      const ValueFacts& f = declared[pid];
      v.dtype = f.known ? f.dtype : g.values[pid].dtype;
      v.shape = f.known ? f.shape : g.values[pid].shape;
    }
  }
  return b;
}

size_t Session::earliest_body_device(const Graph& body) const {
  // Devices decide by dtype and shape: ask them about the body as its child session will,
  // typed by inference (nested views alone carry no types for the body's values).
  std::vector<ValueFacts> facts(body.values.size());
  try {
    infer_shapes(body, runtime_.schemas, facts);
  } catch (const Error&) {
    facts.assign(body.values.size(), ValueFacts{});
  }
  ViewOptions options;
  options.facts = &facts;
  GraphView view(body, options);
  return earliest_device_for_body(devices_, *view.get());
}

std::vector<bool> Session::choose_host_steps(const GraphView& view, const std::vector<int>& pinned,
                                             const std::vector<ValueFacts>& declared,
                                             std::map<int, std::vector<Body>>& candidates) {
  const Graph& g = *model_->graph;
  std::vector<bool> steps(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    // A pin keeps the node whole on the device the user named.
    if (!is_host_control_flow(node) || pinned[k] >= 0) continue;
    bool sequences = false;
    for (const Attribute& a : node.attributes)
      if (a.graph && graph_uses_sequences(*a.graph)) sequences = true;
    auto from_sequence = [&](int id) {
      return id >= 0 && g.values[id].producer >= 0 &&
             is_sequence_op(g.nodes[g.values[id].producer].op_type);
    };
    for (int id : node.inputs) sequences = sequences || from_sequence(id);
    for (int id : node.implicit_inputs) sequences = sequences || from_sequence(id);
    if (sequences) continue;

    size_t whole = devices_.size();
    for (size_t d = 0; d < devices_.size() && whole == devices_.size(); ++d) {
      loom_support_t support;
      std::memset(&support, 0, sizeof support);
      support.struct_size = sizeof support;
      devices_[d]->api().supports_node(devices_[d]->handle(), view.get(), view.node(k), &support);
      if (support.supported) whole = d;
    }
    std::vector<Body> bodies;
    size_t earliest = devices_.size();
    for (const Attribute& a : node.attributes) {
      if (!a.graph) continue;
      bodies.push_back(make_body(a, declared));
      if (whole < devices_.size())
        earliest = std::min(earliest, earliest_body_device(*bodies.back().graph));
    }
    if (whole == devices_.size() || earliest < whole) {
      steps[k] = true;
      candidates[static_cast<int>(k)] = std::move(bodies);
      runtime_.log(LOOM_LOG_INFO, "scheduler",
                   fmt::format("{} runs as a control-flow step on the host: its bodies are "
                               "partitioned across the devices ({})",
                               node.describe(),
                               whole == devices_.size()
                                   ? std::string("no device takes the whole node")
                                   : device_name(earliest) + " takes body nodes, " +
                                         device_name(whole) + " would take the whole node"));
    }
  }
  return steps;
}

void Session::create_bodies(std::map<int, std::vector<Body>>& candidates) {
  const Graph& g = *model_->graph;
  for (auto& [k, bodies] : candidates) {
    const Node& node = g.nodes[k];
    for (Body& b : bodies) {
      auto model = std::make_shared<Model>(*model_);
      model->graph = b.graph;
      model->path =
          model_->path + " / " + (node.name.empty() ? node.op_type : node.name) + "." + b.attribute;
      try {
        b.session = std::unique_ptr<Session>(new Session(*this, model, depth_ + 1));
      } catch (const Error& e) {
        fail(e.code(), node.describe() + ", body '" + b.attribute + "': " + e.what());
      }
    }
    bodies_[k] = std::move(bodies);
  }
}

// The bridge from control_flow.cpp to one step's bodies.
class Session::StepRunner final : public BodyRunner {
 public:
  StepRunner(Session& session, std::vector<Body>& bodies,
             const std::map<std::string, HostValue>& outer)
      : session_(session), bodies_(bodies), outer_(outer) {}
  std::vector<HostValue> run_body(const std::string& attribute,
                                  const std::vector<HostValue>& inputs) override {
    return session_.run_body(find(attribute), inputs, outer_);
  }
  const Graph& body(const std::string& attribute) const override { return *find(attribute).graph; }

 private:
  Body& find(const std::string& attribute) const {
    for (Body& b : bodies_)
      if (b.attribute == attribute) return b;
    fail(LOOM_ERROR_INVALID_ARGUMENT, "the node has no graph attribute '" + attribute + "'");
  }
  Session& session_;
  std::vector<Body>& bodies_;
  const std::map<std::string, HostValue>& outer_;
};

std::vector<HostValue> Session::run_step(int k, const std::vector<HostValue>& inputs,
                                         const std::map<int, HostValue>& outer) {
  const Graph& g = *model_->graph;
  std::map<std::string, HostValue> by_name;
  for (const auto& [id, v] : outer) by_name[g.values[id].name] = v;
  StepRunner runner(*this, bodies_.at(k), by_name);
  return run_control_flow(g.nodes[k], inputs, runner);
}

std::vector<HostValue> Session::run_body(Body& body, const std::vector<HostValue>& formal,
                                         const std::map<std::string, HostValue>& outer) {
  if (formal.size() > body.formal.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, "body '" + body.attribute + "' takes " +
                                          std::to_string(body.formal.size()) + " inputs, given " +
                                          std::to_string(formal.size()));
  std::vector<const char*> names;
  std::vector<loom_host_tensor_t> tensors;
  for (size_t i = 0; i < formal.size(); ++i) {
    if (!formal[i].present) continue;
    names.push_back(body.formal[i].c_str());
    tensors.push_back(to_host_tensor(formal[i]));
  }
  for (const std::string& name : body.outer) {
    auto it = outer.find(name);
    if (it == outer.end() || !it->second.present)
      fail(LOOM_ERROR_INTERNAL, "body '" + body.attribute + "' reads '" + name +
                                    "', which the enclosing graph did not provide");
    names.push_back(name.c_str());
    tensors.push_back(to_host_tensor(it->second));
  }
  size_t count = body.graph->outputs.size();
  std::vector<loom_host_tensor_t> outs(count);
  body.session->run(tensors.size(), names.data(), tensors.data(), count, outs.data());
  std::vector<HostValue> result(count);
  for (size_t i = 0; i < count; ++i) {
    HostValue& r = result[i];
    r.present = true;
    r.owner = std::shared_ptr<void>(outs[i].data, std::free);
    r.t.struct_size = sizeof r.t;
    r.t.dtype = outs[i].dtype;
    r.t.rank = outs[i].rank;
    for (int32_t d = 0; d < outs[i].rank; ++d) r.t.dims[d] = outs[i].dims[d];
    r.t.data = outs[i].data;
    r.t.byte_size = outs[i].byte_size;
  }
  return result;
}

void Session::explain_bodies(int k, std::ostringstream& out, int indent) {
  auto it = bodies_.find(k);
  if (it == bodies_.end()) return;
  const Node& node = model_->graph->nodes[k];
  for (Body& b : it->second) {
    out << std::string(static_cast<size_t>(indent), ' ') << node.describe() << ", body '"
        << b.attribute << "':\n";
    out << indent_lines(b.session->explain(), indent + 2);
  }
}

std::string Session::bodies_json(int k) {
  auto it = bodies_.find(k);
  if (it == bodies_.end()) return "";
  const Node& node = model_->graph->nodes[k];
  std::string j = "{\"node\":\"" + json_escape(node.name) + "\",\"op\":\"" +
                  json_escape(node.op_type) + "\",\"bodies\":[";
  for (size_t i = 0; i < it->second.size(); ++i) {
    Body& b = it->second[i];
    j += (i ? "," : "") + std::string("{\"attribute\":\"") + json_escape(b.attribute) +
         "\",\"plan\":" + b.session->plan_json() + "}";
  }
  return j + "]}";
}

}  // namespace loom::core
