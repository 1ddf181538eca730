// MatMul and Gemm on the onednn device: batched, broadcast batches, constant and runtime
// weights, fused bias, GELU (both exported orders), attention scaling and masks.
#include <gtest/gtest.h>

#include <cmath>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

void check_matmul(std::vector<int64_t> a, std::vector<int64_t> b, bool constant_b) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, a);
  std::vector<std::pair<std::string, Tensor>> inputs{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, a, 1)}};
  if (constant_b) {
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, b, 2));
  } else {
    m.input("b", LOOM_DTYPE_FLOAT32, b);
    inputs.emplace_back("b", random_tensor(LOOM_DTYPE_FLOAT32, b, 2));
  }
  m.node("MatMul", {"x", "b"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, inputs, onednn_only());
}

TEST(OnednnMatMul, TwoDimensional) {
  check_matmul({7, 13}, {13, 5}, true);
}
TEST(OnednnMatMul, BatchedConstantWeights) {
  check_matmul({2, 9, 24}, {24, 17}, true);
}
TEST(OnednnMatMul, BatchedRuntimeOperands) {
  check_matmul({3, 4, 6, 8}, {3, 4, 8, 5}, false);
}
TEST(OnednnMatMul, BroadcastBatch) {
  check_matmul({2, 1, 5, 6}, {1, 3, 6, 4}, false);
}
TEST(OnednnMatMul, RankTwoTimesRankFour) {
  check_matmul({5, 6}, {2, 3, 6, 4}, false);
}

// x W + b -> GELU: bias as the primitive's bias, GELU as an eltwise post-op.
void check_gelu(bool half_first) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 10, 32});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 48}, 2, -0.3, 0.3));
  m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {48}, 3));
  m.initializer("sqrt2", float_tensor({}, {std::sqrt(2.f)}));
  m.initializer("one", float_tensor({}, {1.f}));
  m.initializer("half", float_tensor({}, {0.5f}));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"h"});
  if (half_first) {
    m.node("Mul", {"h", "half"}, {"hh"});
    m.node("Div", {"h", "sqrt2"}, {"d"});
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"e", "one"}, {"p"});
    m.node("Mul", {"hh", "p"}, {"y"});
  } else {
    m.node("Div", {"h", "sqrt2"}, {"d"});
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"e", "one"}, {"p"});
    m.node("Mul", {"h", "p"}, {"q"});
    m.node("Mul", {"q", "half"}, {"y"});
  }
  m.output("y");
  check_unary_model(m, {1, 10, 32});
}

TEST(OnednnMatMul, BiasAndGeluTorchOrder) {
  check_gelu(false);
}
TEST(OnednnMatMul, BiasAndGeluHalfFirst) {
  check_gelu(true);
}

// An Erf that is not part of the GELU pattern compile rewrites (another scale, no final
// product, the halving elsewhere) stays on cpu: the session compiles and matches the cpu device.
TEST(OnednnMatMul, ErfOutsideTheGeluPatternFallsBackToCpu) {
  for (int variant = 0; variant < 3; ++variant) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 8});
    m.initializer("scale", float_tensor({}, {variant == 0 ? 0.3f : std::sqrt(2.f)}));
    m.initializer("one", float_tensor({}, {1.f}));
    m.initializer("third", float_tensor({}, {0.3f}));
    m.node(variant == 0 ? "Mul" : "Div", {"x", "scale"}, {"d"});
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"e", "one"}, {"p"});
    if (variant == 1) {
      m.node("Mul", {"p", "third"}, {"y"});  // scaled by 0.3, not multiplied by x / 2
    } else {
      m.node("Mul", {"x", "p"}, {"y"});  // x * (1 + erf(..)) without the halving
    }
    m.output("y");
    SCOPED_TRACE("variant " + std::to_string(variant));
    RunOptions with_fallback = onednn_only();
    with_fallback.devices = "onednn,cpu";
    with_fallback.no_fallback = false;
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 8}, 1)}}, with_fallback);
    // Alone, onednn names the Erf it leaves out.
    try {
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 8}, 1)}}, onednn_only());
      ADD_FAILURE() << "onednn claimed an Erf it cannot compile";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("Erf outside the GELU pattern"), std::string::npos)
          << e.what();
    }
  }
}

