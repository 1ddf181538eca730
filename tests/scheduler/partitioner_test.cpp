// The partitioner on synthetic graphs, no plugins: the shapes that defeat naive partitioners
// (diamonds, skip connections around an unsupported node, merges that would close a cycle,
// control-flow nodes reading outer values), the cost rule for islands, pins, and a fuzz test
// over random DAGs that checks every plan is a valid schedule.
#include "partitioner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace loom::core {
namespace {

// Builds a PartitionProblem node by node. Values are created by the nodes that make them.
class Synthetic {
 public:
  Synthetic(std::vector<std::string> names, std::vector<DeviceCost> costs) {
    p_.device_names = std::move(names);
    p_.devices = std::move(costs);
  }

  int input(double bytes = 1024) { return new_value(bytes); }

  // A node reading `inputs`, supported by the devices in `on` (indices), making one value.
  int node(const std::string& name, std::vector<int> inputs, std::set<int> on, double flops = 1e3,
           double out_bytes = 1024) {
    PartitionNode n;
    n.label = name;
    n.inputs = std::move(inputs);
    n.outputs = {new_value(out_bytes)};
    for (size_t d = 0; d < p_.devices.size(); ++d) {
      n.supported.push_back(on.count(static_cast<int>(d)) > 0);
      n.reasons.push_back(on.count(static_cast<int>(d)) ? ""
                                                        : p_.device_names[d] + " lacks " + name);
    }
    n.flops = flops;
    p_.nodes.push_back(std::move(n));
    return p_.nodes.back().outputs[0];
  }

  void output(int value) { p_.graph_output[value] = true; }
  PartitionNode& last() { return p_.nodes.back(); }
  PartitionNode& at(size_t k) { return p_.nodes[k]; }
  const PartitionProblem& problem() const { return p_; }

