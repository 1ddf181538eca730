// Gemm and MatMul against the cpu device: transposes, bias broadcasts, alpha/beta, thin and
// tiled sizes with odd edges, batched and broadcast batches, 1-D operands, fused Relu.
#include <string>
#include <tuple>
#include <vector>

#include "opencl_test_support.hpp"

// Cases name only the fields they set (designated initializers); GCC 12 still warns about the
// omitted ones, which keep their defaults by design.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

struct GemmCase {
  std::string name;
  int64_t M, N, K;
  bool trans_a, trans_b;
  std::vector<int64_t> c;  // bias shape; empty = no bias
  float alpha = 1.0f, beta = 1.0f;
};

// Every case runs with each GEMM kernel family: "tiled" (local-memory tiles, the GPU choice)
// and "blocked" (register blocks, the CPU-driver choice), whatever the device here is.
class GemmTest : public ::testing::TestWithParam<std::tuple<GemmCase, std::string>> {};

TEST_P(GemmTest, MatchesCpu) {
  LOOM_REQUIRE_OPENCL();
  const GemmCase& g = std::get<0>(GetParam());
  RunOptions options = on_opencl();
  options.device_options = "gemm=" + std::get<1>(GetParam());
  GemmShape shape{g.M, g.K, g.N, g.trans_a, g.trans_b, g.alpha, g.beta, g.c};
  ModelBuilder m = gemm_model(shape);
  std::vector<int64_t> a = gemm_input_shape(shape);
  expect_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, a, 1)}}, options);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmTest,
    ::testing::Combine(::testing::Values(GemmCase{.name = "Classifier",
                                                  .M = 1,
                                                  .N = 100,
                                                  .K = 256,
                                                  .trans_a = false,
                                                  .trans_b = true,
                                                  .c = {100}},
                                         GemmCase{.name = "Square",
                                                  .M = 64,
                                                  .N = 64,
                                                  .K = 64,
                                                  .trans_a = false,
                                                  .trans_b = false,
                                                  .c = {64}},
                                         GemmCase{.name = "OddTiled",
                                                  .M = 70,
                                                  .N = 130,
                                                  .K = 91,
                                                  .trans_a = false,
                                                  .trans_b = false,
                                                  .c = {1, 130}},
                                         GemmCase{.name = "TransposedA",
                                                  .M = 33,
                                                  .N = 47,
                                                  .K = 19,
                                                  .trans_a = true,
                                                  .trans_b = false,
                                                  .c = {33, 1}},
                                         GemmCase{.name = "BothTransposed",
                                                  .M = 65,
                                                  .N = 17,
                                                  .K = 40,
                                                  .trans_a = true,
                                                  .trans_b = true,
                                                  .c = {65, 17}},
                                         GemmCase{.name = "ScalarBiasAlphaBeta",
                                                  .M = 20,
                                                  .N = 30,
                                                  .K = 10,
                                                  .trans_a = false,
                                                  .trans_b = true,
                                                  .alpha = 0.5f,
                                                  .beta = 2.0f},
                                         GemmCase{.name = "NoBias",
                                                  .M = 17,
                                                  .N = 80,
                                                  .K = 33,
                                                  .trans_a = false,
                                                  .trans_b = false}),
                       ::testing::Values("tiled", "blocked")),
    [](const auto& info) { return std::get<0>(info.param).name + "_" + std::get<1>(info.param); });

struct MatMulCase {
  std::string name;
  std::vector<int64_t> a, b;
};

class MatMulTest : public ::testing::TestWithParam<std::tuple<MatMulCase, std::string>> {};

TEST_P(MatMulTest, MatchesCpu) {
  LOOM_REQUIRE_OPENCL();
  const MatMulCase& c = std::get<0>(GetParam());
  RunOptions options = on_opencl();
  options.device_options = "gemm=" + std::get<1>(GetParam());
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, c.a);
  m.input("b", LOOM_DTYPE_FLOAT32, c.b);
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y");
  expect_matches_cpu(m,
                     {{"a", random_tensor(LOOM_DTYPE_FLOAT32, c.a, 1)},
                      {"b", random_tensor(LOOM_DTYPE_FLOAT32, c.b, 2)}},
                     options);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatMulTest,
    ::testing::Combine(
        ::testing::Values(MatMulCase{"Plain", {37, 29}, {29, 41}},
                          MatMulCase{"BatchFoldsIntoRows", {2, 3, 20, 16}, {16, 24}},
                          MatMulCase{"AttentionScores", {1, 4, 33, 16}, {1, 4, 16, 33}},
                          MatMulCase{"BroadcastLeftMatrix", {20, 16}, {3, 16, 18}},
                          MatMulCase{"BroadcastBothBatches", {2, 1, 5, 7}, {3, 7, 4}},
                          MatMulCase{"VectorLeft", {16}, {2, 16, 5}},
                          MatMulCase{"VectorRight", {3, 4, 16}, {16}},
                          MatMulCase{"Large", {130, 200}, {200, 150}}),
        ::testing::Values("tiled", "blocked")),
    [](const auto& info) { return std::get<0>(info.param).name + "_" + std::get<1>(info.param); });

TEST(OpenclGemmFusion, MatMulThenReluAndGemmThenClip) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {24, 32});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 40}, 2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {40, 20}, 3));
  m.initializer("lo", float_tensor({}, {-0.1f}));
  m.initializer("hi", float_tensor({}, {0.3f}));
  m.node("MatMul", {"a", "w"}, {"h"});
  m.node("Relu", {"h"}, {"r"});
  m.node("Gemm", {"r", "w2"}, {"g"});
  m.node("Clip", {"g", "lo", "hi"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {24, 32}, 1)}}, on_opencl());
}

}  // namespace
}  // namespace loom::device_testing
