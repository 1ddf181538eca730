#include "validate.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <queue>
#include <set>

#include "status.hpp"

namespace loom::core {
namespace {

constexpr size_t kMaxReportedProblems = 20;

std::string domain_label(const std::string& domain) {
  return domain.empty() ? "the default domain (ai.onnx)" : "domain " + domain;
}

// The domains that nodes use, in the main graph and every nested graph.
std::set<std::string> used_domains(const Graph& main) {
  std::set<std::string> domains;
  std::vector<const Graph*> pending{&main};  // a stack, not recursion: nesting depth is data
  while (!pending.empty()) {
    const Graph* g = pending.back();
    pending.pop_back();
    for (const Node& node : g->nodes) {
      domains.insert(node.domain == "ai.onnx" ? std::string() : node.domain);
      for (const Attribute& a : node.attributes)
        if (a.type == LOOM_ATTR_GRAPH && a.graph) pending.push_back(a.graph.get());
    }
  }
  return domains;
}

// What allows a newer opset ("" when nothing does): the caller's option, or when the caller
// left it unset, the environment variable.
std::string newer_opsets_allowed_by(const ValidateOptions& options) {
  if (options.allow_newer_opsets)
    return *options.allow_newer_opsets ? "the application's allow-newer-opsets option" : "";
  const char* env = std::getenv("LOOM_ALLOW_NEWER_OPSETS");
  return env && std::string(env) == "1" ? "LOOM_ALLOW_NEWER_OPSETS=1" : "";
}

// An imported opset newer than every schema of its domain may have changed any op's meaning
// (attributes added, inputs reordered, semantics altered) in ways no registered schema or kernel
// knows, so running it with the older schemas could silently compute something else. The
// default domain counts whenever it is imported (it is the model's opset); other domains only
// when a node uses them, since exporters import ai.onnx.ml and others they never use. Domains
// without any registered schema are left to the unknown-op check.
void check_opset_range(const Model& model, const SchemaRegistry& schemas,
                       const ValidateOptions& options) {
  std::set<std::string> used = used_domains(*model.graph);
  const std::string allowed_by = newer_opsets_allowed_by(options);
  std::vector<std::string> too_new;
  for (const auto& [imported, version] : model.opsets) {
    std::string domain = imported == "ai.onnx" ? std::string() : imported;
    int64_t newest = schemas.newest_version(domain);
    if (newest == 0 || version <= newest || (!domain.empty() && !used.count(domain))) continue;
    std::string what = "the model imports opset " + std::to_string(version) + " of " +
                       domain_label(domain) + ", newer than the newest this runtime supports (" +
                       std::to_string(newest) + ")";
    if (allowed_by.empty()) {
      too_new.push_back(what + ": re-export the model with opset <= " + std::to_string(newest) +
                        " for " + (domain.empty() ? std::string("ai.onnx") : domain));
      continue;
    }
    std::string msg = what + "; accepted because of " + allowed_by +
                      ": it is validated and run with the opset-" + std::to_string(newest) +
                      " schemas, and ops changed after that may compute something else";
    if (options.warn)
      options.warn(msg);
    else
      std::cerr << "loom: warning: validate: " << msg << "\n";
  }
  if (too_new.empty()) return;
  std::string msg;
  for (const std::string& t : too_new) msg += (msg.empty() ? "" : "; ") + t;
  // The variable only helps where the application left the choice to it.
  if (!options.allow_newer_opsets)
    msg += " (LOOM_ALLOW_NEWER_OPSETS=1 accepts it anyway, with a warning)";
  fail(LOOM_ERROR_UNSUPPORTED, msg);
}

class Validator {
 public:
  Validator(Model& model, const SchemaRegistry& schemas) : model_(model), schemas_(schemas) {}

  void run() {
    check_graph(*model_.graph);
    if (!unknown_ops_.empty()) {
      std::string msg = "the model uses ops no installed plugin knows: ";
      size_t i = 0;
      for (const std::string& op : unknown_ops_) {
        if (i++) msg += ", ";
        msg += op;
      }
      msg += " (install a kernel plugin that provides them, or re-export with standard ops)";
      problems_.insert(problems_.begin(), msg);
    }
    if (problems_.empty()) return;
    std::string msg;
    for (size_t i = 0; i < problems_.size() && i < kMaxReportedProblems; ++i) {
      if (i) msg += "; ";
      msg += problems_[i];
    }
    if (problems_.size() > kMaxReportedProblems)
      msg += "; and " + std::to_string(problems_.size() - kMaxReportedProblems) + " more problems";
    throw Error(unknown_ops_.empty() ? LOOM_ERROR_INVALID_MODEL : LOOM_ERROR_UNSUPPORTED, msg);
  }

 private:
  // True if `name` is defined (input, constant, produced, or itself outer) in `g`.
  static bool defines(const Graph& g, const std::string& name) {
    int id = g.find(name);
    if (id < 0) return false;
    const Value& v = g.values[id];
    return v.graph_input || v.constant || v.producer >= 0 || v.outer_scope;
  }

  // Resolves an undefined name of `g` in its ancestors; interns it as an outer-scope value in
  // every graph between, so each level sees it as its own implicit input.
  bool resolve_outer(Graph& g, const std::string& name) {
    if (!g.parent) return false;
    Graph& parent = *g.parent;
    if (!defines(parent, name) && !resolve_outer(parent, name)) return false;
    int pid = parent.intern(name);
    if (!parent.values[pid].graph_input && !parent.values[pid].constant &&
        parent.values[pid].producer < 0)
      parent.values[pid].outer_scope = true;
    return true;
  }

