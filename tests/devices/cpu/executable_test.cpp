// The interpreter's scopes (device/executable.cpp): a run takes the scope an earlier run of the
// same graph gave back (constants still bound), and nothing a run computed outlives it, also
// when the run fails half-way or the graph is a Loop body run once per iteration.
#include "device/executable.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "abi_harness.hpp"

namespace loom::cpu {
namespace {

using device_testing::Graph;

using device_testing::host_tensor;

std::vector<float> floats_of(const Tensor& t) {
  const auto* p = static_cast<const float*>(t.view.data);
  return {p, p + sdk::element_count(t.view)};
}

// Bytes of tensors made by runs under `budget`'s scope that are still alive.
uint64_t live_bytes() {
  return current_run_budget() ? current_run_budget()->live.load() : ~uint64_t{0};
}

class CpuExecutable : public ::testing::Test {
 protected:
  CpuExecutable() : budget_(&control_) {}
  static loom_run_control_t make_control() {
    loom_run_control_t c{};
    c.struct_size = sizeof c;
    return c;
  }
  loom_run_control_t control_ = make_control();
  RunBudgetScope budget_;  // outlives the runs: counts what they leave alive
  ThreadPool pool_{2};
};

// x [4] -> m = x * c -> y = Relu(m), w = m + c: two outputs, a constant read twice.
TEST_F(CpuExecutable, RunsReuseScopesAndLeaveNothingBehind) {
  Graph g;
  int32_t x = g.value("x", LOOM_DTYPE_FLOAT32, {4}, LOOM_VALUE_GRAPH_INPUT);
  int32_t c = g.constant("c", LOOM_DTYPE_FLOAT32, {4}, std::vector<float>{1, -2, 3, -4});
  int32_t m = g.value("m", LOOM_DTYPE_FLOAT32, {4});
  int32_t y = g.value("y", LOOM_DTYPE_FLOAT32, {4}, LOOM_VALUE_GRAPH_OUTPUT);
  int32_t w = g.value("w", LOOM_DTYPE_FLOAT32, {4}, LOOM_VALUE_GRAPH_OUTPUT);
  g.node("mul", "Mul", {x, c}, {m});
  g.node("relu", "Relu", {m}, {y});
  g.node("add", "Add", {m, c}, {w});
  Executable exe(nullptr, pool_, *g.finish("two outputs"));
  for (float s : {1.f, -1.f, 2.f}) {
    std::vector<float> in = {s, s, s, s};
    {
      loom_tensor_t t = host_tensor(LOOM_DTYPE_FLOAT32, {4}, in.data(), sizeof(float) * 4);
      std::vector<Tensor> out = exe.run_graph(std::span<const loom_tensor_t>(&t, 1));
      ASSERT_EQ(out.size(), 2u);
      std::vector<float> relu, sum;
      for (float k : {1.f, -2.f, 3.f, -4.f}) {
        relu.push_back(std::max(0.f, s * k));
        sum.push_back(s * k + k);
      }
      EXPECT_EQ(floats_of(out[0]), relu) << "scale " << s;
      EXPECT_EQ(floats_of(out[1]), sum) << "scale " << s;
    }
    EXPECT_EQ(live_bytes(), 0u) << "a finished run's scope still holds tensors";
  }
}

// x [4] -> b = x * 2 -> Reshape(b, shape): a shape of 5 elements fails after b was made.
TEST_F(CpuExecutable, AFailedRunLeavesNothingBehindAndTheNextRunIsRight) {
  Graph g;
  int32_t x = g.value("x", LOOM_DTYPE_FLOAT32, {4}, LOOM_VALUE_GRAPH_INPUT);
  int32_t shape = g.value("shape", LOOM_DTYPE_INT64, {2}, LOOM_VALUE_GRAPH_INPUT);
  int32_t two = g.constant("two", LOOM_DTYPE_FLOAT32, {}, std::vector<float>{2});
  int32_t b = g.value("b", LOOM_DTYPE_FLOAT32, {4});
  int32_t y = g.value("y", LOOM_DTYPE_FLOAT32, {2, 2}, LOOM_VALUE_GRAPH_OUTPUT);
  g.node("mul", "Mul", {x, two}, {b});
  g.node("reshape", "Reshape", {b, shape}, {y}, 14);
  Executable exe(nullptr, pool_, *g.finish("reshape"));
  std::vector<float> in = {1, 2, 3, 4};
  auto run = [&](std::vector<int64_t> dims) {
    loom_tensor_t t[2] = {host_tensor(LOOM_DTYPE_FLOAT32, {4}, in.data(), sizeof(float) * 4),
                          host_tensor(LOOM_DTYPE_INT64, {2}, dims.data(), sizeof(int64_t) * 2)};
    return exe.run_graph(std::span<const loom_tensor_t>(t, 2));
  };
  EXPECT_EQ(floats_of(run({2, 2}).at(0)), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_THROW(run({5, 1}), Error);
  EXPECT_EQ(live_bytes(), 0u) << "the failed run's intermediate outlived it";
  in = {-1, 0, 1, 2};
  {
    std::vector<Tensor> out = run({4, 1});
    EXPECT_EQ(floats_of(out.at(0)), (std::vector<float>{-2, 0, 2, 4}));
    EXPECT_EQ(out[0].view.dims[0], 4);
  }
  EXPECT_EQ(live_bytes(), 0u);
}

// x -> a = x + 1 -> Loop (3 trips of v = v * k, k an outer-scope value of the run) -> y: the
// body's scope is taken and given back every iteration; its outer value changes per run.
TEST_F(CpuExecutable, LoopBodiesSeeEachRunsOuterValues) {
  Graph body, g;
  body.value("iter", LOOM_DTYPE_INT64, {}, LOOM_VALUE_GRAPH_INPUT);
  int32_t cond_in = body.value("cond_in", LOOM_DTYPE_BOOL, {}, LOOM_VALUE_GRAPH_INPUT);
  int32_t v = body.value("v", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_INPUT);
  int32_t k_outer = body.value("k", LOOM_DTYPE_FLOAT32, {}, LOOM_VALUE_OUTER_SCOPE);
  int32_t cond_out = body.value("cond_out", LOOM_DTYPE_BOOL, {}, LOOM_VALUE_GRAPH_OUTPUT);
  int32_t v_out = body.value("v_out", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_OUTPUT);
  body.node("keep_going", "Identity", {cond_in}, {cond_out});
  body.node("scale", "Mul", {v, k_outer}, {v_out});
  int32_t x = g.value("x", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_INPUT);
  g.value("k", LOOM_DTYPE_FLOAT32, {}, LOOM_VALUE_GRAPH_INPUT);  // read by the body
  int32_t one = g.constant("one", LOOM_DTYPE_FLOAT32, {}, std::vector<float>{1});
  int32_t trips = g.constant("trips", LOOM_DTYPE_INT64, {}, std::vector<int64_t>{3});
  int32_t go = g.constant("go", LOOM_DTYPE_BOOL, {}, std::vector<uint8_t>{1});
  int32_t a = g.value("a", LOOM_DTYPE_FLOAT32, {2});
  int32_t y = g.value("y", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_OUTPUT);
  g.node("plus_one", "Add", {x, one}, {a});
  size_t loop = g.node("loop", "Loop", {trips, go, a}, {y}, 16);
  const loom_graph_t* top = g.finish("loop");
  g.subgraph(loop, "body", body.finish("body", top));
  Executable exe(nullptr, pool_, *g.finish("loop"));
  for (float scale : {2.f, -1.f, 0.5f}) {
    std::vector<float> in = {1, -3};
    {
      loom_tensor_t t[2] = {host_tensor(LOOM_DTYPE_FLOAT32, {2}, in.data(), sizeof(float) * 2),
                            host_tensor(LOOM_DTYPE_FLOAT32, {}, &scale, sizeof(float))};
      std::vector<Tensor> out = exe.run_graph(std::span<const loom_tensor_t>(t, 2));
      const float cube = scale * scale * scale;
      EXPECT_EQ(floats_of(out.at(0)), (std::vector<float>{2 * cube, -2 * cube})) << scale;
    }
    EXPECT_EQ(live_bytes(), 0u);
  }
}

}  // namespace
}  // namespace loom::cpu
