// The cost model (FLOPs from shapes, transfers, overrides) and the detection of shape
// computations, on hand-built IR graphs.
#include "cost_model.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <limits>

#include "shape_subgraphs.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

// A graph builder for tests: values with static shapes, nodes in topological order.
struct TinyGraph {
  Graph g;
  int value(const std::string& name, loom_dtype_t dtype, std::vector<int64_t> dims) {
    int id = g.intern(name);
    g.values[id].dtype = dtype;
    g.values[id].shape.rank = static_cast<int32_t>(dims.size());
    g.values[id].shape.dims = std::move(dims);
    return id;
  }
  Node& node(const std::string& op, std::vector<int> inputs, std::vector<int> outputs) {
    Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    for (int id : n.outputs) g.values[id].producer = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }
  std::vector<ValueFacts> no_facts() const { return std::vector<ValueFacts>(g.values.size()); }
};

TEST(CostModel, ConvFlopsCountEveryMultiplyAdd) {
  TinyGraph t;
  int x = t.value("x", LOOM_DTYPE_FLOAT32, {1, 64, 56, 56});
  int w = t.value("w", LOOM_DTYPE_FLOAT32, {128, 64, 3, 3});
  int y = t.value("y", LOOM_DTYPE_FLOAT32, {1, 128, 56, 56});
  const Node& conv = t.node("Conv", {x, w}, {y});
  EXPECT_DOUBLE_EQ(estimate_flops(t.g, conv, t.no_facts()), 2.0 * 128 * 56 * 56 * 64 * 3 * 3);
}

TEST(CostModel, MatMulAndGemmUseTheInnerDimension) {
  TinyGraph t;
  int a = t.value("a", LOOM_DTYPE_FLOAT32, {1, 128, 768});
  int b = t.value("b", LOOM_DTYPE_FLOAT32, {768, 3072});
  int c = t.value("c", LOOM_DTYPE_FLOAT32, {1, 128, 3072});
  EXPECT_DOUBLE_EQ(estimate_flops(t.g, t.node("MatMul", {a, b}, {c}), t.no_facts()),
                   2.0 * 128 * 3072 * 768);
  int at = t.value("at", LOOM_DTYPE_FLOAT32, {512, 4});
  int bt = t.value("bt", LOOM_DTYPE_FLOAT32, {512, 10});
  int ct = t.value("ct", LOOM_DTYPE_FLOAT32, {4, 10});
  Node& gemm = t.node("Gemm", {at, bt}, {ct});
  Attribute trans;
  trans.name = "transA";
  trans.type = LOOM_ATTR_INT;
  trans.i = 1;
  gemm.attributes.push_back(trans);
  EXPECT_DOUBLE_EQ(estimate_flops(t.g, gemm, t.no_facts()), 2.0 * 4 * 10 * 512);
}

TEST(CostModel, UnknownShapesAndDataMovementCostNothing) {
  TinyGraph t;
  int x = t.value("x", LOOM_DTYPE_FLOAT32, {-1, 3});
  int y = t.value("y", LOOM_DTYPE_FLOAT32, {-1, 3});
  EXPECT_EQ(estimate_flops(t.g, t.node("Relu", {x}, {y}), t.no_facts()), 0);
  int a = t.value("a", LOOM_DTYPE_FLOAT32, {2, 3});
  int b = t.value("b", LOOM_DTYPE_FLOAT32, {3, 2});
  EXPECT_EQ(estimate_flops(t.g, t.node("Transpose", {a}, {b}), t.no_facts()), 0);
  // Inferred facts win over the declared shape.
  std::vector<ValueFacts> facts = t.no_facts();
  facts[y].known = true;
  facts[y].dtype = LOOM_DTYPE_FLOAT32;
  facts[y].shape.rank = 2;
  facts[y].shape.dims = {4, 3};
  EXPECT_EQ(estimate_flops(t.g, t.g.nodes[0], facts), 12);
  EXPECT_EQ(value_bytes(t.g, y, facts), 48);
}