// Attention scores: Q K^T / sqrt(d) + mask -> Softmax -> x V, with the transposes.
TEST(OnednnMatMul, AttentionBlock) {
  ModelBuilder m;
  m.input("q", LOOM_DTYPE_FLOAT32, {1, 12, 4, 8});
  m.input("k", LOOM_DTYPE_FLOAT32, {1, 12, 4, 8});
  m.input("v", LOOM_DTYPE_FLOAT32, {1, 12, 4, 8});
  m.input("mask", LOOM_DTYPE_FLOAT32, {1, 1, 1, 12});
  m.initializer("scale", float_tensor({}, {std::sqrt(8.f)}));
  m.node("Transpose", {"q"}, {"qt"}).ints("perm", {0, 2, 1, 3});
  m.node("Transpose", {"k"}, {"kt"}).ints("perm", {0, 2, 3, 1});
  m.node("MatMul", {"qt", "kt"}, {"s"});
  m.node("Div", {"s", "scale"}, {"sd"});
  m.node("Add", {"sd", "mask"}, {"sm"});
  m.node("Softmax", {"sm"}, {"p"}).i("axis", -1);
  m.node("Transpose", {"v"}, {"vt"}).ints("perm", {0, 2, 1, 3});
  m.node("MatMul", {"p", "vt"}, {"o"});
  m.node("Transpose", {"o"}, {"y"}).ints("perm", {0, 2, 1, 3});
  m.output("y");
  expect_matches_cpu(m,
                     {{"q", random_tensor(LOOM_DTYPE_FLOAT32, {1, 12, 4, 8}, 1)},
                      {"k", random_tensor(LOOM_DTYPE_FLOAT32, {1, 12, 4, 8}, 2)},
                      {"v", random_tensor(LOOM_DTYPE_FLOAT32, {1, 12, 4, 8}, 3)},
                      {"mask", random_tensor(LOOM_DTYPE_FLOAT32, {1, 1, 1, 12}, 4, -3, 0)}},
                     onednn_only());
}

void check_gemm(bool trans_a, bool trans_b, float alpha, float beta, std::vector<int64_t> c) {
  GemmShape shape{6, 9, 5, trans_a, trans_b, alpha, beta, std::move(c)};
  expect_matches_cpu(gemm_model(shape),
                     {{"a", random_tensor(LOOM_DTYPE_FLOAT32, gemm_input_shape(shape), 1)}},
                     onednn_only());
}

TEST(OnednnGemm, TransposesScalesAndBiases) {
  check_gemm(false, false, 1.f, 1.f, {});
  check_gemm(false, true, 1.f, 1.f, {5});
  check_gemm(true, false, 0.5f, 2.f, {1, 5});
  check_gemm(true, true, 2.f, 1.f, {6, 5});
  check_gemm(false, true, 1.f, 1.f, {6, 1});
}

TEST(OnednnGemm, FollowedByTanh) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 16});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {8, 16}, 2));
  m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 3));
  m.node("Gemm", {"x", "w", "c"}, {"g"}).i("transB", 1);
  m.node("Tanh", {"g"}, {"y"});
  m.output("y");
  check_unary_model(m, {3, 16});
}

// x (dims `x_dims`, last axis K) times a constant [K, n] matrix, then (when `activated`) a bias
// Add and a Relu, then the Add of a `residual` input: the model and its inputs.
struct ResidualMatmul {
  ModelBuilder model;
  std::vector<std::pair<std::string, Tensor>> inputs;
};
ResidualMatmul residual_matmul(const std::vector<int64_t>& x_dims,
                               const std::vector<int64_t>& residual_dims, int64_t n,
                               bool activated) {
  ResidualMatmul r;
  ModelBuilder& m = r.model;
  m.input("x", LOOM_DTYPE_FLOAT32, x_dims);
  m.input("residual", LOOM_DTYPE_FLOAT32, residual_dims);
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {x_dims.back(), n}, 2, -0.2, 0.4));
  m.node("MatMul", {"x", "w"}, {"p"});
  std::string product = "p";
  if (activated) {
    m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {n}, 3));
    m.node("Add", {"bias", "p"}, {"pb"});
    m.node("Relu", {"pb"}, {"r"});
    product = "r";
  }
  m.node("Add", {"residual", product}, {"y"});
  m.output("y");
  r.inputs = {{"x", random_tensor(LOOM_DTYPE_FLOAT32, x_dims, 1)},
              {"residual", random_tensor(LOOM_DTYPE_FLOAT32, residual_dims, 4)}};
  return r;
}

