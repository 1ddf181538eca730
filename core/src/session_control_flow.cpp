// Control-flow steps: an If/Loop/Scan node whose bodies hold work for a device earlier in the
// --device order than the one that would take the whole node (or that no device takes whole)
// runs on the host, each body a child session partitioned like the model's graph with the
// same devices, pins and fallback rules. control_flow.cpp has the ONNX semantics.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "sequence_ops.hpp"
#include "session.hpp"
#include "shape_inference.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

// Whether `node` makes or reads a sequence or optional value, by the inferred kinds.
bool touches_containers(const Graph& g, const Node& node, const std::vector<ValueFacts>& facts) {
  auto container = [&](int id) {
    if (id < 0) return false;
    ValueKind k = static_cast<size_t>(id) < facts.size() && facts[id].known ? facts[id].kind
                                                                            : g.values[id].kind;
    return k != ValueKind::kTensor;
  };
  for (int id : node.inputs)
    if (container(id)) return true;
  for (int id : node.implicit_inputs)
    if (container(id)) return true;
  for (int id : node.outputs)
    if (container(id)) return true;
  return false;
}

bool graph_uses_containers(const Graph& g) {
  for (const Value& v : g.values)
    if (v.kind != ValueKind::kTensor) return true;
  for (const Node& n : g.nodes) {
    if (is_sequence_op(n)) return true;
    for (const Attribute& a : n.attributes)
      if (a.graph && graph_uses_containers(*a.graph)) return true;
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
    int outer = g.find(v.name);
    if (outer >= 0 && g.values[outer].constant && !g.values[outer].graph_input &&
        g.values[outer].constant->data) {
      // A weight of the enclosing graph (an If branch's convolution filters): a constant of
      // the body too, sharing its bytes, so that devices that need constant weights take the
      // node, and nothing is fed per run.
      const Value& c = g.values[outer];
      v.constant = c.constant;
      v.kind = c.kind;
      v.dtype = c.dtype;
      v.shape = c.shape;
      continue;
    }
    v.graph_input = true;
    bg.inputs.push_back(static_cast<int>(id));
    b.outer.push_back(v.name);
    // Typed from what the enclosing graph infers, for placement; the child session checks
    // no extents of its inputs at run time (see Session::run).
    int pid = outer;
    if (pid >= 0 && v.dtype == LOOM_DTYPE_UNDEFINED) {
      const ValueFacts& f = declared[pid];
      v.kind = f.known ? f.kind : g.values[pid].kind;
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
                                             std::map<int, std::vector<Body>>& candidates,
                                             std::vector<std::string>& why) {
  const Graph& g = *model_->graph;
  std::vector<bool> steps(g.nodes.size(), false);
  why.assign(g.nodes.size(), "its bodies are split across devices");
  const char* kContainers = "sequence and optional values are run by the core on the host";
  // A host step with every body of `node` a child session.
  auto make_step = [&](size_t k) {
    steps[k] = true;
    std::vector<Body> bodies;
    for (const Attribute& a : g.nodes[k].attributes)
      if (a.graph) bodies.push_back(make_body(a, declared));
    if (!bodies.empty()) candidates[static_cast<int>(k)] = std::move(bodies);
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    // Sequence and optional values live in the core (devices never see them): nodes that
    // make or read them are host steps, whatever the pins say.
    if (is_sequence_op(node) ||
        (node.op_type == "Identity" && touches_containers(g, node, declared))) {
      make_step(k);
      why[k] = kContainers;
      continue;
    }
    if (!is_host_control_flow(node)) continue;
    // Control flow carrying containers, or with bodies that use them, runs on the host too
    // (pins included): devices cannot take a node whose values they cannot see.
    bool containers = touches_containers(g, node, declared);
    for (const Attribute& a : node.attributes)
      if (a.graph && graph_uses_containers(*a.graph)) containers = true;
    if (containers) {
      make_step(k);
      why[k] = kContainers;
      runtime_.log(LOOM_LOG_INFO, "scheduler",
                   node.describe() +
                       " runs as a control-flow step on the host: it carries "
                       "sequence or optional values");
      continue;
    }
    // A pin keeps the node whole on the device the user named.
    if (pinned[k] >= 0) continue;

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
  auto it = bodies_.find(k);
  std::vector<Body> no_bodies;
  StepRunner runner(*this, it != bodies_.end() ? it->second : no_bodies, by_name);
  const Node& node = g.nodes[k];
  if (is_host_control_flow(node)) return run_control_flow(node, inputs, runner);
  return run_sequence_op(node, inputs, &runner);
}

std::vector<HostValue> Session::run_body(Body& body, const std::vector<HostValue>& formal,
                                         const std::map<std::string, HostValue>& outer) {
  if (formal.size() > body.formal.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, "body '" + body.attribute + "' takes " +
                                          std::to_string(body.formal.size()) + " inputs, given " +
                                          std::to_string(formal.size()));
  std::vector<std::string> names;
  std::vector<HostValue> values;
  for (size_t i = 0; i < formal.size(); ++i) {
    if (!formal[i].present) continue;
    names.push_back(body.formal[i]);
    values.push_back(formal[i]);
  }
  for (const std::string& name : body.outer) {
    auto it = outer.find(name);
    if (it == outer.end() || !it->second.present)
      fail(LOOM_ERROR_INTERNAL, "body '" + body.attribute + "' reads '" + name +
                                    "', which the enclosing graph did not provide");
    names.push_back(name);
    values.push_back(it->second);
  }
  std::vector<HostValue> result(body.graph->outputs.size());
  body.session->run_values(names, values, [&](size_t i, const HostValue& v) {
    // Containers own their elements (or hold the application's, valid for the whole run);
    // a tensor's bytes are the child's, so they are copied into a block the step owns.
    if (!v.is_tensor()) {
      result[i] = v;
      return;
    }
    loom_host_tensor_t h;
    std::memset(&h, 0, sizeof h);
    copy_to_host_tensor(v.t, h);
    auto owner = std::shared_ptr<void>(h.data, std::free);
    result[i] = borrow_host_tensor("body output " + std::to_string(i), h);
    result[i].owner = std::move(owner);
  });
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
