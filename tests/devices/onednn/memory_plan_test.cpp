// The onednn device's activation arena: one block, offsets shared by tensors whose lifetimes
// do not overlap. Inverted residual blocks (expand 1x1, depthwise 3x3, project 1x1, residual
// Add) mix tensor sizes and keep a residual alive across a block, which is where reuse by whole
// blocks wasted memory; the outputs must still match cpu, and the arena the device reports in
// its debug log ("memory: activations N KiB ...") must not exceed what is alive at once.
#include <gtest/gtest.h>

#include <cstdio>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

// The activation arena (KiB) of the model's one onednn subgraph, read from the debug log.
size_t activation_arena_kib(const ModelBuilder& m, const Inputs& inputs) {
  std::vector<size_t> arenas;
  for (const std::string& message :
       run_model_capturing_log(m, inputs, onednn_only("dw_fusion=off"), "onednn")) {
    size_t kib = 0;
    if (std::sscanf(message.c_str(), "memory: activations %zu KiB", &kib) == 1)
      arenas.push_back(kib);
  }
  EXPECT_EQ(arenas.size(), 1u) << "one onednn subgraph expected";
  return arenas.empty() ? 0 : arenas.front();
}

// Appends an inverted residual block on `in` (channels c, expansion e) and returns its output.
std::string inverted_residual(ModelBuilder& m, const std::string& in, int64_t c, int64_t e,
                              int block) {
  const std::string p = "b" + std::to_string(block) + "_";
  const uint32_t seed = 10 * static_cast<uint32_t>(block);
  // Weights within +-1/fan-in keep activations near 1 through the chain, so the comparison
  // with cpu is not dominated by rounding that grows with magnitude.
  auto weights = [](std::vector<int64_t> shape, int64_t fan_in, uint32_t s) {
    const double bound = 1.0 / static_cast<double>(fan_in);
    return random_tensor(LOOM_DTYPE_FLOAT32, std::move(shape), s, -bound, 2 * bound);
  };
  m.initializer(p + "we", weights({c * e, c, 1, 1}, c, seed + 1));
  m.initializer(p + "wd", weights({c * e, 1, 3, 3}, 9, seed + 2));
  m.initializer(p + "wp", weights({c, c * e, 1, 1}, c * e, seed + 3));
  m.node("Conv", {in, p + "we"}, {p + "e"});
  m.node("Relu", {p + "e"}, {p + "er"});
  m.node("Conv", {p + "er", p + "wd"}, {p + "d"}).i("group", c * e).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {p + "d"}, {p + "dr"});
  m.node("Conv", {p + "dr", p + "wp"}, {p + "p"});
  m.node("Add", {p + "p", in}, {p + "out"});
  return p + "out";
}

TEST(OnednnMemoryPlan, InvertedResidualChainSharesOneArena) {
  // 16 channels of 24x24 are 36 KiB; the expanded tensors (x6) 216 KiB.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 24, 24});
  m.initializer("w0", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 1, 1}, 3));
  m.node("Conv", {"x", "w0"}, {"stem"});
  std::string t = "stem";
  for (int block = 1; block <= 3; ++block) t = inverted_residual(m, t, 16, 6, block);
  m.node("Relu", {t}, {"y"});
  m.output("y");
  Inputs inputs = {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 24, 24}, 1)}};
  expect_matches_cpu(m, inputs, onednn_only());
  expect_matches_cpu(m, inputs, onednn_only("dw_fusion=off"));

  // At most alive at once: the block's input (kept for the residual), the expanded tensor and
  // the depthwise output (whose step also reads the expanded one): 36 + 216 + 216 KiB. Without
  // reuse the nine expanded and depthwise tensors alone would take 1944 KiB.
  const size_t arena = activation_arena_kib(m, inputs);
  EXPECT_GT(arena, 0u);
  EXPECT_LE(arena, 36u + 216u + 216u);
}

// What the debug log says of one onednn subgraph's memory, in KiB.
struct MemoryReport {
  size_t arena = 0, constants = 0, huge_arena = 0, huge_constants = 0;
};
MemoryReport memory_report(const ModelBuilder& m, const Inputs& inputs,
                           const std::string& options) {
  std::vector<MemoryReport> reports;
  for (const std::string& message :
       run_model_capturing_log(m, inputs, onednn_only(options), "onednn")) {
    MemoryReport r;
    if (std::sscanf(message.c_str(),
                    "memory: activations %zu KiB in one arena, constants %zu KiB; on huge pages: "
                    "activations %zu KiB, constants %zu KiB",
                    &r.arena, &r.constants, &r.huge_arena, &r.huge_constants) == 4)
      reports.push_back(r);
  }
  EXPECT_EQ(reports.size(), 1u) << "one onednn subgraph expected";
  return reports.empty() ? MemoryReport{} : reports.front();
}

// Constants beyond the first 2 MiB share a huge-page chunk, and an arena of 2 MiB or more is
// one huge-page block. Overlapping sub-allocations would corrupt weights, so the outputs must
// match cpu with huge pages and without.
TEST(OnednnMemoryPlan, HugePageBlocksHoldEveryConstantAndActivation) {
  const int64_t rows = 256;
  const std::vector<std::pair<int64_t, int64_t>> layers = {
      {512, 1024}, {1024, 1280}, {1280, 384}, {384, 512}, {512, 128}};
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, rows, layers.front().first});
  std::string t = "x";
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto [k, n] = layers[i];
    const std::string p = "l" + std::to_string(i);
    const double bound = 1.0 / static_cast<double>(k);
    m.initializer(p + "w", random_tensor(LOOM_DTYPE_FLOAT32, {k, n}, 20 + static_cast<uint32_t>(i),
                                         -bound, 2 * bound));
    m.initializer(p + "b", random_tensor(LOOM_DTYPE_FLOAT32, {n}, 40 + static_cast<uint32_t>(i)));
    m.node("MatMul", {t, p + "w"}, {p + "m"});
    m.node("Add", {p + "m", p + "b"}, {p + "a"});
    m.node("Relu", {p + "a"}, {p + "r"});
    t = p + "r";
  }
  m.output(t);
  Inputs inputs = {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, rows, 512}, 7)}};
  expect_matches_cpu(m, inputs, onednn_only());
  expect_matches_cpu(m, inputs, onednn_only("huge_pages=off"));

  // Weights: 2 + 5 + 1.9 + 0.75 + 0.25 MiB (~10 MiB); the widest layer alone keeps 1 MiB of
  // input and 1.25 MiB of output alive.
  const MemoryReport huge = memory_report(m, inputs, "");
  EXPECT_GE(huge.constants, 9u << 10);
  EXPECT_GE(huge.arena, 2u << 10);
  EXPECT_EQ(huge.huge_arena, huge.arena);
  // Everything after the first 2 MiB of constants.
  EXPECT_GE(huge.huge_constants, huge.constants - (2u << 10));
  EXPECT_LT(huge.huge_constants, huge.constants);

  const MemoryReport plain = memory_report(m, inputs, "huge_pages=off");
  EXPECT_EQ(plain.constants, huge.constants);
  EXPECT_EQ(plain.arena, huge.arena);
  EXPECT_EQ(plain.huge_arena, 0u);
  EXPECT_EQ(plain.huge_constants, 0u);
}

}  // namespace
}  // namespace loom::onednn_testing
