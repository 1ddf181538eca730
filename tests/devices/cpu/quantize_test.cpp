// Quantization kernels: rounding half to even, saturation, per-axis parameters, zero points,
// DynamicQuantizeLinear's derived parameters and the integer matmul / conv kernels.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

template <typename T>
Tensor scalar(T v) {
  return make_filled<T>({}, {v});
}

TEST(QuantizeKernels, QuantizeRoundsHalfToEvenAndSaturatesUint8) {
  KernelHarness h("QuantizeLinear", 13);
  h.input(make_filled<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, 3.4f, 600.f, -600.f, 1.f}));
  h.input(scalar<float>(1.f));
  h.input(scalar<uint8_t>(10));
  auto out = h.run(1);
  // 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0 (all + 10), saturation at 0 and 255.
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{10, 12, 12, 10, 13, 255, 0, 11}));
}

TEST(QuantizeKernels, QuantizeInt8PerAxis) {
  KernelHarness h("QuantizeLinear", 13);
  h.attr_int("axis", 1);
  h.input(make_filled<float>({1, 2, 2}, {1.f, -3.f, 100.f, -100.f}));
  h.input(make_filled<float>({2}, {1.f, 0.5f}));
  h.input(make_filled<int8_t>({2}, {0, -10}));
  auto out = h.run(1);
  EXPECT_EQ(values_of<int8_t>(out[0]), (std::vector<int8_t>{1, -3, 127, -128}));
}

TEST(QuantizeKernels, QuantizeWithoutZeroPointGivesUint8) {
  KernelHarness h("QuantizeLinear", 10);
  h.input(make_filled<float>({3}, {-1.f, 2.f, 7.f}));
  h.input(scalar<float>(2.f));
  auto out = h.run(1);
  EXPECT_EQ(out[0].view.dtype, LOOM_DTYPE_UINT8);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0, 1, 4}));
}

TEST(QuantizeKernels, QuantizePerAxisScaleOfWrongLengthIsAnError) {
  KernelHarness h("QuantizeLinear", 13);
  h.input(make_filled<float>({2, 3}, {0, 0, 0, 0, 0, 0}));
  h.input(make_filled<float>({2}, {1.f, 1.f}));  // axis 1 has 3 entries
  EXPECT_THROW(h.run(1), sdk::Error);
}

TEST(QuantizeKernels, DequantizeInt8AndInt32) {
  KernelHarness h("DequantizeLinear", 13);
  h.input(make_filled<int8_t>({3}, {-128, 0, 127}));
  h.input(scalar<float>(0.5f));
  h.input(scalar<int8_t>(-1));
  auto out = h.run(1);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{-63.5f, 0.5f, 64.f}));

  KernelHarness h32("DequantizeLinear", 13);
  h32.input(make_filled<int32_t>({2}, {-1000, 3}));
  h32.input(scalar<float>(0.25f));
  auto out32 = h32.run(1);
  EXPECT_EQ(values_of<float>(out32[0]), (std::vector<float>{-250.f, 0.75f}));
}

TEST(QuantizeKernels, DynamicQuantizeDerivesScaleAndZeroPoint) {
  KernelHarness h("DynamicQuantizeLinear", 11);
  h.input(make_filled<float>({4}, {-1.f, 0.f, 2.f, 4.1f}));
  auto out = h.run(3);
  const float scale = values_of<float>(out[1])[0];
  EXPECT_FLOAT_EQ(scale, 5.1f / 255.f);
  const uint8_t zp = values_of<uint8_t>(out[2])[0];
  EXPECT_EQ(zp, 50);  // round(1 / (5.1 / 255)) = round(50.0)
  auto q = values_of<uint8_t>(out[0]);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(q[1], 50);
  EXPECT_EQ(q[3], 255);
}

