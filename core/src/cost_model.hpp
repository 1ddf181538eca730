// The scheduler's cost model: how long a node takes on a device and what moving a tensor
// between devices costs. It only has to rank alternatives (keep an island on its preferred
// device or move it next to its neighbours), so it is deliberately simple and documented in
// docs/architecture.md ("Cost model"): FLOPs per op family from shapes, bytes at device
// boundaries, per-device throughput / bandwidth / latency that each device states (ABI 1.9 cost
// hints, over generic defaults) and a user can override.
#pragma once

#include <string>
#include <vector>

#include "graph_view.hpp"
#include "ir/graph.hpp"

namespace loom::core {

struct DeviceCost {
  double gflops = 50;               // sustained arithmetic throughput, 1e9 FLOP/s
  double transfer_gbps = 10;        // host <-> device bandwidth, 1e9 bytes/s
  double transfer_latency_us = 10;  // fixed cost of one copy
  double launch_us = 2;             // fixed cost of running one subgraph
  bool host_memory = true;          // host-memory devices exchange tensors without copies
};

// Middle-of-the-road numbers for a device that states no cost hints: a host-memory device (its
// info flags say LOOM_DEVICE_HOST_MEMORY) or one whose memory the core copies.
DeviceCost default_device_cost(bool host_memory);

// A device's costs: the hints of its info (ABI 1.9, read only where its struct_size covers them)
// over default_device_cost. A hint of 0 is no hint; one that is negative, not finite or above
// 1e12 is not used, and a sentence naming it is appended to `ignored`.
DeviceCost device_cost(const loom_device_info_t& info, std::vector<std::string>* ignored);

// Applies "DEVICE.KEY=VALUE;..." (KEY: gflops, transfer_gbps, transfer_latency_us, launch_us;
// DEVICE: a name from `names` or "*" for all) to `costs`. Throws an Error naming the bad item.
void apply_cost_overrides(const std::string& spec, const std::vector<std::string>& names,
                          std::vector<DeviceCost>& costs);

// Seconds to move `bytes` from a device to another (0 between host-memory devices; the host
// itself, where graph inputs and outputs live, is a host-memory "device").
double transfer_seconds(const DeviceCost& from, const DeviceCost& to, double bytes);
// Seconds `flops` take on a device (launch overhead not included).
double compute_seconds(const DeviceCost& device, double flops);

// Estimated FLOPs of one node from its value facts (indexed by value id); 0 when the shapes
// it needs are unknown or the op only moves data.
double estimate_flops(const Graph& g, const Node& node, const std::vector<ValueFacts>& facts);

// "4.09 GFLOP", "512 kFLOP", "12 FLOP": for plans people read.
std::string format_flops(double flops);

// Bytes of a value when its dtype and shape are known, else 0.
double value_bytes(const Graph& g, int value_id, const std::vector<ValueFacts>& facts);

// The facts of a value: inferred ones when known, else what the IR declares.
const Shape& value_shape(const Graph& g, int value_id, const std::vector<ValueFacts>& facts);
loom_dtype_t value_dtype(const Graph& g, int value_id, const std::vector<ValueFacts>& facts);

}  // namespace loom::core
