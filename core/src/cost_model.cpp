#include "cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "status.hpp"

namespace loom::core {
namespace {

double element_count(const Shape& s) {
  if (!s.is_static()) return 0;
  double n = 1;
  for (int64_t d : s.dims) n *= static_cast<double>(d);
  return n;
}

// Ops that only reinterpret or route data: no arithmetic worth counting.
const std::set<std::string>& data_movement_ops() {
  static const std::set<std::string> ops = {
      "Reshape", "Flatten",         "Squeeze",      "Unsqueeze",   "Identity", "Shape",
      "Size",    "Constant",        "Transpose",    "Concat",      "Split",    "Slice",
      "Gather",  "GatherElements",  "GatherND",     "Expand",      "Tile",     "Pad",
      "Cast",    "ConstantOfShape", "DepthToSpace", "SpaceToDepth"};
  return ops;
}

// Sequence and optional ops: host steps over lists of tensors, copies at most.
const std::set<std::string>& container_ops() {
  static const std::set<std::string> ops = {
      "SequenceEmpty", "SequenceConstruct",  "SequenceInsert",     "SequenceAt",
      "SequenceErase", "SequenceLength",     "ConcatFromSequence", "SplitToSequence",
      "Optional",      "OptionalHasElement", "OptionalGetElement"};
  return ops;
}

// Ops costing several FLOPs per element (normalizations, softmax, transcendental functions).
double per_element_factor(const std::string& op) {
  static const std::map<std::string, double> factors = {{"Softmax", 5},
                                                        {"LogSoftmax", 5},
                                                        {"LayerNormalization", 8},
                                                        {"BatchNormalization", 2},
                                                        {"InstanceNormalization", 8},
                                                        {"Erf", 10},
                                                        {"Tanh", 10},
                                                        {"Sigmoid", 4},
                                                        {"Exp", 10},
                                                        {"Log", 10},
                                                        {"Gelu", 12},
                                                        {"Pow", 10},
                                                        {"Sqrt", 4},
                                                        {"HardSwish", 3},
                                                        {"Resize", 4}};
  auto it = factors.find(op);
  return it == factors.end() ? 1 : it->second;
}

std::vector<int64_t> ints_attribute(const Node& n, const char* name) {
  const Attribute* a = n.find_attribute(name);
  return a ? a->ints : std::vector<int64_t>{};
}

}  // namespace

const Shape& value_shape(const Graph& g, int id, const std::vector<ValueFacts>& facts) {
  if (id >= 0 && static_cast<size_t>(id) < facts.size() && facts[id].known) return facts[id].shape;
  return g.values[id].shape;
}

loom_dtype_t value_dtype(const Graph& g, int id, const std::vector<ValueFacts>& facts) {
  if (id >= 0 && static_cast<size_t>(id) < facts.size() && facts[id].known) return facts[id].dtype;
  return g.values[id].dtype;
}

double value_bytes(const Graph& g, int id, const std::vector<ValueFacts>& facts) {
  if (id < 0) return 0;
  size_t elem = dtype_size(value_dtype(g, id, facts));
  return static_cast<double>(elem) * element_count(value_shape(g, id, facts));
}

DeviceCost default_device_cost(bool host_memory) {
  // Orders of magnitude; they rank choices, they do not predict latency. Devices state their own
  // (device_cost), users with other hardware override them (apply_cost_overrides).
  if (host_memory) return {50, 0, 0, 2, true};
  return {500, 8, 20, 20, false};  // a GPU-class device behind PCIe-class copies
}

DeviceCost device_cost(const loom_device_info_t& info, std::vector<std::string>* ignored) {
  DeviceCost c = default_device_cost(info.flags & LOOM_DEVICE_HOST_MEMORY);
  struct Hint {
    const char* name;
    double stated;
    double* into;
  };
  const bool stated = LOOM_HAS_MEMBER(&info, loom_device_info_t, cost_launch_us);
  const Hint hints[] = {
      {"cost_gflops", stated ? info.cost_gflops : 0, &c.gflops},
      {"cost_transfer_gbps", stated ? info.cost_transfer_gbps : 0, &c.transfer_gbps},
      {"cost_transfer_latency_us", stated ? info.cost_transfer_latency_us : 0,
       &c.transfer_latency_us},
      {"cost_launch_us", stated ? info.cost_launch_us : 0, &c.launch_us}};
  for (const Hint& h : hints) {
    if (h.stated == 0) continue;
    if (!(h.stated > 0) || !std::isfinite(h.stated) || h.stated > 1e12) {
      if (ignored)
        ignored->push_back(
            fmt::format("device '{}' states {} = {:g}, which is not a number from 0 to 1e12; using "
                        "{:g} instead",
                        info.name, h.name, h.stated, *h.into));
      continue;
    }
    *h.into = h.stated;
  }
  return c;
}

void apply_cost_overrides(const std::string& spec, const std::vector<std::string>& names,
                          std::vector<DeviceCost>& costs) {
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find_first_of(";,", pos);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    size_t dot = item.find('.');
    size_t eq = item.find('=');
    if (dot == std::string::npos || eq == std::string::npos || dot > eq)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "cost model override '" + item +
               "' must look like DEVICE.KEY=VALUE, e.g. vulkan.gflops=2000");
    std::string device = item.substr(0, dot), key = item.substr(dot + 1, eq - dot - 1);
    std::string text = item.substr(eq + 1);
    char* stop = nullptr;
    double value = std::strtod(text.c_str(), &stop);
    if (text.empty() || *stop != '\0' || !(value >= 0) || value > 1e12)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "cost model override '" + item + "': '" + text + "' is not a non-negative number");
    bool matched = false;
    for (size_t d = 0; d < names.size(); ++d) {
      if (device != "*" && device != names[d]) continue;
      matched = true;
      DeviceCost& c = costs[d];
      if (key == "gflops")
        c.gflops = value;
      else if (key == "transfer_gbps")
        c.transfer_gbps = value;
      else if (key == "transfer_latency_us")
        c.transfer_latency_us = value;
      else if (key == "launch_us")
        c.launch_us = value;
      else
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "cost model override '" + item + "': unknown key '" + key +
                 "' (known: gflops, transfer_gbps, transfer_latency_us, launch_us)");
    }
    if (!matched) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "cost model override '" + item + "' names device '" + device +
               "', which the session does not use (devices: " + list + ")");
    }
  }
}

