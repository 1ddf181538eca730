#include "partitioner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace loom::core {
namespace {

// Where a value lives before anyone computes it, and where graph outputs must end up: the
// application's memory, which costs like a host-memory device.
const DeviceCost kHost{0, 0, 0, 0, true};

struct Edges {
  std::vector<int> producer;                // per value: node, -1 for graph inputs/constants
  std::vector<std::vector<int>> consumers;  // per value: nodes reading it
  std::vector<std::vector<int>> preds;      // per node: producer nodes, no duplicates
};

Edges build_edges(const PartitionProblem& p) {
  Edges e;
  e.producer.assign(p.num_values, -1);
  e.consumers.resize(p.num_values);
  e.preds.resize(p.nodes.size());
  for (size_t k = 0; k < p.nodes.size(); ++k)
    for (int v : p.nodes[k].outputs)
      if (v >= 0) e.producer[v] = static_cast<int>(k);
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    std::set<int> seen;
    for (int v : p.nodes[k].inputs) {
      if (v < 0) continue;
      if (e.consumers[v].empty() || e.consumers[v].back() != static_cast<int>(k))
        e.consumers[v].push_back(static_cast<int>(k));
      int u = e.producer[v];
      if (u >= 0 && u != static_cast<int>(k) && seen.insert(u).second) e.preds[k].push_back(u);
    }
  }
  return e;
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
};

std::string join_reasons(const PartitionProblem& p, const PartitionNode& n, size_t up_to) {
  std::string r;
  for (size_t d = 0; d < up_to && d < p.devices.size(); ++d) {
    std::string why = n.supported[d] ? "prefers a host-memory device for shape computations"
                                     : (n.reasons[d].empty() ? "not supported" : n.reasons[d]);
    r += (r.empty() ? "" : "; ") + p.device_names[d] + ": " + why;
  }
  return r;
}

// Step 1: every node on the first device that takes it (its pin, if any; host-memory devices
// first for shape computations).
void place_nodes(const PartitionProblem& p, Partition& out, std::vector<std::string>& notes,
                 std::vector<bool>& locked) {
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const PartitionNode& n = p.nodes[k];
    if (n.pinned >= 0) {
      size_t d = static_cast<size_t>(n.pinned);
      if (d >= p.devices.size() || !n.supported[d]) {
        out.unsupported.push_back(fmt::format(
            "{} (pinned to {}, which does not take it: {})", n.label,
            d < p.device_names.size() ? p.device_names[d] : "?",
            d < n.reasons.size() && !n.reasons[d].empty() ? n.reasons[d] : "not supported"));
        continue;
      }
      out.node_device[k] = n.pinned;
      locked[k] = true;
      if (d > 0)
        notes[k] = fmt::format("{} runs on {} (pinned by a placement)", n.label, p.device_names[d]);
      continue;
    }
    int first = -1, chosen = -1;
    for (size_t d = 0; d < p.devices.size(); ++d)
      if (n.supported[d]) {
        if (first < 0) first = static_cast<int>(d);
        if (!n.host_preferred || p.devices[d].host_memory) {
          chosen = static_cast<int>(d);
          break;
        }
      }
    if (chosen < 0) chosen = first;
    if (chosen < 0) {
      out.unsupported.push_back(
          fmt::format("{} ({})", n.label, join_reasons(p, n, p.devices.size())));
      continue;
    }
    out.node_device[k] = chosen;
    if (n.host_preferred && chosen != first) locked[k] = true;
    if (chosen > 0)
      notes[k] = fmt::format("{} runs on {} ({})", n.label, p.device_names[chosen],
                             join_reasons(p, n, static_cast<size_t>(chosen)));
  }
}

// The islands of the current placement: connected groups of nodes on one device, each listed
// under its union-find root (the other entries are empty).
std::vector<std::vector<int>> islands_of(const Edges& e, const std::vector<int>& dev) {
  const size_t n = dev.size();
  UnionFind uf(n);
  for (size_t k = 0; k < n; ++k)
    for (int u : e.preds[k])
      if (dev[u] == dev[k]) uf.parent[uf.find(u)] = uf.find(static_cast<int>(k));
  std::vector<std::vector<int>> islands(n);
  for (size_t k = 0; k < n; ++k)
    islands[uf.find(static_cast<int>(k))].push_back(static_cast<int>(k));
  return islands;
}

// Values crossing an island's boundary, with the devices on the other side, and its FLOPs.
struct IslandBoundary {
  std::vector<std::pair<int, int>> incoming;            // value, source device (-1 host)
  std::vector<std::pair<int, std::set<int>>> outgoing;  // value, reader devices (-1 host)
  std::set<int> neighbours;
  double flops = 0;
};

