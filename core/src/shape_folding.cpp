#include "shape_folding.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "graph_view.hpp"
#include "host_eval.hpp"
#include "shape_inference.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

bool is_constant_node(const Node& n) {
  return n.domain.empty() && n.op_type == "Constant" && n.attributes.size() == 1 &&
         n.outputs.size() == 1 && n.outputs[0] >= 0;
}

// A Constant node's value given as value_int or value_ints. (The other forms, value_float,
// value_string, sparse_value..., stay nodes.)
std::optional<HostTensor> constant_node_value(const Node& n) {
  const Attribute& a = n.attributes[0];
  if (a.name == "value_int" && a.type == LOOM_ATTR_INT)
    return HostTensor{LOOM_DTYPE_INT64, {}, {a.i}};
  if (a.name == "value_ints" && a.type == LOOM_ATTR_INTS &&
      static_cast<int64_t>(a.ints.size()) <= kMaxFoldedElements)
    return HostTensor{LOOM_DTYPE_INT64, {static_cast<int64_t>(a.ints.size())}, a.ints};
  return std::nullopt;
}

struct Pass {
  std::vector<std::optional<HostTensor>> known;  // per value
  std::vector<bool> evaluated;                   // per node: every output known
  // Per value made by a Constant node given as a tensor (any dtype): the tensor, which the
  // value can share as an initializer without a copy.
  std::vector<std::shared_ptr<ConstantData>> constant_tensor;
};

// Evaluates what can be evaluated in one forward pass over `g` with the facts inferred from the
// declared shapes.
Pass evaluate(const Graph& g, const std::vector<ValueFacts>& facts) {
  Pass p;
  p.known.resize(g.values.size());
  p.constant_tensor.resize(g.values.size());
  p.evaluated.assign(g.nodes.size(), false);
  // A value the user may change: graph inputs (their declared static dims are enforced at run
  // time, their data is not known), overridable initializers (even their shape may change) and
  // everything computed from the latter.
  std::vector<bool> shape_varies(g.values.size(), false);
  for (size_t id = 0; id < g.values.size(); ++id) {
    const Value& v = g.values[id];
    shape_varies[id] = v.graph_input && v.constant;
    if (v.constant && !v.graph_input) p.known[id] = host_tensor_from_constant(*v.constant);
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    bool varies = false;
    for (int id : n.inputs) varies = varies || (id >= 0 && shape_varies[id]);
    for (int id : n.implicit_inputs) varies = varies || shape_varies[id];
    for (int id : n.outputs)
      if (id >= 0) shape_varies[id] = varies;

    if (is_constant_node(n)) {
      const Attribute& a = n.attributes[0];
      if (a.name == "value" && a.type == LOOM_ATTR_TENSOR && a.tensor &&
          a.tensor->dtype != LOOM_DTYPE_STRING) {
        p.constant_tensor[n.outputs[0]] = a.tensor;
        p.known[n.outputs[0]] = host_tensor_from_constant(*a.tensor);
        p.evaluated[k] = true;
      } else if (auto c = constant_node_value(n)) {
        p.constant_tensor[n.outputs[0]] = constant_from_host_tensor(*c);
        p.known[n.outputs[0]] = std::move(*c);
        p.evaluated[k] = true;
      }
      continue;
    }
    if (varies) continue;
    // Identity of a constant (exporters emit one per extra reader of a shared weight) shares
    // the constant's data: its readers then see a weight, which devices can prepack, instead
    // of a value computed at run time, whatever the constant's dtype or size.
    if (n.op_type == "Identity" && n.domain.empty() && n.inputs.size() == 1 &&
        n.outputs.size() == 1 && n.inputs[0] >= 0 && n.outputs[0] >= 0) {
      int in = n.inputs[0];
      std::shared_ptr<ConstantData> source = p.constant_tensor[in];
      if (!source && g.values[in].constant && !g.values[in].graph_input)
        source = g.values[in].constant;
      if (source) {
        p.constant_tensor[n.outputs[0]] = source;
        p.known[n.outputs[0]] = p.known[in];
        p.evaluated[k] = true;
        continue;
      }
    }
    if (!host_evaluable_op(n)) continue;
    std::vector<HostInput> inputs(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int id = n.inputs[i];
      inputs[i].present = id >= 0;
      if (id < 0) continue;
      if (p.known[id]) inputs[i].value = &*p.known[id];
      if (facts[id].known) inputs[i].shape = &facts[id].shape;
    }
    std::optional<std::vector<HostTensor>> out = evaluate_host_node(n, inputs);
    if (!out || out->size() != n.outputs.size()) continue;
    bool consistent = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      int id = n.outputs[i];
      // A result that contradicts the model's declared type is left for a device to report.
      if (id < 0 ||
          (g.values[id].dtype != LOOM_DTYPE_UNDEFINED && g.values[id].dtype != (*out)[i].dtype))
        consistent = false;
    }
    if (!consistent) continue;
    for (size_t i = 0; i < n.outputs.size(); ++i) p.known[n.outputs[i]] = std::move((*out)[i]);
    p.evaluated[k] = true;
  }
  return p;
}

