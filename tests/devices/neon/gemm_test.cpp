// Gemm and MatMul on the neon device against cpu: edge tiles (sizes not multiples of the 8x8
// micro-kernel), transposes, alpha/beta, C broadcasts, constant and run-time right operands.
#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

struct GemmCase {
  int64_t m, k, n;
  bool trans_a, trans_b;
  float alpha, beta;
  std::vector<int64_t> c_shape;  // empty: no C
};

TEST(NeonGemm, MatchesCpuOverShapesAndAttributes) {
  const GemmCase cases[] = {
      {1, 1280, 1000, false, true, 1.0f, 1.0f, {1000}},  // the MobileNetV2 classifier
      {8, 8, 8, false, false, 1.0f, 1.0f, {}},
      {7, 13, 9, false, false, 1.0f, 1.0f, {7, 9}},
      {17, 5, 23, true, false, 0.5f, 2.0f, {1, 23}},
      {3, 31, 1, false, true, 1.0f, 1.0f, {3, 1}},
      {9, 16, 12, true, true, -1.5f, 0.25f, {}},
      {5, 4, 6, false, false, 1.0f, 0.0f, {5, 6}},
      {4, 3, 10, false, true, 1.0f, 1.0f, {}},
  };
  uint32_t seed = 1;
  for (const GemmCase& g : cases) {
    SCOPED_TRACE("M=" + std::to_string(g.m) + " K=" + std::to_string(g.k) +
                 " N=" + std::to_string(g.n));
    GemmShape shape{g.m, g.k, g.n, g.trans_a, g.trans_b, g.alpha, g.beta, g.c_shape};
    uint32_t b_seed = ++seed, c_seed = g.c_shape.empty() ? seed : ++seed;
    ModelBuilder m = gemm_model(shape, b_seed, c_seed);
    std::vector<int64_t> a_shape = gemm_input_shape(shape);
    expect_neon_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, a_shape, ++seed)}});
  }
}

TEST(NeonGemm, RunTimeCIsBroadcast) {
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {6, 5});
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {5, 11}, 3));
  m.input("c", LOOM_DTYPE_FLOAT32, {11});
  m.node("Gemm", {"a", "b", "c"}, {"y"}).f("beta", 0.5f);
  m.output("y");
  expect_neon_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {6, 5}, 4)},
                              {"c", random_tensor(LOOM_DTYPE_FLOAT32, {11}, 5)}});
}

TEST(NeonMatMul, ConstantWeightsFoldBatchIntoRows) {
  const std::vector<std::vector<int64_t>> a_shapes = {{5, 7}, {2, 3, 9}, {2, 2, 3, 16}, {1, 1}};
  const std::vector<int64_t> n_values = {3, 12, 17, 1};
  uint32_t seed = 50;
  for (size_t i = 0; i < a_shapes.size(); ++i) {
    const auto& a = a_shapes[i];
    SCOPED_TRACE("case " + std::to_string(i));
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, a);
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {a.back(), n_values[i]}, ++seed));
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    expect_neon_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, a, ++seed)}});
  }
}

TEST(NeonMatMul, RunTimeOperandsAndEqualBatches) {
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 9, 10});
  m.input("b", LOOM_DTYPE_FLOAT32, {2, 3, 10, 13});
  m.input("c", LOOM_DTYPE_FLOAT32, {13, 4});
  m.node("MatMul", {"a", "b"}, {"ab"});
  m.node("MatMul", {"ab", "c"}, {"y"});
  m.output("y");
  expect_neon_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 9, 10}, 1)},
                              {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 10, 13}, 2)},
                              {"c", random_tensor(LOOM_DTYPE_FLOAT32, {13, 4}, 3)}});
}

}  // namespace
}  // namespace loom::neon_testing