// [b.., M, K] x [K, N] runs as one [b..*M, K] x [K, N] product (ViT's attention projection is
// [197, 1, 768] x [768, 2304]). A per-column bias, an activation and an Add of the result's
// full shape (a residual) stay fused; an Add whose operand broadcasts along some of the collapsed
// axes runs after it, and so do runtime and broadcast B operands.
TEST(OnednnMatMul, BatchesOfRowsAgainstOneMatrix) {
  check_matmul({37, 1, 24}, {24, 40}, true);
  check_matmul({3, 5, 7, 16}, {16, 9}, false);
  check_matmul({4, 3, 16}, {1, 16, 9}, true);
  ResidualMatmul fused = residual_matmul({19, 1, 32}, {19, 1, 48}, 48, true);
  expect_matches_cpu(fused.model, fused.inputs, onednn_only());
  std::vector<std::string> steps = compiled_steps(fused.model, fused.inputs);
  ASSERT_GE(steps.size(), 1u);
  EXPECT_EQ(steps[0].rfind("MatMul ", 0), 0u) << steps[0];
  EXPECT_NE(steps[0].find("3 fused"), std::string::npos) << steps[0];  // bias, Relu, residual
  for (const std::string& s : steps) EXPECT_NE(s.rfind("Add ", 0), 0u) << s;

  // The residual broadcasts along the batch axis: the Add runs after the product.
  ResidualMatmul broadcast = residual_matmul({4, 5, 32}, {1, 5, 48}, 48, false);
  expect_matches_cpu(broadcast.model, broadcast.inputs, onednn_only());
  bool separate_add = false;
  for (const std::string& s : compiled_steps(broadcast.model, broadcast.inputs))
    separate_add = separate_add || s.rfind("Add ", 0) == 0;
  EXPECT_TRUE(separate_add);
}