 private:
  int new_value(double bytes) {
    p_.value_bytes.push_back(bytes);
    p_.graph_output.push_back(false);
    return static_cast<int>(p_.num_values++);
  }
  PartitionProblem p_;
};

// Two host-memory devices: transfers are free, so only support decides.
DeviceCost host(double gflops = 100) {
  return {gflops, 0, 0, 1, true};
}
DeviceCost remote(double gflops = 1000) {
  return {gflops, 8, 20, 20, false};
}

Partition solve(const Synthetic& s) {
  Partition r = partition_graph(s.problem());
  EXPECT_TRUE(r.unsupported.empty());
  std::string why;
  EXPECT_TRUE(is_valid_schedule(s.problem(), r, &why)) << why;
  for (size_t k = 0; k < s.problem().nodes.size(); ++k)
    EXPECT_TRUE(s.problem().nodes[k].supported[r.node_device[k]]) << "node " << k;
  return r;
}

std::vector<std::vector<int>> groups(const Partition& r) {
  std::vector<std::vector<int>> g;
  for (const auto& s : r.subgraphs) g.push_back(s.nodes);
  return g;
}

TEST(Partitioner, ChainOnOneDeviceIsOneSubgraph) {
  Synthetic s({"x", "y"}, {host(), host()});
  int v = s.input();
  for (int i = 0; i < 5; ++i) v = s.node("n" + std::to_string(i), {v}, {0, 1});
  s.output(v);
  Partition r = solve(s);
  ASSERT_EQ(r.subgraphs.size(), 1u);
  EXPECT_EQ(r.subgraphs[0].device, 0u);
  EXPECT_EQ(r.subgraphs[0].nodes, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(r.notes.empty());
}

// a(x) -> {b(y), c(y)} -> d(x): the two arms are one subgraph, three in all.
TEST(Partitioner, DiamondArmsShareOneSubgraph) {
  Synthetic s({"x", "y"}, {host(), host()});
  int a = s.node("a", {s.input()}, {0});
  int b = s.node("b", {a}, {1});
  int c = s.node("c", {a}, {1});
  s.output(s.node("d", {b, c}, {0}));
  Partition r = solve(s);
  EXPECT_EQ(groups(r), (std::vector<std::vector<int>>{{0}, {1, 2}, {3}}));
  EXPECT_EQ(r.node_device, (std::vector<int>{0, 1, 1, 0}));
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("b runs on y (x: x lacks b)"), std::string::npos) << r.notes[0];
}

// n0..n2 on x, n3 only on y, n4..n5 on x, with a skip n0 -> n5. Merging n0's group with n5's
// (connected through the skip) would make the x subgraph wait for y and y wait for x.
TEST(Partitioner, SkipConnectionAroundUnsupportedNodeIsNotMerged) {
  Synthetic s({"x", "y"}, {host(), host()});
  int n0 = s.node("n0", {s.input()}, {0});
  int n1 = s.node("n1", {n0}, {0});
  int n2 = s.node("n2", {n1}, {0});
  int n3 = s.node("n3", {n2}, {1});
  int n4 = s.node("n4", {n3}, {0});
  s.output(s.node("n5", {n4, n0}, {0}));
  Partition r = solve(s);
  EXPECT_EQ(groups(r), (std::vector<std::vector<int>>{{0, 1, 2}, {3}, {4, 5}}));
}

// a(x) -> b(x), a -> c(y) -> d(x), b -> d. The x nodes are connected (a-b-d) but one x
// subgraph would both feed c and wait for it.
TEST(Partitioner, CycleInducingMergeIsSplit) {
  Synthetic s({"x", "y"}, {host(), host()});
  int a = s.node("a", {s.input()}, {0});
  int b = s.node("b", {a}, {0});
  int c = s.node("c", {a}, {1});
  s.output(s.node("d", {b, c}, {0}));
  Partition r = solve(s);
  ASSERT_EQ(r.subgraphs.size(), 3u);
  std::set<int> first(r.subgraphs[0].nodes.begin(), r.subgraphs[0].nodes.end());
  EXPECT_TRUE(first.count(0));
  EXPECT_FALSE(first.count(3)) << "a and d in one subgraph would close a cycle through c";
}

// The naive "consecutive runs in topological order" split gives 5 subgraphs for this order;
// connected grouping gives 2 (x: a, c, e; y: b, d) when no path forces an interleaving.
TEST(Partitioner, InterleavedIndependentBranchesGroupByDevice) {
  Synthetic s({"x", "y"}, {host(), host()});
  int in = s.input();
  int a = s.node("a", {in}, {0});
  int b = s.node("b", {in}, {1});
  int c = s.node("c", {a}, {0});
  int d = s.node("d", {b}, {1});
  int e = s.node("e", {c}, {0});
  s.output(e);
  s.output(d);
  Partition r = solve(s);
  EXPECT_EQ(groups(r), (std::vector<std::vector<int>>{{0, 2, 4}, {1, 3}}));
}

// An If/Loop node reads outer values implicitly; they are inputs like any other, so the
// control-flow node runs after their producers even on another device.
TEST(Partitioner, ControlFlowNodeWaitsForItsImplicitInputs) {
  Synthetic s({"x", "y"}, {host(), host()});
  int in = s.input();
  int cond = s.node("cond", {in}, {0});
  int outer = s.node("outer", {in}, {0});
  int body_only = s.node("unrelated", {in}, {1});
  // If reads `cond` explicitly and `outer` from its branches (implicit input).
  int if_out = s.node("if", {cond, outer}, {1});
  s.output(s.node("tail", {if_out, body_only}, {0}));
  Partition r = solve(s);
  EXPECT_EQ(r.node_device[3], 1);
  // cond and outer run before the If's subgraph.
  size_t if_group = 0, outer_group = 0;
  for (size_t g = 0; g < r.subgraphs.size(); ++g)
    for (int k : r.subgraphs[g].nodes) {
      if (k == 3) if_group = g;
      if (k == 1) outer_group = g;
    }
  EXPECT_LT(outer_group, if_group);
}

// A tiny island on a remote device between host nodes costs two transfers and a launch for
// almost no compute: it joins its neighbours. A heavy one stays.
TEST(Partitioner, CheapIslandJoinsItsNeighbours) {
  for (double flops : {1e3, 1e12}) {
    Synthetic s({"gpu", "cpu"}, {remote(1000), host(20)});
    int n0 = s.node("n0", {s.input(4096)}, {0, 1}, flops, 4096);
    int n1 = s.node("n1", {n0}, {1}, 1e3, 4096);  // the gpu lacks n1
    int n2 = s.node("n2", {n1}, {0, 1}, flops, 4096);
    s.output(n2);
    Partition r = solve(s);
    if (flops < 1e6) {
      EXPECT_EQ(r.node_device, (std::vector<int>{1, 1, 1}));
      EXPECT_EQ(r.subgraphs.size(), 1u);
      bool explained = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find("n0 runs on cpu instead of gpu") != std::string::npos;
      });
      EXPECT_TRUE(explained);
    } else {
      EXPECT_EQ(r.node_device, (std::vector<int>{0, 1, 0}));
      EXPECT_EQ(r.subgraphs.size(), 3u);
    }
  }
}

