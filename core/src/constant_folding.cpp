#include "constant_folding.hpp"

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "control_flow.hpp"
#include "graph_view.hpp"
#include "runtime.hpp"
#include "session.hpp"
#include "shape_inference.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

// The session that evaluates the constant nodes folds nothing itself (its graph is all
// constants: it would recurse).
thread_local bool t_evaluating_constants = false;

// Deterministic, tensor-valued ops without subgraphs. Random ops differ per run, Dropout may
// be in training mode, and quantization nodes stay for devices that fuse them with their
// readers.
bool foldable_op(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  static const std::set<std::string> never = {"RandomNormal",
                                              "RandomNormalLike",
                                              "RandomUniform",
                                              "RandomUniformLike",
                                              "Bernoulli",
                                              "Multinomial",
                                              "Dropout",
                                              "QuantizeLinear",
                                              "DequantizeLinear",
                                              "DynamicQuantizeLinear",
                                              "Constant",
                                              "If",
                                              "Loop",
                                              "Scan",
                                              "SplitToSequence",
                                              "ConcatFromSequence"};
  if (never.count(n.op_type) || n.op_type.rfind("Sequence", 0) == 0 ||
      n.op_type.rfind("Optional", 0) == 0)
    return false;
  for (const Attribute& a : n.attributes)
    if (a.graph) return false;
  return n.implicit_inputs.empty() && !n.inputs.empty();
}

// Bytes of a value with a static, fully known tensor shape, or 0 when it has none.
size_t static_bytes(const ValueFacts& f) {
  if (!f.known || f.kind != ValueKind::kTensor || !f.shape.is_static()) return 0;
  size_t elem = dtype_size(f.dtype);
  if (elem == 0) return 0;  // STRING or unknown dtype
  size_t count = 1;
  for (int64_t d : f.shape.dims) {
    if (d == 0) return 0;
    if (count > kMaxFoldedBytes / static_cast<size_t>(d)) return SIZE_MAX;
    count *= static_cast<size_t>(d);
  }
  return count > kMaxFoldedBytes / elem ? SIZE_MAX : count * elem;
}

// The nodes to fold (in order; `taken` counts them): foldable ops whose inputs are all
// constant or folded, with static outputs the graph does not need by name, within the size
// bounds.
std::vector<bool> nodes_to_fold(const Graph& g, const std::vector<ValueFacts>& facts,
                                size_t& taken) {
  std::vector<bool> keep_producer(g.values.size(), false);
  for (int id : g.outputs) keep_producer[id] = true;
  for (const Node& n : g.nodes)
    for (int id : n.implicit_inputs) keep_producer[id] = true;

  std::vector<bool> constant(g.values.size(), false);
  for (size_t id = 0; id < g.values.size(); ++id)
    constant[id] = g.values[id].constant && !g.values[id].graph_input;
  std::vector<bool> take(g.nodes.size(), false);
  size_t total = 0;
  taken = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (!foldable_op(n)) continue;
    bool ok = true;
    for (int id : n.inputs) ok = ok && (id < 0 || constant[id]);
    size_t bytes = 0;
    for (int id : n.outputs) {
      if (id < 0) continue;
      size_t b = static_bytes(facts[id]);
      ok = ok && !keep_producer[id] && b > 0 && b <= kMaxFoldedBytes;
      bytes += ok ? b : 0;
    }
    if (!ok || total + bytes > kMaxFoldedBytesTotal) continue;
    total += bytes;
    take[k] = true;
    ++taken;
    for (int id : n.outputs)
      if (id >= 0) constant[id] = true;
  }
  return take;
}

// The taken nodes as a graph of their own: constants in, needed results out. `results` gets
// the ids in `g` of its outputs, in order.
std::shared_ptr<Graph> constants_graph(const Graph& g, const std::vector<ValueFacts>& facts,
                                       const std::vector<bool>& take, std::vector<int>& results) {
  // What the rest of the graph reads of the taken nodes' results.
  std::vector<bool> needed(g.values.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (take[k]) continue;
    for (int id : g.nodes[k].inputs)
      if (id >= 0) needed[id] = true;
    for (int id : g.nodes[k].implicit_inputs) needed[id] = true;
  }

  auto fg = std::make_shared<Graph>();
  fg->name = g.name + " constants";
  std::vector<int> local(g.values.size(), -1);
  auto value = [&](int id) {
    if (local[id] >= 0) return local[id];
    int l = fg->intern(g.values[id].name);
    Value& v = fg->values[l];
    v.dtype = facts[id].known ? facts[id].dtype : g.values[id].dtype;
    v.shape = facts[id].known ? facts[id].shape : g.values[id].shape;
    if (g.values[id].producer < 0 || !take[g.values[id].producer])
      v.constant = g.values[id].constant;
    return local[id] = l;
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!take[k]) continue;
    Node n = g.nodes[k];
    for (int& id : n.inputs)
      if (id >= 0) id = value(id);
    for (int& id : n.outputs) {
      if (id < 0) continue;
      int original = id;
      id = value(original);
      fg->values[id].producer = static_cast<int>(fg->nodes.size());
      if (needed[original]) {
        fg->values[id].graph_output = true;
        fg->outputs.push_back(id);
        results.push_back(original);
      }
    }
    fg->nodes.push_back(std::move(n));
  }
  return fg;
}

