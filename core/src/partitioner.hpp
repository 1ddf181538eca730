// The partitioner: which device runs which node, and how nodes group into subgraphs. A pure
// function of a small problem description (no plugins, no IR), so that unit tests can feed
// it synthetic graphs (tests/scheduler). The session builds the problem from the model and
// the devices' answers to supports_node; docs/architecture.md describes the algorithm.
#pragma once

#include <string>
#include <vector>

#include "cost_model.hpp"

namespace loom::core {

struct PartitionNode {
  std::string label;                 // for messages: "Conv node 'conv1'"
  std::vector<int> inputs;           // value ids the node reads (nested-graph reads included)
  std::vector<int> outputs;          // value ids it writes
  std::vector<bool> supported;       // per device
  std::vector<std::string> reasons;  // per device: why not supported ("" when supported)
  int pinned = -1;                   // device the user pinned the node to, -1: none
  bool host_preferred = false;       // shape computation: keep it on a host-memory device
  double flops = 0;                  // estimated, per device cost model
};

struct PartitionProblem {
  std::vector<std::string> device_names;  // priority order
  std::vector<DeviceCost> devices;        // same order
  std::vector<PartitionNode> nodes;       // a topological order
  size_t num_values = 0;
  std::vector<double> value_bytes;  // per value (0: unknown or empty)
  std::vector<bool> graph_output;   // per value: must reach the application (host)
};

struct PlannedSubgraph {
  size_t device = 0;
  std::vector<int> nodes;  // node indices, execution order
};

struct Partition {
  std::vector<int> node_device;            // per node
  std::vector<PlannedSubgraph> subgraphs;  // execution order (topological in the subgraph DAG)
  std::vector<std::string> notes;          // nodes that left their preferred device, and why
  std::vector<std::string> unsupported;    // nodes no allowed device takes, with the reasons
};

// Places every node, moves islands whose transfers cost more than they save, and groups
// same-device nodes into the largest connected subgraphs that keep the subgraph graph acyclic.
// When `unsupported` is not empty, the other fields are not meaningful.
Partition partition_graph(const PartitionProblem& problem);

// True when the subgraphs, in their order, form a valid schedule: every node in exactly one
// subgraph, every value produced before a subgraph reads it. Used by tests and as a guard.
bool is_valid_schedule(const PartitionProblem& problem, const Partition& partition,
                       std::string* why = nullptr);

}  // namespace loom::core
