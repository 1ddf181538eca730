// Dynamic quantization on the onednn device (onnxruntime's quantize_dynamic: the
// DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul pattern as one int8 inner product)
// against the cpu reference, and the refusal of what lies outside the pattern.
#include <gtest/gtest.h>

#include "quantized_test_util.hpp"

namespace loom::onednn_testing {
namespace {

// onnxruntime's dynamic quantization of x W + b: DynamicQuantizeLinear(x) -> MatMulInteger(xq,
// w, xz, 0) -> Cast -> Mul by (x_scale * w_scale) -> Add bias, as one int8 matmul with run-time
// scales and x's zero point as a bias. DynamicQuantizeLinear's three results are graph outputs
// too: they must be the cpu device's bytes exactly. The product is compared in float (the int32
// sum is exact; the scaling differs by float rounding). Without VNNI the weights stay within
// -64..63 so that VPMADDUBSW's pair sums cannot saturate (255 * 64 * 2 < 32767), since the
// quantized x spans the whole uint8 range by construction.
void check_dynamic_matmul(std::vector<int64_t> x_shape, bool per_column) {
  const int64_t k = x_shape.back(), n = 24;
  const int w_max = has_vnni() ? 127 : 63;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, x_shape);
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, {k, n}, 5, -w_max - 1, w_max));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {}, {0}));
  m.initializer(
      "ws", per_column ? random_tensor(LOOM_DTYPE_FLOAT32, {n}, 6, 0.002, 0.006) : scalar(0.004f));
  m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {n}, 7));
  m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
  m.node("MatMulInteger", {"xq", "w", "xz", "wz"}, {"acc"});
  m.node("Cast", {"acc"}, {"accf"}).i("to", LOOM_DTYPE_FLOAT32);
  m.node("Mul", {"xs", "ws"}, {"s"});
  m.node("Mul", {"accf", "s"}, {"y0"});
  m.node("Add", {"y0", "bias"}, {"y"});
  for (const char* out : {"y", "xq", "xs", "xz"}) m.output(out);
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, x_shape, 8, -3.0, 5.0)}};
  Tolerance t{1e-5, 1e-4};
  expect_matches_cpu(m, in, onednn_only(), &t);
  expect_int8_step(m, in, "MatMulInteger");
}

TEST(OnednnQuantDynamic, MatMulIntegerPerTensor) {
  check_dynamic_matmul({2, 7, 32}, false);
}
TEST(OnednnQuantDynamic, MatMulIntegerPerColumn) {
  check_dynamic_matmul({5, 48}, true);
}
// 40,040 elements: above the size where the quantization splits over the OpenMP team, in
// slices that are not a multiple of the vector width, with a scalar tail: the same bytes.
TEST(OnednnQuantDynamic, LargeActivationQuantizedInParallel) {
  check_dynamic_matmul({40, 1001}, true);
}

// A chain outside the pattern (the Cast's float result read by a second node) is not claimed:
// onednn alone refuses it with the reason, and onednn,cpu runs it on cpu.
TEST(OnednnQuantDynamic, OutsideThePatternIsRefused) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 16});
  m.initializer("w", random_tensor(LOOM_DTYPE_INT8, {16, 8}, 5, -64, 63));
  m.initializer("ws", scalar(0.004f));
  m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
  m.node("MatMulInteger", {"xq", "w", "xz"}, {"acc"});
  m.node("Cast", {"acc"}, {"accf"}).i("to", LOOM_DTYPE_FLOAT32);
  m.node("Mul", {"ws", "xs"}, {"s"});
  m.node("Mul", {"accf", "s"}, {"y"});
  m.node("Neg", {"accf"}, {"z"});
  m.output("y");
  m.output("z");
  expect_refused(m, {4, 16}, "MatMulInteger's Cast not followed by a Mul alone");
}

}  // namespace
}  // namespace loom::onednn_testing
