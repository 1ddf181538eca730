// The neon device as a whole: a MobileNetV2 block runs on neon alone (in f32, and in f16 where
// the CPU has ARMv8.2 FP16 arithmetic), threads do not change results, unsupported nodes fall
// back to cpu (and are refused without fallback), options are checked.
#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

// Inverted residual block: 1x1 expand, ReLU6, depthwise 3x3, ReLU6, 1x1 project, residual add,
// then the classifier head.
ModelBuilder mobilenet_block() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 15, 15});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {48, 8, 1, 1}, 1));
  m.initializer("b1", random_tensor(LOOM_DTYPE_FLOAT32, {48}, 2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {48, 1, 3, 3}, 3));
  m.initializer("b2", random_tensor(LOOM_DTYPE_FLOAT32, {48}, 4));
  m.initializer("w3", random_tensor(LOOM_DTYPE_FLOAT32, {8, 48, 1, 1}, 5));
  m.initializer("b3", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 6));
  m.initializer("lo", float_tensor({}, {0.0f}));
  m.initializer("hi", float_tensor({}, {6.0f}));
  m.initializer("fc", random_tensor(LOOM_DTYPE_FLOAT32, {10, 8}, 7));
  m.initializer("fcb", random_tensor(LOOM_DTYPE_FLOAT32, {10}, 8));
  m.node("Conv", {"x", "w1", "b1"}, {"e"});
  m.node("Clip", {"e", "lo", "hi"}, {"e6"});
  m.node("Conv", {"e6", "w2", "b2"}, {"d"}).i("group", 48).ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"d", "lo", "hi"}, {"d6"});
  m.node("Conv", {"d6", "w3", "b3"}, {"p"});
  m.node("Add", {"p", "x"}, {"r"});
  m.node("GlobalAveragePool", {"r"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  m.node("Gemm", {"f", "fc", "fcb"}, {"y"}).i("transB", 1);
  m.node("Softmax", {"y"}, {"prob"});
  m.output("prob");
  m.output("r");
  return m;
}

TEST(NeonDevice, MobileNetBlockRunsOnNeonAlone) {
  expect_neon_matches_cpu(mobilenet_block(),
                          {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 15, 15}, 9)}});
}

// Symbolic batch, height and width: each input-shape signature is planned for its shapes and
// runs wholly on neon (device_test_support's expect_symbolic_model_runs_on).
TEST(NeonDevice, SymbolicShapesArePlannedPerShapeOnTheDevice) {
  device_testing::expect_symbolic_model_runs_on("neon");
}

// Models hostile at run time (docs/limits.md) with neon first in the device list.
TEST(NeonDevice, HostileRuntimeModelsEndInAClearError) {
  device_testing::expect_hostile_runtime_models_fail_cleanly("neon");
}

// neon polls the run's cancel flag and deadline before every step.
TEST(NeonDevice, ALongSubgraphStopsWhenCancelled) {
  device_testing::expect_long_subgraph_cancelled("neon");
}

TEST(NeonDevice, Fp16GemmKernelsWhereTheCpuHasThem) {
  RunOptions f16 = on_neon();
  f16.device_options = "precision=f16";
  // Without ARMv8.2 FP16 arithmetic (qemu's default CPU has it) the device computes in f32,
  // which meets the f16 tolerance as well.
  // fp16 operands (11-bit mantissas), fp32 accumulation every 64 products: the f16 tolerance
  // of the shared helpers, scaled for the dot-product lengths of these layers.
  const device_testing::Tolerance tolerance{2e-2, 2e-2};
  device_testing::expect_matches_cpu(mobilenet_block(),
                                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 15, 15}, 11)}},
                                     f16, &tolerance);
  ModelBuilder gemm;  // a long dot product (K = 1280, as MobileNetV2's classifier)
  gemm.input("a", LOOM_DTYPE_FLOAT32, {3, 1280});
  gemm.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {37, 1280}, 12, -0.1, 0.1));
  gemm.node("Gemm", {"a", "b"}, {"y"}).i("transB", 1);
  gemm.input("m", LOOM_DTYPE_FLOAT32, {5, 1280});
  gemm.initializer("b2", random_tensor(LOOM_DTYPE_FLOAT32, {1280, 9}, 13, -0.1, 0.1));
  gemm.node("MatMul", {"m", "b2"}, {"z"});
  gemm.output("y");
  gemm.output("z");
  device_testing::expect_matches_cpu(gemm,
                                     {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1280}, 14)},
                                      {"m", random_tensor(LOOM_DTYPE_FLOAT32, {5, 1280}, 15)}},
                                     f16, &tolerance);
}

TEST(NeonDevice, ThreadCountDoesNotChangeResults) {
  // Each output element is computed by one thread in a fixed order: results are identical.
  auto path = mobilenet_block().save();
  Inputs inputs = {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 15, 15}, 10)}};
  auto one = device_testing::run_model(path, inputs, on_neon(1));
  auto four = device_testing::run_model(path, inputs, on_neon(4));
  std::filesystem::remove(path);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].bytes, four[i].bytes) << "output " << i;
}

ModelBuilder model_with_unsupported_op() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 9});
  m.node("Relu", {"x"}, {"r"});
  m.node("Erf", {"r"}, {"e"});  // no neon kernel
  m.node("Sigmoid", {"e"}, {"y"});
  m.output("y");
  return m;
}

TEST(NeonDevice, UnsupportedNodesFallBackToCpu) {
  RunOptions both;
  both.devices = "neon,cpu";
  device_testing::expect_matches_cpu(model_with_unsupported_op(),
                                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 9}, 1)}}, both);
}

TEST(NeonDevice, WithoutFallbackAnUnsupportedNodeIsRefused) {
  auto path = model_with_unsupported_op().save();
  EXPECT_THROW(device_testing::run_model(
                   path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 9}, 1)}}, on_neon()),
               std::exception);
  std::filesystem::remove(path);
}

TEST(NeonDevice, BadOptionsAreReportedByName) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  auto path = m.save();
  for (const char* options : {"threads=many", "precision=f8", "colour=blue", "neon.colour=blue"}) {
    RunOptions o = on_neon();
    o.device_options = options;
    try {
      device_testing::run_model(path, {{"x", float_tensor({4}, {1, -2, 3, -4})}}, o);
      ADD_FAILURE() << "option '" << options << "' was accepted";
    } catch (const std::exception& e) {
      std::string key = std::string(options).substr(0, std::string(options).find('='));
      key = key.substr(key.find('.') + 1);  // "neon.colour" is reported as 'colour'

      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  RunOptions ok = on_neon();
  ok.device_options = "threads=2;precision=f32";
  auto out = device_testing::run_model(path, {{"x", float_tensor({4}, {1, -2, 3, -4})}}, ok);
  EXPECT_EQ(device_testing::compare(out[0], float_tensor({4}, {1, 0, 3, 0})), "");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::neon_testing