TEST(QuantizeKernels, MatMulIntegerWithPerRowAndPerColumnZeroPoints) {
  KernelHarness h("MatMulInteger", 10);
  h.input(make_filled<uint8_t>({2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int8_t>({2, 2}, {-1, 2, 3, -4}));
  h.input(make_filled<uint8_t>({2}, {1, 2}));  // per row of A
  h.input(make_filled<int8_t>({2}, {0, 1}));   // per column of B
  auto out = h.run(1);
  // A - zp = [[0,1],[1,2]]; B - zp = [[-1,1],[3,-5]]
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{3, -5, 5, -9}));
}

TEST(QuantizeKernels, QLinearMatMulBroadcastsBatchesAndRequantizes) {
  KernelHarness h("QLinearMatMul", 10);
  h.input(make_filled<uint8_t>({2, 1, 2}, {10, 20, 30, 40}));
  h.input(scalar<float>(0.1f));
  h.input(scalar<uint8_t>(10));
  h.input(make_filled<uint8_t>({2, 1}, {5, 7}));
  h.input(scalar<float>(1.f));
  h.input(scalar<uint8_t>(5));
  h.input(scalar<float>(0.5f));
  h.input(scalar<uint8_t>(100));
  auto out = h.run(1);
  // batch0: (0*0 + 10*2) * 0.1 / 0.5 = 4 -> 104; batch1: (20*0 + 30*2) * 0.2 = 12 -> 112
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{104, 112}));
  EXPECT_EQ(out[0].view.rank, 3);
}

TEST(QuantizeKernels, ConvIntegerPadsWithTheZeroPoint) {
  KernelHarness h("ConvInteger", 10);
  h.attr_ints("pads", {1, 1, 1, 1});
  h.input(make_filled<uint8_t>({1, 1, 2, 2}, {2, 3, 4, 5}));
  h.input(make_filled<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1}));
  h.input(scalar<uint8_t>(2));
  auto out = h.run(1);
  // x - 2 = [[0,1],[2,3]]; a 2x2 box sum over the zero-padded input, 3x3 outputs.
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{0, 1, 1, 2, 6, 4, 2, 5, 3}));
}

TEST(QuantizeKernels, QLinearConvPerChannelWithBias) {
  KernelHarness h("QLinearConv", 10);
  h.input(make_filled<uint8_t>({1, 1, 1, 2}, {3, 5}));
  h.input(scalar<float>(1.f));
  h.input(scalar<uint8_t>(1));
  h.input(make_filled<int8_t>({2, 1, 1, 1}, {2, -3}));
  h.input(make_filled<float>({2}, {1.f, 0.5f}));
  h.input(make_filled<int8_t>({2}, {0, 0}));
  h.input(scalar<float>(1.f));
  h.input(scalar<int8_t>(0));
  h.input(make_filled<int32_t>({2}, {1, 0}));
  auto out = h.run(1);
  // ch0: (x-1)*2 + 1 = [5, 9]; ch1: (x-1)*-3*0.5 = [-3, -6]
  EXPECT_EQ(values_of<int8_t>(out[0]), (std::vector<int8_t>{5, 9, -3, -6}));
}

TEST(QuantizeKernels, ShapeMismatchesAreErrors) {
  KernelHarness mm("MatMulInteger", 10);
  mm.input(make_filled<uint8_t>({2, 3}, std::vector<uint8_t>(6, 1)));
  mm.input(make_filled<uint8_t>({2, 2}, std::vector<uint8_t>(4, 1)));
  EXPECT_THROW(mm.run(1), sdk::Error);

  KernelHarness conv("ConvInteger", 10);
  conv.attr_int("group", 2);
  conv.input(make_filled<uint8_t>({1, 3, 2, 2}, std::vector<uint8_t>(12, 1)));
  conv.input(make_filled<uint8_t>({2, 1, 1, 1}, {1, 1}));
  EXPECT_THROW(conv.run(1), sdk::Error);

  KernelHarness dq("DequantizeLinear", 13);
  dq.input(make_filled<float>({2}, {1.f, 2.f}));  // not an integer type
  dq.input(make_filled<float>({}, {1.f}));
  EXPECT_THROW(dq.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