  void check_graph(Graph& g) {
    // Opsets, schemas, nested graphs first: nested graphs may intern outer names in g.
    for (Node& node : g.nodes) {
      auto it = model_.opsets.find(node.domain);
      if (it == model_.opsets.end()) {
        problems_.push_back(node.describe() + " uses domain '" + node.domain +
                            "' which the model does not import (opset_import)");
        continue;
      }
      node.opset = it->second;
      check_schema(node);
      for (Attribute& a : node.attributes)
        if (a.type == LOOM_ATTR_GRAPH && a.graph) check_graph(*a.graph);
    }
    // Every value that is read must come from somewhere. (value_info may name values nothing
    // uses; those are ignored.)
    std::vector<bool> used(g.values.size(), false);
    for (const Node& node : g.nodes)
      for (int vid : node.inputs)
        if (vid >= 0) used[vid] = true;
    for (int vid : g.outputs) used[vid] = true;
    for (size_t id = 0; id < used.size(); ++id) {
      Value& v = g.values[id];
      if (!used[id] || v.graph_input || v.constant || v.producer >= 0 || v.outer_scope) continue;
      if (resolve_outer(g, v.name)) {
        g.values[id].outer_scope = true;
        continue;
      }
      problems_.push_back("value '" + v.name + "'" + (g.parent ? " in " + g.name : "") +
                          " is used but not produced by any node, not a graph input and not an "
                          "initializer");
    }
    collect_implicit_inputs(g);
    topo_sort(g);
  }

  void check_schema(const Node& node) {
    const SchemaEntry* s = schemas_.find(node.domain, node.op_type, node.opset);
    if (!s) {
      std::string dom = node.domain.empty() ? "ai.onnx" : node.domain;
      unknown_ops_.insert(node.op_type + " (domain " + dom + ", opset " +
                          std::to_string(node.opset) + ")");
      return;
    }
    // Trailing omitted optional inputs/outputs do not count against the maximum.
    auto used = [](const std::vector<int>& ids) {
      size_t n = ids.size();
      while (n > 0 && ids[n - 1] < 0) --n;
      return static_cast<int>(n);
    };
    int nin = used(node.inputs), nout = used(node.outputs);
    if (nin < s->min_inputs || (s->max_inputs >= 0 && nin > s->max_inputs))
      problems_.push_back(node.describe() + " has " + std::to_string(nin) + " inputs; opset " +
                          std::to_string(node.opset) + " allows " +
                          range(s->min_inputs, s->max_inputs));
    if (static_cast<int>(node.outputs.size()) < s->min_outputs ||
        (s->max_outputs >= 0 && nout > s->max_outputs))
      problems_.push_back(node.describe() + " has " + std::to_string(node.outputs.size()) +
                          " outputs; opset " + std::to_string(node.opset) + " allows " +
                          range(s->min_outputs, s->max_outputs));
  }

  static std::string range(int lo, int hi) {
    if (hi < 0) return "at least " + std::to_string(lo);
    if (lo == hi) return std::to_string(lo);
    return std::to_string(lo) + " to " + std::to_string(hi);
  }

  static void collect_implicit_inputs(Graph& g) {
    for (Node& node : g.nodes) {
      std::set<int> ids;
      for (const Attribute& a : node.attributes) {
        if (a.type != LOOM_ATTR_GRAPH || !a.graph) continue;
        for (const Value& v : a.graph->values)
          if (v.outer_scope) {
            int id = g.find(v.name);
            if (id >= 0) ids.insert(id);
          }
      }
      node.implicit_inputs.assign(ids.begin(), ids.end());
    }
  }

  void topo_sort(Graph& g) {
    size_t n = g.nodes.size();
    std::vector<std::vector<size_t>> consumers(n);
    std::vector<size_t> pending(n, 0);
    for (size_t i = 0; i < n; ++i) {
      std::set<size_t> deps;
      auto add = [&](int vid) {
        if (vid >= 0 && g.values[vid].producer >= 0) deps.insert(g.values[vid].producer);
      };
      for (int vid : g.nodes[i].inputs) add(vid);
      for (int vid : g.nodes[i].implicit_inputs) add(vid);
      for (size_t d : deps) {
        if (d == i) {
          problems_.push_back(g.nodes[i].describe() + " consumes its own output");
          return;
        }
        consumers[d].push_back(i);
      }
      pending[i] = deps.size();
    }
    // Kahn's algorithm; a min-heap keeps the file's order where the file was already sorted.
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t c : consumers[i])
        if (--pending[c] == 0) ready.push(c);
    }
    if (order.size() != n) {
      std::string names;
      int shown = 0;
      for (size_t i = 0; i < n && shown < 5; ++i)
        if (pending[i] > 0) names += (shown++ ? ", " : "") + g.nodes[i].describe();
      problems_.push_back("the graph has a cycle through " + names);
      return;
    }
    std::vector<Node> sorted;
    sorted.reserve(n);
    std::vector<int> new_index(n);
    for (size_t k = 0; k < n; ++k) {
      new_index[order[k]] = static_cast<int>(k);
      sorted.push_back(std::move(g.nodes[order[k]]));
    }
    g.nodes = std::move(sorted);
    for (Value& v : g.values)
      if (v.producer >= 0) v.producer = new_index[v.producer];
  }

  Model& model_;
  const SchemaRegistry& schemas_;
  std::vector<std::string> problems_;
  std::set<std::string> unknown_ops_;
};

}  // namespace

void validate_model(Model& model, const SchemaRegistry& schemas, const ValidateOptions& options) {
  if (!model.graph) fail(LOOM_ERROR_INVALID_MODEL, "the model has no graph");
  if (model.opsets.empty()) model.opsets[""] = 1;  // a model without opset_import (very old)
  // First and alone: with an unknown opset, every other problem may be a consequence of it.
  check_opset_range(model, schemas, options);
  Validator(model, schemas).run();
}

}  // namespace loom::core