// Between host-memory devices transfers are free, so a faster preferred device keeps even a
// one-node island unless the launch overhead outweighs the compute it saves.
TEST(Partitioner, HostMemoryIslandStaysWhenComputeSaves) {
  Synthetic s({"fast", "slow"}, {host(200), host(20)});
  int n0 = s.node("n0", {s.input()}, {1});
  int n1 = s.node("n1", {n0}, {0, 1}, 1e9);
  s.output(s.node("n2", {n1}, {1}));
  Partition r = solve(s);
  EXPECT_EQ(r.node_device, (std::vector<int>{1, 0, 1}));
}

TEST(Partitioner, PinsWinOverCostAndPreference) {
  Synthetic s({"gpu", "cpu"}, {remote(), host()});
  int n0 = s.node("n0", {s.input()}, {0, 1});
  int n1 = s.node("n1", {n0}, {0, 1});
  s.output(s.node("n2", {n1}, {0, 1}));
  s.at(1).pinned = 1;
  s.at(0).pinned = 0;
  s.at(2).pinned = 0;
  Partition r = solve(s);
  EXPECT_EQ(r.node_device, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(r.subgraphs.size(), 3u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("n1 runs on cpu (pinned by a placement)"), std::string::npos);
}

TEST(Partitioner, PinToADeviceThatLacksTheOpIsReported) {
  Synthetic s({"gpu", "cpu"}, {remote(), host()});
  s.output(s.node("n0", {s.input()}, {1}));
  s.last().pinned = 0;
  Partition r = partition_graph(s.problem());
  ASSERT_EQ(r.unsupported.size(), 1u);
  EXPECT_EQ(r.unsupported[0], "n0 (pinned to gpu, which does not take it: gpu lacks n0)");
}

TEST(Partitioner, EveryUnsupportedNodeIsListedWithEachDevicesReason) {
  Synthetic s({"a", "b"}, {host(), host()});
  int v = s.node("n0", {s.input()}, {});
  v = s.node("n1", {v}, {0});
  s.output(s.node("n2", {v}, {}));
  Partition r = partition_graph(s.problem());
  EXPECT_EQ(r.unsupported, (std::vector<std::string>{"n0 (a: a lacks n0; b: b lacks n0)",
                                                     "n2 (a: a lacks n2; b: b lacks n2)"}));
}

TEST(Partitioner, ShapeComputationsStayOnAHostMemoryDevice) {
  Synthetic s({"gpu", "cpu"}, {remote(), host()});
  int x = s.input();
  int shape = s.node("shape", {x}, {0, 1}, 0, 16);
  s.last().host_preferred = true;
  int gathered = s.node("gather", {shape}, {0, 1}, 0, 8);
  s.last().host_preferred = true;
  s.output(s.node("reshape", {x, gathered}, {0, 1}, 1e12));
  Partition r = solve(s);
  EXPECT_EQ(r.node_device, (std::vector<int>{1, 1, 0}));
}

// Random DAGs with random support over three devices: every plan is a valid schedule, every
// node sits on a device that takes it, and no two subgraphs of one device could have been
// connected-merged without a cycle... at least the plan never has more subgraphs than the
// naive consecutive-runs split.
TEST(Partitioner, RandomGraphsGiveValidSchedules) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<DeviceCost> costs = {host(100), remote(1000), host(20)};
    Synthetic s({"a", "b", "c"}, costs);
    std::vector<int> values = {s.input(), s.input()};
    int n = 5 + static_cast<int>(rng() % 40);
    std::vector<int> naive_device;
    for (int k = 0; k < n; ++k) {
      std::vector<int> ins;
      int fan_in = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < fan_in; ++i) ins.push_back(values[rng() % values.size()]);
      std::set<int> on = {2};  // c takes everything, like the cpu fallback
      if (rng() % 3) on.insert(0);
      if (rng() % 2) on.insert(1);
      values.push_back(
          s.node("n" + std::to_string(k), ins, on, static_cast<double>(rng() % 1000000)));
      if (rng() % 7 == 0) s.last().pinned = static_cast<int>(*on.begin());
    }
    s.output(values.back());
    Partition r = solve(s);
    size_t runs = 0;
    for (int k = 0; k < n; ++k)
      if (k == 0 || r.node_device[k] != r.node_device[k - 1]) ++runs;
    EXPECT_LE(r.subgraphs.size(), runs) << "trial " << trial;
  }
}

}  // namespace
}  // namespace loom::core
