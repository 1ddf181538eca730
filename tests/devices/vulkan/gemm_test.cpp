// Gemm and MatMul (tiled kernels, transposes, broadcast batches, fused bias and activation).
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

Tensor f32(std::vector<int64_t> shape, uint32_t seed) {
  return random_tensor(LOOM_DTYPE_FLOAT32, std::move(shape), seed);
}

struct GemmCase {
  int64_t m, k, n;
  bool ta, tb;
  std::vector<int64_t> c;  // empty: no C
  float alpha, beta;
};

TEST(VulkanGemm, TransposesBiasShapesAndScales) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const GemmCase cases[] = {
      {1, 2048, 1000, false, true, {1000}, 1, 1},  // a classifier head
      {37, 19, 70, false, false, {37, 70}, 0.5f, 2},
      {33, 65, 17, true, false, {}, 1, 1},
      {5, 3, 129, true, true, {1, 129}, 1, 0.25f},
      {64, 16, 64, false, false, {64, 1}, 1, 1},
      {1, 1, 1, false, false, {}, 3, 1},
  };
  for (const GemmCase& g : cases) {
    GemmShape shape{g.m, g.k, g.n, g.ta, g.tb, g.alpha, g.beta, g.c};
    ModelBuilder m = gemm_model(shape);
    std::vector<int64_t> as = gemm_input_shape(shape);
    SCOPED_TRACE(std::to_string(g.m) + "x" + std::to_string(g.k) + "x" + std::to_string(g.n));
    expect_matches_cpu(m, {{"a", f32(as, 1)}}, on_vulkan());
  }
}

struct MatMulCase {
  std::vector<int64_t> a, b;
};

TEST(VulkanGemm, MatMulBatchesBroadcastAndVectors) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const MatMulCase cases[] = {
      {{1, 12, 128, 64}, {1, 12, 64, 128}},  // attention scores
      {{1, 128, 768}, {768, 96}},            // a projection, B broadcast
      {{3, 1, 5, 7}, {1, 4, 7, 6}},          // both sides broadcast
      {{2, 3, 4, 5, 6}, {6, 2}},             // batch dims coalesce
      {{9}, {9, 4}},                         // vector times matrix
      {{2, 5, 9}, {9}},                      // matrix times vector
      {{70, 33}, {33, 65}},
  };
  for (const MatMulCase& c : cases) {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, c.a);
    m.input("b", LOOM_DTYPE_FLOAT32, c.b);
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    SCOPED_TRACE(std::to_string(c.a.size()) + "-D x " + std::to_string(c.b.size()) + "-D");
    expect_matches_cpu(m, {{"a", f32(c.a, 1)}, {"b", f32(c.b, 2)}}, on_vulkan());
  }
}

TEST(VulkanGemm, MatMulWithBiasAndActivationFused) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 10, 48});
  m.initializer("w", f32({48, 40}, 2));
  m.initializer("bias", f32({40}, 3));
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Add", {"h", "bias"}, {"hb"});
  m.node("Tanh", {"hb"}, {"y"});
  m.node("Add", {"bias", "h"}, {"z"});  // h has a second reader: nothing is fused
  m.output("y");
  m.output("z");
  expect_matches_cpu(m, {{"x", f32({2, 10, 48}, 1)}}, on_vulkan());
}

}  // namespace
}  // namespace loom::device_testing
