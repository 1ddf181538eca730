// The plan as text (infer-run --explain) and as JSON (--json): what each subgraph runs, on which
// device, with its FLOPs, inputs, transfers and planned memory, and why nodes left their
// preferred device. The Graphviz form is in plan_dot.cpp.
#include <fmt/format.h>

#include <sstream>

#include "session.hpp"

namespace loom::core {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        else
          out += c;
    }
  }
  return out;
}

double Session::subgraph_flops(size_t s) const {
  if (current_) return current_->parts[s].flops;
  double f = 0;
  for (int k : subgraphs_[s].nodes) f += declared_flops_[k];
  return f;
}

std::string Session::explain() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!per_shape_) return explain_locked();
  // The plan of the last run's shapes, which the signature names; before any run, the plan
  // on the declared shapes.
  if (!shape_plans_.empty())
    return "plan for input shapes " + shape_plans_.front().shapes + " (the last run's)\n  " +
           plan_cache_text() + "\n" + shape_plans_.front().session->explain();
  std::string head =
      "plan for " + model_->path + ": inputs with symbolic dimensions (" + symbolic_inputs_text() +
      "); each run is planned for its shapes, and none has run yet\n  " + plan_cache_text() + "\n";
  if (!preview_error_.empty()) return head + "  on the declared shapes: " + preview_error_ + "\n";
  return head + "on the declared shapes:\n" + explain_locked();
}

namespace {

// The "folded:" line: what folding did to the model (nothing when it did nothing).
void explain_folds(std::ostringstream& out, const FoldStats& f) {
  if (f.nodes || f.constant_nodes || f.identities || f.noop_pads || f.fused_pads ||
      f.evaluated_nodes)
    out << "  folded: " << f.nodes << " shape-computation nodes into " << f.constants
        << " constants (static shapes), " << f.constant_nodes
        << " Constant nodes into initializers, " << f.identities
        << " Identity nodes of constants; bypassed " << f.noop_pads
        << " Pad nodes with zero pads, moved " << f.fused_pads
        << " into their Conv/AveragePool; evaluated " << f.evaluated_nodes
        << " nodes of constants on cpu\n";
}

}  // namespace

// Subgraph `s`'s inputs (with where each comes from), outputs, transfers and arena for the
// current plan; adds its copies to `copies` and `copy_bytes`.
void Session::explain_part(size_t s, std::ostringstream& out, size_t& copies,
                           size_t& copy_bytes) const {
  const Graph& g = *model_->graph;
  const Subgraph& sg = subgraphs_[s];
  const Prepared::Part& part = current_->parts[s];
  out << "\n    inputs:";
  if (part.inputs.empty()) out << " (none)";
  size_t part_copies = 0, part_bytes = 0;
  for (const Prepared::Transfer& t : part.transfers) {
    out << "\n      " << g.values[t.value].name << " ["
        << current_->facts[t.value].shape.to_string() << "] from "
        << (t.from_device >= 0 ? device_name(t.from_device)
            : depth_ > 0       ? std::string("the control-flow step")  // a body's input
                               : std::string("the application"));
    if (t.from_device == static_cast<int>(sg.device)) {
      out << " (same device)";
    } else if (t.copy) {
      out << " (copy, " << t.bytes << " bytes)";
      part_copies++;
      part_bytes += t.bytes;
    } else {
      out << " (zero-copy)";
    }
  }
  out << "\n    outputs:";
  for (int id : part.outputs)
    out << " " << g.values[id].name << " [" << current_->facts[id].shape.to_string() << "]";
  out << "\n    transfers in: " << part_copies << " copies, " << part_bytes << " bytes";
  out << "\n    planned arena: " << part.arena_bytes << " bytes";
  copies += part_copies;
  copy_bytes += part_bytes;
}

// The "cost model:" line: each device's GFLOP/s, launch and transfer costs.
void Session::explain_cost_model(std::ostringstream& out) const {
  out << "  cost model:";
  for (size_t d = 0; d < devices_.size(); ++d) {
    const DeviceCost& c = device_costs_[d];
    out << (d ? ";" : "") << " " << device_labels_[d] << " " << c.gflops << " GFLOP/s, launch "
        << c.launch_us << " us";
    if (c.host_memory)
      out << ", host memory";
    else
      out << ", transfers " << c.transfer_gbps << " GB/s + " << c.transfer_latency_us << " us";
  }
  out << "\n";
}

std::string Session::explain_locked() {
  const Graph& g = *model_->graph;
  std::ostringstream out;
  out << "plan for " << model_->path << ": " << g.nodes.size() << " nodes, devices:";
  for (const auto& d : devices_) out << " " << d->name();
  out << "\n";
  explain_folds(out, fold_stats_);
  double total_flops = 0;
  size_t copies = 0, copy_bytes = 0;
  for (size_t s = 0; s < subgraphs_.size(); ++s) {
    const Subgraph& sg = subgraphs_[s];
    std::map<std::string, int> ops;
    for (int k : sg.nodes) ops[g.nodes[k].op_type]++;
    out << "  subgraph " << s << " on " << device_name(sg.device) << ": " << sg.nodes.size()
        << " nodes (";
    bool first = true;
    for (const auto& [op, n] : ops) {
      out << (first ? "" : ", ") << op << " x" << n;
      first = false;
    }
    double flops = subgraph_flops(s);
    total_flops += flops;
    out << "), " << format_flops(flops);
    if (current_) explain_part(s, out, copies, copy_bytes);
    out << "\n";
    // A control-flow step: each body's own plan, indented.
    for (int k : sg.nodes) explain_bodies(k, out, 4);
  }
  out << "  total: " << subgraphs_.size() << " subgraphs, " << format_flops(total_flops);
  if (current_) out << ", " << copies << " copies moving " << copy_bytes << " bytes";
  out << "\n";
  if (current_) out << "  planned peak memory: " << current_->planned_peak << " bytes\n";
  if (released_constants_)
    out << "  released: " << released_constants_ << " constants (" << released_constant_bytes_
        << " bytes) their devices copied at compile\n";
  explain_cost_model(out);
  if (fallback_notes_.empty())
    out << "  every node runs on its first-choice device\n";
  else
    for (const std::string& n : fallback_notes_) out << "  fallback: " << n << "\n";
  return out.str();
}