double transfer_seconds(const DeviceCost& from, const DeviceCost& to, double bytes) {
  double s = 0;
  for (const DeviceCost* side : {&from, &to})
    if (!side->host_memory)
      s += side->transfer_latency_us * 1e-6 +
           (side->transfer_gbps > 0 ? bytes / (side->transfer_gbps * 1e9) : 0);
  return s;
}

std::string format_flops(double flops) {
  char text[32];
  if (flops >= 1e9)
    std::snprintf(text, sizeof text, "%.2f GFLOP", flops / 1e9);
  else if (flops >= 1e6)
    std::snprintf(text, sizeof text, "%.2f MFLOP", flops / 1e6);
  else if (flops >= 1e3)
    std::snprintf(text, sizeof text, "%.1f kFLOP", flops / 1e3);
  else
    std::snprintf(text, sizeof text, "%.0f FLOP", flops);
  return text;
}

double compute_seconds(const DeviceCost& device, double flops) {
  return device.gflops > 0 ? flops / (device.gflops * 1e9) : 0;
}

double estimate_flops(const Graph& g, const Node& node, const std::vector<ValueFacts>& facts) {
  auto in_shape = [&](size_t i) -> const Shape* {
    if (i >= node.inputs.size() || node.inputs[i] < 0) return nullptr;
    return &value_shape(g, node.inputs[i], facts);
  };
  double out_elems = 0;
  for (int id : node.outputs)
    if (id >= 0) out_elems += element_count(value_shape(g, id, facts));
  const std::string& op = node.op_type;
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") {
    // Each output element is a dot product over C/group x kernel: the weight's dims past the first.
    const Shape* w = in_shape(op == "QLinearConv" ? 3 : 1);
    if (!w || !w->is_static() || w->rank < 2) return 0;
    double k = 1;
    for (int32_t d = 1; d < w->rank; ++d) k *= static_cast<double>(w->dims[d]);
    return 2 * out_elems * k;
  }
  if (op == "ConvTranspose") {
    const Shape* x = in_shape(0);
    const Shape* w = in_shape(1);
    if (!x || !w || !w->is_static() || w->rank < 2) return 0;
    double k = 1;
    for (int32_t d = 1; d < w->rank; ++d) k *= static_cast<double>(w->dims[d]);
    return 2 * element_count(*x) * k;
  }
  if (op == "MatMul" || op == "MatMulInteger" || op == "Gemm") {
    const Shape* a = in_shape(0);
    if (!a || !a->is_static() || a->rank < 1) return 0;
    int32_t k_axis = a->rank - 1;
    if (op == "Gemm") {
      const Attribute* t = node.find_attribute("transA");
      if (t && t->i && a->rank == 2) k_axis = 0;
    }
    return 2 * out_elems * static_cast<double>(a->dims[k_axis]);
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    double k = 1;
    for (int64_t d : ints_attribute(node, "kernel_shape")) k *= static_cast<double>(d);
    return out_elems * k;
  }
  if (op.rfind("Global", 0) == 0 || op.rfind("Reduce", 0) == 0 || op == "ArgMax" ||
      op == "ArgMin") {
    const Shape* x = in_shape(0);
    return x ? element_count(*x) : 0;
  }
  if (data_movement_ops().count(op) || container_ops().count(op)) return 0;
  return out_elems * per_element_factor(op);
}

}  // namespace loom::core