// One round: evaluate, then rebuild the graph without the nodes whose results became constants.
// nullptr when nothing folds.
std::shared_ptr<Graph> fold_once(const Graph& g, const SchemaRegistry& schemas, FoldStats& stats) {
  auto facts = trusted_facts(g, schemas);
  if (!facts) return nullptr;  // the session reports inference problems when it prepares
  Pass p = evaluate(g, *facts);

  // Values whose producer must stay: graph outputs, and what nested graphs read by name.
  std::vector<bool> keep_producer(g.values.size(), false);
  for (int id : g.outputs) keep_producer[id] = true;
  for (const Node& n : g.nodes)
    for (int id : n.implicit_inputs) keep_producer[id] = true;
  std::vector<bool> remove(g.nodes.size(), false);
  size_t folded = 0, constants = 0, identities = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!p.evaluated[k]) continue;
    bool removable = true;
    for (int id : g.nodes[k].outputs) removable = removable && !keep_producer[id];
    remove[k] = removable;
    if (!removable) continue;
    if (is_constant_node(g.nodes[k]))
      ++constants;
    else if (g.nodes[k].op_type == "Identity" && p.constant_tensor[g.nodes[k].outputs[0]])
      ++identities;
    else
      ++folded;
  }
  if (folded == 0 && constants == 0 && identities == 0) return nullptr;

  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!remove[k]) {
      for (int id : g.nodes[k].outputs)
        if (id >= 0) out->values[id].producer = static_cast<int>(out->nodes.size());
      out->nodes.push_back(g.nodes[k]);
      continue;
    }
    for (int id : g.nodes[k].outputs) {
      Value& v = out->values[id];
      v.constant =
          p.constant_tensor[id] ? p.constant_tensor[id] : constant_from_host_tensor(*p.known[id]);
      v.dtype = v.constant->dtype;
      v.shape = Shape{};
      v.shape.rank = static_cast<int32_t>(v.constant->dims.size());
      v.shape.dims = v.constant->dims;
      v.producer = -1;
      if (!p.constant_tensor[id]) ++stats.constants;
    }
  }
  stats.nodes += folded;
  stats.constant_nodes += constants;
  stats.identities += identities;
  return out;
}

// The pads of a constant-mode Pad that pads with zeros, when they are known: the `pads`
// attribute before opset 11, a constant input since; nullopt otherwise (another mode or value,
// axes given, pads computed at run time).
std::optional<std::vector<int64_t>> zero_pads(const Graph& g, const Node& n) {
  if (!n.domain.empty() || n.op_type != "Pad" || n.inputs.empty() || n.inputs[0] < 0 ||
      n.outputs.size() != 1 || n.outputs[0] < 0)
    return std::nullopt;
  const Attribute* mode = n.find_attribute("mode");
  if (mode && mode->s != "constant") return std::nullopt;
  auto constant_input = [&](size_t i) -> const ConstantData* {
    if (i >= n.inputs.size() || n.inputs[i] < 0) return nullptr;
    const Value& v = g.values[n.inputs[i]];
    return v.constant && !v.graph_input ? v.constant.get() : nullptr;
  };
  std::vector<int64_t> pads;
  if (n.opset < 11) {
    const Attribute* p = n.find_attribute("pads");
    const Attribute* value = n.find_attribute("value");
    if (!p || (value && value->f != 0.f)) return std::nullopt;
    pads = p->ints;
  } else {
    const ConstantData* p = constant_input(1);
    if (!p || n.inputs.size() > 3) return std::nullopt;  // an axes input: not handled
    auto t = host_tensor_from_constant(*p);
    if (!t) return std::nullopt;
    pads = t->data;
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
      const ConstantData* value = constant_input(2);
      if (!value || value->size == 0 || !value->data) return std::nullopt;
      for (size_t b = 0; b < value->size; ++b)
        if (static_cast<const uint8_t*>(value->data)[b] != 0) return std::nullopt;  // +0 only
    }
  }
  if (pads.empty() || pads.size() % 2 != 0) return std::nullopt;
  return pads;
}