TEST(CostModel, TransfersCostNothingBetweenHostMemoryDevices) {
  DeviceCost cpu = default_device_cost(true);
  DeviceCost onednn = default_device_cost(true);
  onednn.gflops = 200;
  DeviceCost gpu = default_device_cost(false);
  EXPECT_EQ(transfer_seconds(cpu, onednn, 1e9), 0);
  // 8 GB/s plus 20 us latency each way.
  EXPECT_NEAR(transfer_seconds(cpu, gpu, 8e9), 1.0 + 20e-6, 1e-9);
  EXPECT_NEAR(transfer_seconds(gpu, gpu, 0), 40e-6, 1e-12);
  EXPECT_FALSE(gpu.host_memory);
  EXPECT_GT(gpu.transfer_gbps, 0);
}

loom_device_info_t device_info(const char* name, uint32_t flags) {
  loom_device_info_t info{};
  info.struct_size = sizeof info;
  std::snprintf(info.name, sizeof info.name, "%s", name);
  info.available = true;
  info.flags = flags;
  return info;
}

// ABI 1.9: a device states its own costs; 0 keeps the host's default; the default depends on
// whether the device has host memory, not on its name.
TEST(CostModel, DevicesStateTheirOwnCosts) {
  loom_device_info_t gpu = device_info("vulkan", 0);
  gpu.cost_gflops = 3000;
  gpu.cost_transfer_gbps = 25;
  gpu.cost_launch_us = 5;
  std::vector<std::string> ignored;
  DeviceCost c = device_cost(gpu, &ignored);
  EXPECT_EQ(c.gflops, 3000);
  EXPECT_EQ(c.transfer_gbps, 25);
  EXPECT_EQ(c.transfer_latency_us, default_device_cost(false).transfer_latency_us);
  EXPECT_EQ(c.launch_us, 5);
  EXPECT_FALSE(c.host_memory);
  EXPECT_TRUE(ignored.empty());

  // No hints: the defaults by memory kind, whatever the device is called.
  loom_device_info_t plain = device_info("onednn", LOOM_DEVICE_HOST_MEMORY);
  c = device_cost(plain, &ignored);
  EXPECT_EQ(c.gflops, default_device_cost(true).gflops);
  EXPECT_EQ(c.launch_us, default_device_cost(true).launch_us);
  EXPECT_TRUE(c.host_memory);

  // A device built before 1.9 fills a shorter struct: what lies past its struct_size is not
  // read, even where the bytes are not zero.
  loom_device_info_t old = device_info("old", LOOM_DEVICE_HOST_MEMORY);
  old.struct_size = offsetof(loom_device_info_t, cost_gflops);
  old.cost_gflops = 7;
  EXPECT_EQ(device_cost(old, &ignored).gflops, default_device_cost(true).gflops);
  EXPECT_TRUE(ignored.empty());
}

TEST(CostModel, AbsurdCostHintsAreIgnoredAndNamed) {
  loom_device_info_t info = device_info("accel", 0);
  info.cost_gflops = -1;
  info.cost_transfer_gbps = std::numeric_limits<double>::quiet_NaN();
  info.cost_transfer_latency_us = std::numeric_limits<double>::infinity();
  info.cost_launch_us = 1e13;
  std::vector<std::string> ignored;
  DeviceCost c = device_cost(info, &ignored);
  DeviceCost d = default_device_cost(false);
  EXPECT_EQ(c.gflops, d.gflops);
  EXPECT_EQ(c.transfer_gbps, d.transfer_gbps);
  EXPECT_EQ(c.transfer_latency_us, d.transfer_latency_us);
  EXPECT_EQ(c.launch_us, d.launch_us);
  ASSERT_EQ(ignored.size(), 4u);
  EXPECT_NE(ignored[0].find("device 'accel' states cost_gflops = -1, which is not a number from 0 "
                            "to 1e12; using 500 instead"),
            std::string::npos)
      << ignored[0];
  EXPECT_NE(ignored[1].find("cost_transfer_gbps = nan"), std::string::npos) << ignored[1];
  EXPECT_NE(ignored[2].find("cost_transfer_latency_us = inf"), std::string::npos) << ignored[2];
  EXPECT_NE(ignored[3].find("cost_launch_us = 1e+13"), std::string::npos) << ignored[3];
}