std::string Session::plan_json() {
  return plan_json(true);
}

std::string Session::plan_json(bool with_cache) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (per_shape_ && !shape_plans_.empty()) {
    // The last run's plan, with the signature and this session's cache in front.
    std::string child = shape_plans_.front().session->plan_json(false);
    return "{\"plan_cache\":" + plan_cache_json() + ",\"signature\":\"" +
           json_escape(shape_plans_.front().shapes) + "\"," + child.substr(1);
  }
  std::string j = "{";
  if (with_cache) j += "\"plan_cache\":" + plan_cache_json() + ",";
  // Before the first run of a symbolic model: the plan on the declared shapes, or why it has
  // none.
  if (per_shape_)
    j += "\"signature\":null," + (preview_error_.empty() ? std::string()
                                                         : "\"declared_shapes_error\":\"" +
                                                               json_escape(preview_error_) + "\",");
  j += "\"devices\":[";
  for (size_t d = 0; d < devices_.size(); ++d)
    j += (d ? "," : "") + std::string("\"") + json_escape(devices_[d]->name()) + "\"";
  j += "],\"cost_model\":" + cost_model_json() + ",\"subgraphs\":[";
  double total_flops = 0;
  for (size_t s = 0; s < subgraphs_.size(); ++s) {
    total_flops += subgraph_flops(s);
    j += (s ? "," : "") + subgraph_json(s);
  }
  j += fmt::format(
      "],\"total_flops\":{:.0f},\"folded_nodes\":{},\"folded_constants\":{},"
      "\"constant_nodes_folded\":{},\"constant_identities_folded\":{},\"noop_pads_bypassed\":{},"
      "\"pads_fused\":{},\"constant_nodes_evaluated\":{}",
      total_flops, fold_stats_.nodes, fold_stats_.constants, fold_stats_.constant_nodes,
      fold_stats_.identities, fold_stats_.noop_pads, fold_stats_.fused_pads,
      fold_stats_.evaluated_nodes);
  j += ",\"fallback\":[";
  for (size_t i = 0; i < fallback_notes_.size(); ++i)
    j += (i ? "," : "") + ("\"" + json_escape(fallback_notes_[i]) + "\"");
  j += fmt::format(
      "],\"planned_peak_bytes\":{},\"constants_released\":{},"
      "\"constant_bytes_released\":{}}}",
      current_ ? current_->planned_peak : 0, released_constants_, released_constant_bytes_);
  return j;
}

// The devices' costs as a JSON array, in --device order.
std::string Session::cost_model_json() const {
  std::string j = "[";
  for (size_t d = 0; d < devices_.size(); ++d) {
    const DeviceCost& c = device_costs_[d];
    j += (d ? "," : "") + fmt::format(
                              "{{\"device\":\"{}\",\"gflops\":{},\"transfer_gbps\":{},"
                              "\"transfer_latency_us\":{},\"launch_us\":{},\"host_memory\":{}}}",
                              json_escape(device_labels_[d]), c.gflops, c.transfer_gbps,
                              c.transfer_latency_us, c.launch_us, c.host_memory);
  }
  return j + "]";
}

// Subgraph `s` as a JSON object: device, nodes, FLOPs, its control-flow bodies, and with a
// current plan its inputs, outputs, transfers and arena.
std::string Session::subgraph_json(size_t s) {
  const Subgraph& sg = subgraphs_[s];
  std::string j =
      fmt::format("{{\"device\":\"{}\",\"nodes\":{},\"flops\":{:.0f}",
                  json_escape(device_name(sg.device)), sg.nodes.size(), subgraph_flops(s));
  if (sg.device == host_step_device()) {
    j += ",\"control_flow\":[";
    bool first = true;
    for (int k : sg.nodes) {
      std::string body = bodies_json(k);
      if (body.empty()) continue;
      j += (first ? "" : ",") + body;
      first = false;
    }
    j += "]";
  }
  if (current_) j += part_json(s);
  return j + "}";
}

// The current plan's part `s`: ",\"inputs\":...,\"arena_bytes\":N" (inside its subgraph's
// object).
std::string Session::part_json(size_t s) const {
  const Graph& g = *model_->graph;
  const Prepared::Part& part = current_->parts[s];
  auto names = [&](const std::vector<int>& ids) {
    std::string r = "[";
    for (size_t i = 0; i < ids.size(); ++i)
      r += (i ? "," : "") + ("\"" + json_escape(g.values[ids[i]].name) + "\"");
    return r + "]";
  };
  std::string j = ",\"inputs\":" + names(part.inputs) + ",\"outputs\":" + names(part.outputs) +
                  ",\"transfers\":[";
  for (size_t i = 0; i < part.transfers.size(); ++i) {
    const Prepared::Transfer& t = part.transfers[i];
    std::string from = t.from_device < 0 ? "application" : device_name(t.from_device);
    j += (i ? "," : "") +
         fmt::format("{{\"value\":\"{}\",\"from\":\"{}\",\"copy\":{},\"bytes\":{}}}",
                     json_escape(g.values[t.value].name), json_escape(from), t.copy, t.bytes);
  }
  j += fmt::format("],\"arena_bytes\":{}", part.arena_bytes);
  return j;
}

}  // namespace loom::core