bool all_zero(const std::vector<int64_t>& v) {
  for (int64_t p : v)
    if (p != 0) return false;
  return true;
}

// The pads attribute `n` gets when it absorbs the zero padding `pads` of its input (a Conv, or
// an AveragePool without pads of its own, which then counts the padding zeros as the explicit
// Pad did), or nullopt: pads on the batch or channel axis, negative pads, auto_pad, ceil_mode.
std::optional<std::vector<int64_t>> absorbed_pads(const Graph& g, const Node& n,
                                                  const std::vector<int64_t>& pads) {
  if (!n.domain.empty() || (n.op_type != "Conv" && n.op_type != "AveragePool")) return std::nullopt;
  size_t rank = pads.size() / 2;
  if (rank < 3 || pads[0] != 0 || pads[1] != 0 || pads[rank] != 0 || pads[rank + 1] != 0)
    return std::nullopt;
  // The pads must describe the reader's input: as many spatial axes as its kernel.
  size_t kernel_rank = 0;
  if (const Attribute* k = n.find_attribute("kernel_shape")) {
    kernel_rank = k->ints.size();
  } else if (n.op_type == "Conv" && n.inputs.size() > 1 && n.inputs[1] >= 0 &&
             g.values[n.inputs[1]].constant) {
    kernel_rank = g.values[n.inputs[1]].constant->dims.size() - 2;
  }
  if (kernel_rank != rank - 2) return std::nullopt;
  for (int64_t p : pads)
    if (p < 0) return std::nullopt;
  const Attribute* auto_pad = n.find_attribute("auto_pad");
  if (auto_pad && auto_pad->s != "NOTSET") return std::nullopt;
  size_t spatial = rank - 2;
  std::vector<int64_t> own(2 * spatial, 0);
  if (const Attribute* p = n.find_attribute("pads")) {
    if (p->ints.size() != own.size()) return std::nullopt;
    own = p->ints;
  }
  if (n.op_type == "AveragePool") {
    if (n.opset < 7) return std::nullopt;  // no count_include_pad before opset 7
    const Attribute* ceil = n.find_attribute("ceil_mode");
    if (!all_zero(own) || (ceil && ceil->i != 0)) return std::nullopt;
  }
  for (size_t i = 0; i < spatial; ++i) {
    own[i] += pads[2 + i];
    own[spatial + i] += pads[rank + 2 + i];
  }
  return own;
}

// Node `n`'s attribute `name`, added if missing, with `type`.
Attribute& attribute_to_set(Node& n, const std::string& name, loom_attr_type_t type) {
  for (Attribute& a : n.attributes)
    if (a.name == name) {
      a.type = type;
      return a;
    }
  n.attributes.emplace_back();
  n.attributes.back().name = name;
  n.attributes.back().type = type;
  return n.attributes.back();
}