// Runs `fm` (a graph of constants) on cpu; its outputs, or an empty vector when it cannot run
// here (logged).
std::vector<std::shared_ptr<ConstantData>> evaluate_constants(Runtime& runtime,
                                                              const std::shared_ptr<Model>& fm,
                                                              size_t num_results) {
  loom_session_options_t options{};
  options.struct_size = sizeof options;
  options.devices = "cpu";
  options.threads = 1;
  std::vector<std::shared_ptr<ConstantData>> values(num_results);
  try {
    struct Evaluating {  // set for the evaluating session's construction and run only
      Evaluating() { t_evaluating_constants = true; }
      ~Evaluating() { t_evaluating_constants = false; }
    } evaluating;
    Session session(runtime, fm, options);
    session.run_values({}, {}, [&](size_t i, const HostValue& out) {
      if (i >= values.size() || !out.is_tensor()) return;
      auto c = std::make_shared<ConstantData>();
      c->dtype = out.t.dtype;
      c->dims = dims_of(out.t);
      size_t bytes = host_value_bytes(out.t);
      auto storage = std::shared_ptr<uint8_t[]>(new uint8_t[bytes ? bytes : 1]);
      if (bytes) std::memcpy(storage.get(), out.t.data, bytes);
      c->data = storage.get();
      c->size = bytes;
      c->owner = storage;
      values[i] = std::move(c);
    });
  } catch (const std::exception& e) {
    // Not foldable here (no cpu device, or an op it refuses): the nodes stay for the devices,
    // which report any real problem when the session runs them.
    runtime.log(LOOM_LOG_DEBUG, "scheduler",
                std::string("constant nodes left unfolded: ") + e.what());
    return {};
  }
  return values;
}

// The graph without the taken nodes; their needed results (`results`, ids in `g`) are
// initializers holding `values` now.
std::shared_ptr<Graph> graph_without(const Graph& g, const std::vector<bool>& take,
                                     const std::vector<int>& results,
                                     const std::vector<std::shared_ptr<ConstantData>>& values) {
  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (take[k]) continue;
    for (int id : g.nodes[k].outputs)
      if (id >= 0) out->values[id].producer = static_cast<int>(out->nodes.size());
    out->nodes.push_back(g.nodes[k]);
  }
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (take[k])
      for (int id : g.nodes[k].outputs)
        if (id >= 0) out->values[id].producer = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    Value& v = out->values[results[i]];
    v.constant = values[i];
    v.dtype = values[i]->dtype;
    v.shape = Shape{};
    v.shape.rank = static_cast<int32_t>(values[i]->dims.size());
    v.shape.dims = values[i]->dims;
  }
  return out;
}

}  // namespace

std::shared_ptr<Model> fold_constant_nodes(Runtime& runtime, const SchemaRegistry& schemas,
                                           const std::shared_ptr<Model>& model, FoldStats& stats) {
  if (t_evaluating_constants) return model;
  const Graph& g = *model->graph;
  auto inferred = trusted_facts(g, schemas);
  if (!inferred) return model;
  size_t taken = 0;
  const std::vector<bool> take = nodes_to_fold(g, *inferred, taken);
  if (taken == 0) return model;

  std::vector<int> results;  // ids in g, in the order of the constants graph's outputs
  std::shared_ptr<Graph> fg = constants_graph(g, *inferred, take, results);
  if (results.empty()) return model;  // dead code: left for the partitioner to drop

  auto fm = std::make_shared<Model>(*model);
  fm->graph = fg;
  std::vector<std::shared_ptr<ConstantData>> values =
      evaluate_constants(runtime, fm, results.size());
  if (values.empty()) return model;
  for (const auto& v : values)
    if (!v || v->dtype == LOOM_DTYPE_STRING) return model;

  stats.evaluated_nodes += taken;
  auto result = std::make_shared<Model>(*model);
  result->graph = graph_without(g, take, results, values);
  return result;
}

}  // namespace loom::core