IslandBoundary island_boundary(const PartitionProblem& p, const Edges& e,
                               const std::vector<int>& dev, const std::vector<int>& island) {
  IslandBoundary b;
  std::set<int> inside(island.begin(), island.end());
  std::set<int> seen_in;
  for (int k : island) {
    b.flops += p.nodes[k].flops;
    for (int v : p.nodes[k].inputs) {
      if (v < 0 || (e.producer[v] >= 0 && inside.count(e.producer[v])) || !seen_in.insert(v).second)
        continue;
      int src = e.producer[v] >= 0 ? dev[e.producer[v]] : -1;
      b.incoming.push_back({v, src});
      if (src >= 0) b.neighbours.insert(src);
    }
    for (int v : p.nodes[k].outputs) {
      if (v < 0) continue;
      std::set<int> readers;
      for (int c : e.consumers[v])
        if (!inside.count(c)) readers.insert(dev[c]);
      if (p.graph_output[v]) readers.insert(-1);
      for (int r : readers)
        if (r >= 0) b.neighbours.insert(r);
      if (!readers.empty()) b.outgoing.push_back({v, readers});
    }
  }
  return b;
}

// Estimated seconds of an island with boundary `b` on device `d` (launch counted at `home`).
double island_seconds(const PartitionProblem& p, const IslandBoundary& b, int home, int d) {
  const DeviceCost& c = p.devices[d];
  double s = compute_seconds(c, b.flops) + (d == home ? c.launch_us * 1e-6 : 0);
  for (auto [v, src] : b.incoming)
    if (src != d) s += transfer_seconds(src < 0 ? kHost : p.devices[src], c, p.value_bytes[v]);
  for (const auto& [v, readers] : b.outgoing)
    for (int r : readers)
      if (r != d) s += transfer_seconds(c, r < 0 ? kHost : p.devices[r], p.value_bytes[v]);
  return s;
}

// Moves `island` to the neighbouring device where it costs least, if that beats its own;
// returns whether it moved.
bool move_island(const PartitionProblem& p, const Edges& e, const std::vector<int>& island,
                 Partition& out, std::vector<std::string>& notes) {
  std::vector<int>& dev = out.node_device;
  const int home = dev[island.front()];
  const IslandBoundary b = island_boundary(p, e, dev, island);
  double home_cost = island_seconds(p, b, home, home);
  // Only an island whose transfers cost more than its compute may leave the device that
  // was preferred for it (islands on host-memory devices, with no transfers, never move).
  const double home_compute_s = compute_seconds(p.devices[home], b.flops);
  const double home_transfer_s = home_cost - home_compute_s - p.devices[home].launch_us * 1e-6;
  if (home_transfer_s <= home_compute_s) return false;
  int best = home;
  double best_cost = home_cost;
  for (int d : b.neighbours) {
    if (d == home) continue;
    bool all =
        std::all_of(island.begin(), island.end(), [&](int k) { return p.nodes[k].supported[d]; });
    if (!all) continue;
    double c = island_seconds(p, b, home, d);
    if (c < best_cost * (1 - 1e-9)) {
      best = d;
      best_cost = c;
    }
  }
  if (best == home) return false;
  double home_compute = compute_seconds(p.devices[home], b.flops);
  double best_compute = compute_seconds(p.devices[best], b.flops);
  for (int k : island) {
    dev[k] = best;
    notes[k] = fmt::format(
        "{} runs on {} instead of {}: its island of {} node{} costs an estimated {:.1f} us "
        "there "
        "({:.1f} us of compute) against {:.1f} us on {} ({:.1f} us of compute, the rest "
        "transfers "
        "and launch)",
        p.nodes[k].label, p.device_names[best], p.device_names[home], island.size(),
        island.size() == 1 ? "" : "s", best_cost * 1e6, best_compute * 1e6, home_cost * 1e6,
        p.device_names[home], home_compute * 1e6);
  }
  return true;
}