// `g` without the Pads that do nothing or that their one reader can do itself, or nullptr when
// there are none. A Pad whose pads are all zero (PyTorch puts one before each of DenseNet's
// transition AveragePools) is bypassed: its readers read its input. A zero-value constant Pad
// of the spatial axes read only by a Conv, or by an AveragePool without pads of its own
// (Inception's avg_pool2d(padding=1) exports as Pad + AveragePool), moves into that node's
// pads (ONNX Runtime's PadFusion). Either way a device without Pad no longer cuts the graph.
std::shared_ptr<Graph> simplify_pads(const Graph& g, FoldStats& stats) {
  std::vector<bool> keep_producer(g.values.size(), false);
  for (int id : g.outputs) keep_producer[id] = true;
  for (const Node& n : g.nodes)
    for (int id : n.implicit_inputs) keep_producer[id] = true;
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int id : g.nodes[k].inputs)
      if (id >= 0) readers[id].push_back(static_cast<int>(k));
  std::vector<int> source(g.values.size());
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<int>(i);
  std::vector<bool> bypass(g.nodes.size(), false);
  std::vector<std::optional<std::vector<int64_t>>> new_pads(g.nodes.size());
  size_t noop = 0, fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    auto pads = zero_pads(g, n);
    if (!pads || keep_producer[n.outputs[0]]) continue;
    if (all_zero(*pads)) {
      source[n.outputs[0]] = source[n.inputs[0]];
      bypass[k] = true;
      ++noop;
      continue;
    }
    const std::vector<int>& r = readers[n.outputs[0]];
    if (r.size() != 1 || new_pads[r[0]]) continue;
    const Node& reader = g.nodes[r[0]];
    if (std::count(reader.inputs.begin(), reader.inputs.end(), n.outputs[0]) != 1 ||
        reader.inputs[0] != n.outputs[0])
      continue;  // the padded tensor must be the data input, and only that
    auto merged = absorbed_pads(g, reader, *pads);
    if (!merged) continue;
    new_pads[r[0]] = std::move(merged);
    source[n.outputs[0]] = source[n.inputs[0]];
    bypass[k] = true;
    ++fused;
  }
  if (noop + fused == 0) return nullptr;
  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (bypass[k]) {
      out->values[g.nodes[k].outputs[0]].producer = -1;
      continue;
    }
    Node n = g.nodes[k];
    for (int& id : n.inputs)
      if (id >= 0) id = source[id];
    if (new_pads[k]) {
      attribute_to_set(n, "pads", LOOM_ATTR_INTS).ints = *new_pads[k];
      if (n.op_type == "AveragePool") attribute_to_set(n, "count_include_pad", LOOM_ATTR_INT).i = 1;
    }
    for (int id : n.outputs)
      if (id >= 0) out->values[id].producer = static_cast<int>(out->nodes.size());
    out->nodes.push_back(std::move(n));
  }
  stats.noop_pads += noop;
  stats.fused_pads += fused;
  return out;
}

// `g` with the optional outputs nothing reads omitted (Dropout's mask, MaxPool's Indices), or
// nullptr when there are none. PyTorch exports Dropout with a mask output even in inference;
// a device that runs Dropout as a view but has no bool tensors refused the node for it (every
// attention block of Swin-T fell back to cpu there).
std::shared_ptr<Graph> omit_unread_outputs(const Graph& g, FoldStats& stats) {
  std::vector<bool> read(g.values.size(), false);
  for (int id : g.outputs) read[id] = true;
  for (const Node& n : g.nodes) {
    for (int id : n.inputs)
      if (id >= 0) read[id] = true;
    for (int id : n.implicit_inputs) read[id] = true;
  }
  std::shared_ptr<Graph> out;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!n.domain.empty() || (n.op_type != "Dropout" && n.op_type != "MaxPool") ||
        n.outputs.size() < 2 || n.outputs[1] < 0 || read[n.outputs[1]])
      continue;
    if (!out) out = std::make_shared<Graph>(g);
    out->values[n.outputs[1]].producer = -1;
    out->nodes[k].outputs[1] = -1;
    ++stats.omitted_outputs;
  }
  return out;
}

}  // namespace

std::optional<std::vector<ValueFacts>> trusted_facts(const Graph& g,
                                                     const SchemaRegistry& schemas) {
  // Only shapes inference derives from graph inputs, initializers and op semantics are trusted:
  // an extent merely declared in value_info for an intermediate would fold into a wrong
  // constant whenever the declaration is wrong, so inference runs without those declarations.
  Graph trusted = g;
  for (Value& v : trusted.values)
    if (v.producer >= 0 && !v.constant) v.shape = Shape{};
  std::vector<ValueFacts> facts(g.values.size());
  try {
    infer_shapes(trusted, schemas, facts);
  } catch (const Error&) {
    return std::nullopt;
  }
  return facts;
}

std::shared_ptr<Model> fold_shape_computations(const std::shared_ptr<Model>& model,
                                               const SchemaRegistry& schemas, FoldStats& stats) {
  std::shared_ptr<Graph> graph = model->graph;
  // A folded Reshape shape makes the reshaped tensor's shape static, which may let a later Shape
  // of it fold: repeat while rounds fold something (each removes nodes, so this ends; the bound
  // only caps the work on pathological graphs).
  for (int round = 0; round < kMaxFoldRounds; ++round) {
    std::shared_ptr<Graph> next = fold_once(*graph, schemas, stats);
    if (!next) break;
    graph = std::move(next);
  }
  if (std::shared_ptr<Graph> simplified = simplify_pads(*graph, stats))
    graph = std::move(simplified);
  if (std::shared_ptr<Graph> trimmed = omit_unread_outputs(*graph, stats))
    graph = std::move(trimmed);
  if (graph == model->graph) return model;
  auto out = std::make_shared<Model>(*model);
  out->graph = std::move(graph);
  return out;
}

}  // namespace loom::core