// A batch of one against a constant matrix is computed in 2-D, where oneDNN picks a blocked
// layout for the weights (3-D constant weights stay plain in oneDNN 2.6: BERT's intermediate
// projection ran at half speed). Bias, activation and residual stay fused; the result matches
// the cpu device for N a multiple of 4 KiB (the case plain weights ran slowest) and not.
TEST(OnednnMatMul, BatchOfOneAgainstConstantMatrix) {
  for (int64_t n : {int64_t{1024}, int64_t{77}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    ResidualMatmul r = residual_matmul({1, 9, 64}, {1, 9, n}, n, true);
    expect_matches_cpu(r.model, r.inputs, onednn_only());
    std::vector<std::string> steps = compiled_steps(r.model, r.inputs);
    // The 2-D result is the graph output's bytes: no copy into the output's shape.
    ASSERT_EQ(steps.size(), 1u) << steps.back();
    EXPECT_EQ(steps[0].rfind("MatMul ", 0), 0u) << steps[0];
    EXPECT_NE(steps[0].find("3 fused"), std::string::npos) << steps[0];
  }
}

// BERT's attention: the per-head Transposes of Q, K and V are read by the MatMuls in place
// (permuted views; oneDNN's brgemm takes those strides) and the head merge after x V is written
// straight into the Transpose's output: no Transpose step, no reference kernel. A Transpose
// that something other than a MatMul reads, and permutations the kernels cannot read in place
// (then reordered at the MatMul), still give the cpu device's answer.
TEST(OnednnMatMul, AttentionTransposesAreViews) {
  const int64_t t = 20, h = 4, d = 16;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, t, h * d});
  m.initializer("shape", int64_tensor({4}, {1, t, h, d}));
  m.initializer("merged", int64_tensor({3}, {1, t, h * d}));
  m.initializer("scale", float_tensor({}, {4.f}));
  uint64_t seed = 2;
  for (const char* name : {"q", "k", "v"}) {
    std::string w = std::string("w") + name;
    m.initializer(w, random_tensor(LOOM_DTYPE_FLOAT32, {h * d, h * d}, seed++, -0.2, 0.2));
    m.node("MatMul", {"x", w}, {std::string(name) + "p"});
    m.node("Reshape", {std::string(name) + "p", "shape"}, {std::string(name) + "r"});
  }
  m.node("Transpose", {"qr"}, {"qt"}).ints("perm", {0, 2, 1, 3});
  m.node("Transpose", {"kr"}, {"kt"}).ints("perm", {0, 2, 3, 1});
  m.node("Transpose", {"vr"}, {"vt"}).ints("perm", {0, 2, 1, 3});
  m.node("MatMul", {"qt", "kt"}, {"s"});
  m.node("Div", {"s", "scale"}, {"sd"});
  m.node("Softmax", {"sd"}, {"p"}).i("axis", -1);
  m.node("MatMul", {"p", "vt"}, {"o"});
  m.node("Transpose", {"o"}, {"om"}).ints("perm", {0, 2, 1, 3});
  m.node("Reshape", {"om", "merged"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> inputs{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, t, h * d}, 1)}};
  expect_matches_cpu(m, inputs, onednn_only());
  for (const std::string& step : compiled_steps(m, inputs)) {
    EXPECT_EQ(step.rfind("Transpose ", 0), std::string::npos) << step;
    EXPECT_EQ(step.find("ref:"), std::string::npos) << step;
  }

  // Read by a MatMul and by a Relu: a copy, as before. Permutations that move the contracted
  // axis outward: read in place or reordered, never the reference kernel.
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 2, 1, 3}, {2, 0, 1, 3}, {0, 3, 1, 2}, {1, 2, 3, 0}}) {
    SCOPED_TRACE("perm " + std::to_string(perm[0]) + std::to_string(perm[1]) +
                 std::to_string(perm[2]) + std::to_string(perm[3]));
    ModelBuilder m2;
    m2.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 5, 6});
    m2.node("Relu", {"a"}, {"ar"});
    m2.node("Transpose", {"ar"}, {"at"}).ints("perm", perm);
    std::vector<int64_t> ad{2, 3, 5, 6}, td;
    for (int64_t p : perm) td.push_back(ad[static_cast<size_t>(p)]);
    m2.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {td[3], 7}, 5));
    m2.node("MatMul", {"at", "w"}, {"y"});
    m2.output("y");
    m2.node("Relu", {"at"}, {"z"});
    m2.output("z");
    std::vector<std::pair<std::string, Tensor>> in2{
        {"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 6}, 1, -1, 1)}};
    expect_matches_cpu(m2, in2, onednn_only());
    ModelBuilder m3;
    m3.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 5, 6});
    m3.node("Relu", {"a"}, {"ar"});
    m3.node("Transpose", {"ar"}, {"at"}).ints("perm", perm);
    m3.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {td[3], 7}, 5));
    m3.node("MatMul", {"at", "w"}, {"y"});
    m3.output("y");
    expect_matches_cpu(m3, in2, onednn_only());
    for (const std::string& step : compiled_steps(m3, in2))
      EXPECT_EQ(step.find("ref:"), std::string::npos) << step;
  }
}

