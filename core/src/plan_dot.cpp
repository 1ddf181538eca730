// The plan as a Graphviz digraph (infer-run --dot): one cluster per subgraph, filled with its
// device's color; edges that cross devices are bold and carry the bytes they move.
#include <fmt/format.h>

#include <map>
#include <set>

#include "session.hpp"

namespace loom::core {
namespace {

// Pale fills, readable with black text, one per device in --device order.
constexpr const char* kPalette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
                                    "#fb9a99", "#ffff99", "#8dd3c7", "#d9d9d9"};

std::string dot_escape(const std::string& s, size_t max_chars = 48) {
  std::string out;
  for (char c : s.substr(0, max_chars)) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

std::string human_bytes(double b) {
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

}  // namespace

std::string Session::plan_dot() {
  std::lock_guard<std::mutex> lock(mutex_);
  // A symbolic model's last run's plan; before any run, the plan on the declared shapes.
  if (per_shape_ && !shape_plans_.empty()) return shape_plans_.front().session->plan_dot();
  if (!preview_error_.empty())
    return "digraph loom_plan {\n  label=\"" + dot_escape(model_->path, 200) +
           ": no plan on the declared shapes; each run is planned for its shapes\";\n}\n";
  const Graph& g = *model_->graph;
  std::vector<int> part_of(g.nodes.size(), -1);
  for (size_t s = 0; s < subgraphs_.size(); ++s)
    for (int k : subgraphs_[s].nodes) part_of[k] = static_cast<int>(s);

  std::string d =
      "digraph loom_plan {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
      "fillcolor=white, fontsize=10];\n";
  d += "  label=\"" + dot_escape(model_->path, 200) + ": " + std::to_string(subgraphs_.size()) +
       " subgraphs\";\n  labelloc=t;\n";
  d += dot_legend();
  for (size_t s = 0; s < subgraphs_.size(); ++s) d += dot_cluster(s);
  d += dot_edges(part_of);
  // Graph outputs, like its inputs, live with the application.
  for (int id : g.outputs) {
    const Value& v = g.values[id];
    d += fmt::format("  out{} [label=\"{}\", shape=ellipse, style=solid];\n", id,
                     dot_escape(v.name));
    if (v.producer >= 0) d += fmt::format("  n{} -> out{};\n", v.producer, id);
  }
  d += "}\n";
  return d;
}

// The legend cluster: one entry per device (and the host-step pseudo-device when used).
std::string Session::dot_legend() const {
  std::string d = "  subgraph cluster_legend {\n    label=\"devices\";\n    style=dashed;\n";
  for (size_t i = 0; i < devices_.size(); ++i)
    d += fmt::format("    legend{} [label=\"{}\", fillcolor=\"{}\"];\n", i,
                     dot_escape(device_labels_[i]), kPalette[i % std::size(kPalette)]);
  if (!bodies_.empty())
    d += fmt::format("    legend{} [label=\"{}\", fillcolor=\"{}\"];\n", devices_.size(),
                     dot_escape(device_name(host_step_device())),
                     kPalette[host_step_device() % std::size(kPalette)]);
  d += "  }\n";
  return d;
}

// Subgraph `s` as a cluster filled with its device's color, one box per node.
std::string Session::dot_cluster(size_t s) const {
  const Graph& g = *model_->graph;
  const Subgraph& sg = subgraphs_[s];
  const char* color = kPalette[sg.device % std::size(kPalette)];
  std::string d = fmt::format(
      "  subgraph cluster_{} {{\n    label=\"subgraph {}: {} ({} nodes, {})\";\n"
      "    style=filled;\n    fillcolor=\"{}\";\n",
      s, s, dot_escape(device_name(sg.device)), sg.nodes.size(), format_flops(subgraph_flops(s)),
      color);
  for (int k : sg.nodes) {
    const Node& n = g.nodes[k];
    // A control-flow step lists its bodies' plans (subgraphs per device) under its name.
    std::string bodies;
    if (auto it = bodies_.find(k); it != bodies_.end())
      for (const Body& b : it->second) {
        std::map<std::string, int> per_device;
        for (const Subgraph& bs : b.session->subgraphs_)
          per_device[b.session->device_name(bs.device)]++;
        bodies += "\\n" + dot_escape(b.attribute) + ":";
        for (const auto& [dev, count] : per_device)
          bodies += fmt::format(" {}x{}", dot_escape(dev), count);
      }
    d += fmt::format("    n{} [label=\"{}\\n{}{}\"];\n", k, dot_escape(n.op_type),
                     dot_escape(n.name), bodies);
  }
  d += "  }\n";
  return d;
}

// The edges into every node (and the graph inputs they read); `part_of` maps nodes to
// subgraphs.
std::string Session::dot_edges(const std::vector<int>& part_of) const {
  const Graph& g = *model_->graph;
  auto facts_bytes = [&](int id) {
    static const std::vector<ValueFacts> none;
    return value_bytes(g, id, current_ ? current_->facts : none);
  };
  std::string d;
  // Graph inputs and outputs live with the application.
  std::set<int> inputs_drawn;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    std::set<int> seen;
    auto edge_from = [&](int id) {
      if (id < 0 || !seen.insert(id).second) return;
      const Value& v = g.values[id];
      if (v.constant && !v.graph_input) return;  // weights: part of every view, never moved
      if (v.producer < 0) {
        if (inputs_drawn.insert(id).second)
          d += fmt::format("  v{} [label=\"{}\", shape=ellipse, style=solid];\n", id,
                           dot_escape(v.name));
        bool copy = !device_host_memory(subgraphs_[part_of[k]].device);
        d += fmt::format(
            "  v{} -> n{}{};\n", id, k,
            copy ? fmt::format(" [style=bold, label=\"{}\"]", human_bytes(facts_bytes(id))) : "");
        return;
      }
      int from = v.producer;
      bool cross = part_of[from] != part_of[k];
      size_t da = subgraphs_[part_of[from]].device, db = subgraphs_[part_of[k]].device;
      bool copy = da != db && !(device_host_memory(da) && device_host_memory(db));
      std::string attrs;
      if (copy)
        attrs = fmt::format(" [style=bold, color=red, label=\"{}\"]", human_bytes(facts_bytes(id)));
      else if (cross)
        attrs = " [style=bold]";
      d += fmt::format("  n{} -> n{}{};\n", from, k, attrs);
    };
    for (int id : n.inputs) edge_from(id);
    for (int id : n.implicit_inputs) edge_from(id);
  }
  return d;
}

}  // namespace loom::core