// Step 2: an island (a connected group of nodes on one device) whose boundary transfers cost
// more than it saves in compute joins a neighbouring device that supports all of it. Each
// move lowers the plan's total estimated time, so the loop ends.
void move_costly_islands(const PartitionProblem& p, const Edges& e, Partition& out,
                         std::vector<std::string>& notes, const std::vector<bool>& locked) {
  const size_t n = p.nodes.size();
  for (size_t round = 0; round < 4 * n + 4; ++round) {
    std::vector<std::vector<int>> islands = islands_of(e, out.node_device);
    bool moved = false;
    for (size_t root = 0; root < n && !moved; ++root) {
      const std::vector<int>& island = islands[root];
      if (island.empty()) continue;
      if (std::any_of(island.begin(), island.end(), [&](int k) { return locked[k]; })) continue;
      moved = move_island(p, e, island, out, notes);
    }
    if (!moved) return;
  }
}

// Step 3: groups. Every node starts alone; two groups on one device merge when no path leads
// from one to the other through a third group (such a merge would make the subgraph graph
// cyclic: the merged group would wait for a group that waits for it).
class Grouping {
 public:
  Grouping(const PartitionProblem& p, const Edges& e, const std::vector<int>& dev)
      : dev_(dev),
        rep_(p.nodes.size()),
        succ_(p.nodes.size()),
        pred_(p.nodes.size()),
        lo_(p.nodes.size()),
        mark_(p.nodes.size(), 0) {
    for (size_t k = 0; k < p.nodes.size(); ++k) {
      rep_.parent[k] = static_cast<int>(k);
      lo_[k] = static_cast<int>(k);
      for (int u : e.preds[k]) {
        succ_[u].insert(static_cast<int>(k));
        pred_[k].insert(u);
      }
    }
  }

  int find(int k) { return rep_.find(k); }

  // Merges the groups of nodes a and b when that keeps the graph of groups acyclic.
  bool try_merge(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b || dev_[a] != dev_[b]) return false;
    if (reaches_indirectly(a, b) || reaches_indirectly(b, a)) return false;
    rep_.parent[b] = a;
    lo_[a] = std::min(lo_[a], lo_[b]);
    for (int x : succ_[b]) {
      pred_[x].erase(b);
      if (x != a) {
        pred_[x].insert(a);
        succ_[a].insert(x);
      }
    }
    for (int x : pred_[b]) {
      succ_[x].erase(b);
      if (x != a) {
        succ_[x].insert(a);
        pred_[a].insert(x);
      }
    }
    succ_[a].erase(b);
    pred_[a].erase(b);
    succ_[b].clear();
    pred_[b].clear();
    return true;
  }

  const std::set<int>& succ(int g) const { return succ_[g]; }
  int lo(int g) const { return lo_[g]; }

 private:
  // A path from group `from` to group `to` other than a direct edge. (Groups are not
  // intervals of the node order, so index-based pruning would be unsound: a group may hold an
  // early node feeding `to` and a late node fed by `from`.)
  bool reaches_indirectly(int from, int to) {
    ++stamp_;
    std::vector<int> stack;
    for (int s : succ_[from])
      if (s != to) stack.push_back(s);
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (x == to) return true;
      if (mark_[x] == stamp_) continue;
      mark_[x] = stamp_;
      for (int s : succ_[x]) stack.push_back(s);
    }
    return false;
  }

  const std::vector<int>& dev_;
  UnionFind rep_;
  std::vector<std::set<int>> succ_, pred_;
  std::vector<int> lo_;  // first node of each group, for a stable order
  std::vector<int> mark_;
  int stamp_ = 0;
};