TEST(CostModel, OverridesApplyByDeviceNameOrToAll) {
  std::vector<std::string> names = {"vulkan", "cpu"};
  std::vector<DeviceCost> costs = {default_device_cost(false), default_device_cost(true)};
  apply_cost_overrides("vulkan.gflops=2000; *.launch_us=7,cpu.gflops=33", names, costs);
  EXPECT_EQ(costs[0].gflops, 2000);
  EXPECT_EQ(costs[1].gflops, 33);
  EXPECT_EQ(costs[0].launch_us, 7);
  EXPECT_EQ(costs[1].launch_us, 7);
  auto error = [&](const std::string& spec) {
    try {
      apply_cost_overrides(spec, names, costs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("vulkan.speed=3").find("unknown key 'speed'"), std::string::npos);
  EXPECT_NE(
      error("opencl.gflops=3")
          .find("names device 'opencl', which the session does not use (devices: vulkan, cpu)"),
      std::string::npos);
  EXPECT_NE(error("vulkan.gflops=-1").find("is not a non-negative number"), std::string::npos);
  EXPECT_NE(error("gflops=3").find("must look like DEVICE.KEY=VALUE"), std::string::npos);
}

// Shape -> Gather -> Unsqueeze -> Concat(with a Constant) -> Reshape's shape input: the shape
// chain and its Constant are shape computations; the Reshape of the data is not.
TEST(ShapeComputations, FindsTheShapeChainButNotTheDataPath) {
  TinyGraph t;
  int x = t.value("x", LOOM_DTYPE_FLOAT32, {2, 3, 4});
  int shape = t.value("shape", LOOM_DTYPE_INT64, {3});
  int idx = t.value("idx", LOOM_DTYPE_INT64, {});
  t.g.values[idx].constant = std::make_shared<ConstantData>();
  int dim0 = t.value("dim0", LOOM_DTYPE_INT64, {});
  int axes = t.value("axes", LOOM_DTYPE_INT64, {1});
  t.g.values[axes].constant = std::make_shared<ConstantData>();
  int dim0_1d = t.value("dim0_1d", LOOM_DTYPE_INT64, {1});
  int minus1 = t.value("minus1", LOOM_DTYPE_INT64, {1});
  int new_shape = t.value("new_shape", LOOM_DTYPE_INT64, {2});
  int y = t.value("y", LOOM_DTYPE_FLOAT32, {2, 12});
  int z = t.value("z", LOOM_DTYPE_FLOAT32, {2, 12});
  t.node("Shape", {x}, {shape});
  t.node("Gather", {shape, idx}, {dim0});
  t.node("Unsqueeze", {dim0, axes}, {dim0_1d});
  t.node("Constant", {}, {minus1});
  t.node("Concat", {dim0_1d, minus1}, {new_shape});
  t.node("Reshape", {x, new_shape}, {y});
  t.node("Relu", {y}, {z});
  std::vector<bool> marked = find_shape_computations(t.g, t.no_facts());
  EXPECT_EQ(marked, (std::vector<bool>{true, true, true, true, true, false, false}));
}

TEST(ShapeComputations, LargeOrFloatTensorsAreNotShapeComputations) {
  TinyGraph t;
  int x = t.value("x", LOOM_DTYPE_FLOAT32, {2, 3});
  int shape = t.value("shape", LOOM_DTYPE_INT64, {2});
  int f = t.value("f", LOOM_DTYPE_FLOAT32, {2});
  t.node("Shape", {x}, {shape});
  t.node("Cast", {shape}, {f});
  EXPECT_EQ(find_shape_computations(t.g, t.no_facts()), (std::vector<bool>{true, false}));
}

}  // namespace
}  // namespace loom::core