// One row times a constant matrix (a batch-1 classifier) runs the device's own matvec kernel
// (matvec.hpp) in every Gemm form: transposes, alpha, beta with a bias C, no C; column counts
// that are not a multiple of its 16-column blocks, row counts that are not a multiple of its
// 4-row unrolling. Outputs match cpu.
TEST(OnednnMatVec, GemmOfOneRow) {
  for (const GemmShape& shape : {GemmShape{1, 1280, 1000, false, true, 1.f, 1.f, {1000}},
                                 GemmShape{1, 37, 33, false, false, 1.f, 1.f, {}},
                                 GemmShape{1, 3, 1, true, true, 0.5f, 2.f, {1}},
                                 GemmShape{1, 64, 16, true, false, 2.f, 0.25f, {1, 16}},
                                 GemmShape{1, 1, 5, false, true, -1.f, 1.f, {5}},
                                 GemmShape{1, 130, 17, false, false, 1.f, 0.f, {17}}}) {
    SCOPED_TRACE("k " + std::to_string(shape.k) + " n " + std::to_string(shape.n));
    ModelBuilder m = gemm_model(shape);
    std::vector<std::pair<std::string, Tensor>> feeds{
        {"a", random_tensor(LOOM_DTYPE_FLOAT32, gemm_input_shape(shape), 1)}};
    expect_matches_cpu(m, feeds, onednn_only());
    std::vector<std::string> steps = compiled_steps(m, feeds);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_NE(steps[0].find("[loom matvec"), std::string::npos) << steps[0];
  }
}

// MatMul of a [1, 1, K] or [1, K] row with its bias Add absorbed; a following Relu runs as its own
// step. A C that is not a per-column bias (a scalar here) keeps oneDNN's matmul, as do two rows.
TEST(OnednnMatVec, MatMulRowsWithBiasAndTheFormsLeftToOneDnn) {
  for (std::vector<int64_t> a : {std::vector<int64_t>{1, 1, 96}, std::vector<int64_t>{1, 96}}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, a);
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {96, 40}, 2, -0.3, 0.3));
    m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {40}, 3));
    m.node("MatMul", {"x", "w"}, {"p"});
    m.node("Add", {"p", "bias"}, {"pb"});
    m.node("Relu", {"pb"}, {"y"});
    m.output("y");
    std::vector<std::pair<std::string, Tensor>> feeds{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, a, 1, -1, 1)}};
    expect_matches_cpu(m, feeds, onednn_only());
    std::vector<std::string> steps = compiled_steps(m, feeds);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_NE(steps[0].find("[loom matvec, 1 fused]"), std::string::npos) << steps[0];
    EXPECT_EQ(steps[1].rfind("Relu ", 0), 0u) << steps[1];
  }
  for (std::vector<int64_t> c : {std::vector<int64_t>{1}, std::vector<int64_t>{}}) {
    std::vector<int64_t> a = c.empty() ? std::vector<int64_t>{2, 24} : std::vector<int64_t>{1, 24};
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, a);
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {24, 20}, 2));
    std::vector<std::string> inputs{"x", "b"};
    if (!c.empty()) {
      m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, c, 3));
      inputs.push_back("c");
    }
    m.node("Gemm", inputs, {"y"});
    m.output("y");
    std::vector<std::pair<std::string, Tensor>> feeds{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, a, 1)}};
    expect_matches_cpu(m, feeds, onednn_only());
    for (const std::string& step : compiled_steps(m, feeds))
      EXPECT_EQ(step.find("matvec"), std::string::npos) << step;
  }
}

// ViT's residual Add reads a Transpose of [197, 1, 768] to [1, 197, 768]: row-major bytes whose
// descriptor says "bac". oneDNN 2.6 ran its reference binary kernel on it (5 ms an Add).
TEST(OnednnBinary, TransposeOfUnitExtentsGetsAJitKernel) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {50, 1, 64});
  m.input("z", LOOM_DTYPE_FLOAT32, {1, 50, 64});
  m.node("Transpose", {"x"}, {"t"}).ints("perm", {1, 0, 2});
  m.node("Add", {"t", "z"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> inputs{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {50, 1, 64}, 1)},
      {"z", random_tensor(LOOM_DTYPE_FLOAT32, {1, 50, 64}, 2)}};
  expect_matches_cpu(m, inputs, onednn_only());
  for (const std::string& step :
       run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn"))
    EXPECT_EQ(step.find("ref:"), std::string::npos) << step;
}

}  // namespace
}  // namespace loom::onednn_testing