void group_nodes(const PartitionProblem& p, const Edges& e, Partition& out) {
  const size_t n = p.nodes.size();
  Grouping groups(p, e, out.node_device);
  // Connected merges first, along data edges in topological order: the largest connected
  // same-device groups that stay acyclic.
  for (size_t k = 0; k < n; ++k)
    for (int u : e.preds[k]) groups.try_merge(u, static_cast<int>(k));
  // Then siblings: same-device groups that read the same value or feed the same node (the
  // two arms of a diamond) run as one subgraph when that stays acyclic.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t v = 0; v < p.num_values; ++v)
      for (size_t i = 1; i < e.consumers[v].size(); ++i)
        changed |= groups.try_merge(e.consumers[v][0], e.consumers[v][i]) ||
                   groups.try_merge(e.consumers[v][i - 1], e.consumers[v][i]);
    for (size_t k = 0; k < n; ++k)
      for (size_t i = 1; i < e.preds[k].size(); ++i)
        for (size_t j = 0; j < i; ++j) changed |= groups.try_merge(e.preds[k][j], e.preds[k][i]);
  }
  // Order: Kahn's algorithm over groups. Among the ready groups, one on the device that ran
  // last goes first (fewer device switches), else the one whose first node is earliest
  // (deterministic, close to the model's own order).
  std::vector<std::vector<int>> members(n);
  for (size_t k = 0; k < n; ++k)
    members[groups.find(static_cast<int>(k))].push_back(static_cast<int>(k));
  std::vector<int> indegree(n, 0);
  for (size_t g = 0; g < n; ++g)
    if (!members[g].empty())
      for (int s : groups.succ(static_cast<int>(g))) indegree[s]++;
  std::set<std::pair<int, int>> ready;  // first node, group
  for (size_t g = 0; g < n; ++g)
    if (!members[g].empty() && indegree[g] == 0)
      ready.insert({groups.lo(static_cast<int>(g)), static_cast<int>(g)});
  int last_device = -1;
  while (!ready.empty()) {
    auto pick = ready.begin();
    for (auto it = ready.begin(); it != ready.end(); ++it)
      if (out.node_device[it->second] == last_device) {
        pick = it;
        break;
      }
    int g = pick->second;
    ready.erase(pick);
    last_device = out.node_device[g];
    // Groups adjacent in this order cannot have a third group between them, so two in a row
    // on one device merge without creating a cycle.
    if (!out.subgraphs.empty() && out.subgraphs.back().device == static_cast<size_t>(last_device)) {
      std::vector<int>& nodes = out.subgraphs.back().nodes;
      nodes.insert(nodes.end(), members[g].begin(), members[g].end());
      std::sort(nodes.begin(), nodes.end());  // node indices are a topological order
    } else {
      out.subgraphs.push_back({static_cast<size_t>(last_device), members[g]});
    }
    for (int s : groups.succ(g))
      if (--indegree[s] == 0) ready.insert({groups.lo(s), s});
  }
}

}  // namespace

Partition partition_graph(const PartitionProblem& p) {
  Partition out;
  const size_t n = p.nodes.size();
  out.node_device.assign(n, -1);
  std::vector<std::string> notes(n);
  std::vector<bool> locked(n, false);
  place_nodes(p, out, notes, locked);
  if (!out.unsupported.empty()) return out;
  Edges e = build_edges(p);
  move_costly_islands(p, e, out, notes, locked);
  group_nodes(p, e, out);
  // The greedy merges can, on tangled graphs, end with more subgraphs than simply cutting the
  // given topological order wherever the device changes (always a valid schedule): keep the
  // better of the two.
  std::vector<PlannedSubgraph> runs;
  for (size_t k = 0; k < n; ++k) {
    const size_t d = static_cast<size_t>(out.node_device[k]);
    if (runs.empty() || runs.back().device != d) runs.push_back({d, {}});
    runs.back().nodes.push_back(static_cast<int>(k));
  }
  if (runs.size() < out.subgraphs.size()) out.subgraphs = std::move(runs);
  for (const std::string& note : notes)
    if (!note.empty()) out.notes.push_back(note);
  return out;
}

bool is_valid_schedule(const PartitionProblem& p, const Partition& part, std::string* why) {
  auto bad = [&](const std::string& text) {
    if (why) *why = text;
    return false;
  };
  std::vector<int> producer(p.num_values, -1);
  for (size_t k = 0; k < p.nodes.size(); ++k)
    for (int v : p.nodes[k].outputs)
      if (v >= 0) producer[v] = static_cast<int>(k);
  std::vector<int> subgraph_of(p.nodes.size(), -1);
  for (size_t s = 0; s < part.subgraphs.size(); ++s)
    for (int k : part.subgraphs[s].nodes) {
      if (k < 0 || static_cast<size_t>(k) >= p.nodes.size()) return bad("node index out of range");
      if (subgraph_of[k] >= 0) return bad(fmt::format("node {} is in two subgraphs", k));
      subgraph_of[k] = static_cast<int>(s);
      if (part.node_device[k] != static_cast<int>(part.subgraphs[s].device))
        return bad(fmt::format("node {} sits in a subgraph of another device", k));
    }
  for (size_t k = 0; k < p.nodes.size(); ++k)
    if (subgraph_of[k] < 0) return bad(fmt::format("node {} is in no subgraph", k));
  std::vector<bool> done(p.num_values, false);
  for (size_t s = 0; s < part.subgraphs.size(); ++s)
    for (int k : part.subgraphs[s].nodes) {
      for (int v : p.nodes[k].inputs)
        if (v >= 0 && producer[v] >= 0 && !done[v])
          return bad(
              fmt::format("subgraph {} reads value {} before node {} makes it", s, v, producer[v]));
      for (int v : p.nodes[k].outputs)
        if (v >= 0) done[v] = true;
    }
  return true;
}

}  // namespace loom::core
