// The narrow dtypes of ABI 1.6 (float8, float4, float6, e8m0, int4, int2: a byte per element)
// in the cpu kernels: Cast/CastLike both ways with saturate and round_mode, QuantizeLinear and
// DequantizeLinear to/from them, blocked quantization, output_dtype and precision. Expected
// values are from the ONNX reference (onnx/reference/ops, ml_dtypes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <loom/narrow_types.hpp>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

// A tensor of a narrow dtype holding the given in-memory bytes.
Tensor narrow(loom_dtype_t dtype, std::vector<int64_t> dims, const std::vector<uint8_t>& bytes) {
  Tensor t = make_filled<uint8_t>(std::move(dims), bytes);
  t.view.dtype = dtype;
  return t;
}

std::vector<float> floats(const Tensor& t) {
  return values_of<float>(t);
}

TEST(NarrowCast, FloatToFloat8SaturatesOrNot) {
  const std::vector<float> x = {1.0f, 500.0f, -1e6f, INFINITY, 0.3f};
  {
    KernelHarness h("Cast", 19);
    h.attr_int("to", LOOM_DTYPE_FLOAT8E4M3FN);
    h.input(make_filled<float>({5}, x));
    auto out = h.run(1);
    ASSERT_EQ(out[0].view.dtype, LOOM_DTYPE_FLOAT8E4M3FN);
    // 1, 448 (saturated), -448, 448, 0.3 -> 0.3125
    EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0x38, 0x7E, 0xFE, 0x7E, 0x2A}));
  }
  {
    KernelHarness h("Cast", 19);
    h.attr_int("to", LOOM_DTYPE_FLOAT8E5M2);
    h.attr_int("saturate", 0);
    h.input(make_filled<float>({5}, x));
    auto out = h.run(1);
    // 1, 512, -inf, inf, 0.3 -> 0.3125
    EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0x3C, 0x60, 0xFC, 0x7C, 0x35}));
  }
}

TEST(NarrowCast, Float8ToFloatIsExact) {
  KernelHarness h("Cast", 19);
  h.attr_int("to", LOOM_DTYPE_FLOAT32);
  h.input(narrow(LOOM_DTYPE_FLOAT8E4M3FNUZ, {3}, {0x40, 0x80, 0x01}));
  auto out = h.run(1);
  std::vector<float> y = floats(out[0]);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_TRUE(std::isnan(y[1]));           // fnuz: 0x80 is the NaN
  EXPECT_EQ(y[2], std::ldexp(1.0f, -10));  // the smallest subnormal
}

TEST(NarrowCast, Int4WrapsLikeTheReferenceAndSignExtends) {
  KernelHarness h("Cast", 21);
  h.attr_int("to", LOOM_DTYPE_INT4);
  h.input(make_filled<float>({5}, {7.9f, 8.5f, -9.3f, 100.f, NAN}));
  auto out = h.run(1);
  // Truncated then wrapped: 7, 8 -> -8, -9 -> 7, 100 -> 4, NaN -> 0; stored sign-extended.
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{7, 0xF8, 7, 4, 0}));

  KernelHarness back("Cast", 21);
  back.attr_int("to", LOOM_DTYPE_INT8);
  back.input(narrow(LOOM_DTYPE_INT4, {2}, {0xF8, 0x07}));
  EXPECT_EQ(values_of<int8_t>(back.run(1)[0]), (std::vector<int8_t>{-8, 7}));
}

TEST(NarrowCast, NarrowToNarrowAndStrings) {
  KernelHarness h("Cast", 23);
  h.attr_int("to", LOOM_DTYPE_FLOAT4E2M1);
  h.input(narrow(LOOM_DTYPE_UINT2, {4}, {0, 1, 2, 3}));
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{0x0, 0x2, 0x4, 0x5}));

  KernelHarness s("Cast", 23);
  s.attr_int("to", LOOM_DTYPE_STRING);
  s.input(narrow(LOOM_DTYPE_FLOAT4E2M1, {2}, {0x3, 0xF}));
  auto out = s.run(1);
  const auto* views = static_cast<const loom_string_t*>(out[0].view.data);
  EXPECT_EQ(std::string(views[0].data, views[0].size), "1.5");
  EXPECT_EQ(std::string(views[1].data, views[1].size), "-6");
}

TEST(NarrowCast, E8M0RoundModes) {
  for (auto [mode, expected] :
       {std::pair<const char*, uint8_t>{"up", 0x82}, {"down", 0x81}, {"nearest", 0x82}}) {
    KernelHarness h("Cast", 24);
    h.attr_int("to", LOOM_DTYPE_FLOAT8E8M0);
    h.attr_string("round_mode", mode);
    h.input(make_filled<float>({1}, {7.0f}));
    EXPECT_EQ(values_of<uint8_t>(h.run(1)[0])[0], expected) << mode;
  }
  KernelHarness bad("Cast", 24);
  bad.attr_int("to", LOOM_DTYPE_FLOAT8E8M0);
  bad.attr_string("round_mode", "sideways");
  bad.input(make_filled<float>({1}, {7.0f}));
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(NarrowCast, CastLikeTakesSaturate) {
  KernelHarness h("CastLike", 19);
  h.attr_int("saturate", 0);
  h.input(make_filled<float>({1}, {1000.f}));
  h.input(narrow(LOOM_DTYPE_FLOAT8E4M3FN, {1}, {0}));
  auto out = h.run(1);
  EXPECT_TRUE(
      std::isnan(sdk::narrow::to_float(LOOM_DTYPE_FLOAT8E4M3FN, values_of<uint8_t>(out[0])[0])));
}

TEST(NarrowQuantize, Int4WithZeroPointSaturates) {
  KernelHarness h("QuantizeLinear", 21);
  h.input(make_filled<float>({5}, {0.f, 1.f, 2.5f, 100.f, -100.f}));
  h.input(make_filled<float>({}, {0.5f}));
  h.input(narrow(LOOM_DTYPE_INT4, {}, {1}));
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.dtype, LOOM_DTYPE_INT4);
  // 0+1, 2+1, round_half_even(5)=5 -> 6, saturated 7, saturated -8 (0xF8).
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{1, 3, 6, 7, 0xF8}));
}

TEST(NarrowQuantize, OutputDtypeWithoutZeroPoint) {
  KernelHarness h("QuantizeLinear", 21);
  h.attr_int("output_dtype", LOOM_DTYPE_UINT2);
  h.input(make_filled<float>({3}, {0.f, 2.f, 9.f}));
  h.input(make_filled<float>({}, {1.f}));
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.dtype, LOOM_DTYPE_UINT2);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0, 2, 3}));
}

TEST(NarrowQuantize, OutputDtypeMustMatchTheZeroPoint) {
  KernelHarness h("QuantizeLinear", 21);
  h.attr_int("output_dtype", LOOM_DTYPE_INT8);
  h.input(make_filled<float>({1}, {0.f}));
  h.input(make_filled<float>({}, {1.f}));
  h.input(make_filled<uint8_t>({}, {0}));
  EXPECT_THROW(h.run(1), sdk::Error);
}

TEST(NarrowQuantize, Float8IgnoresRoundingToIntegers) {
  KernelHarness h("QuantizeLinear", 21);
  h.input(make_filled<float>({3}, {0.3f, 1000.f, -1000.f}));
  h.input(make_filled<float>({}, {1.f}));
  h.input(narrow(LOOM_DTYPE_FLOAT8E4M3FN, {}, {0}));
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{0x2A, 0x7E, 0xFE}));
}

TEST(NarrowQuantize, BlockedScalesAndZeroPoints) {
  // x is 2x5, blocks of 2 along axis 1: 3 blocks per row (the last holds one element).
  KernelHarness h("QuantizeLinear", 21);
  h.attr_int("axis", 1);
  h.attr_int("block_size", 2);
  h.input(make_filled<float>({2, 5}, {2, 4, 2, 4, 2, /**/ 2, 4, 2, 4, 2}));
  h.input(make_filled<float>({2, 3}, {1, 2, 0.5f, /**/ 2, 1, 0.25f}));
  h.input(make_filled<uint8_t>({2, 3}, {0, 10, 100, /**/ 1, 2, 3}));
  auto out = h.run(1);
  EXPECT_EQ(values_of<uint8_t>(out[0]),
            (std::vector<uint8_t>{2, 4, 11, 12, 104, /**/ 2, 3, 4, 6, 11}));

  KernelHarness bad("QuantizeLinear", 21);
  bad.attr_int("axis", 1);
  bad.attr_int("block_size", 2);
  bad.input(make_filled<float>({2, 5}, std::vector<float>(10, 0.f)));
  bad.input(make_filled<float>({2, 2}, {1, 1, 1, 1}));  // needs 3 blocks
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(NarrowDequantize, Int2UInt16AndFloat4) {
  {
    KernelHarness h("DequantizeLinear", 21);
    h.input(narrow(LOOM_DTYPE_INT2, {4}, {0xFE, 0xFF, 0, 1}));
    h.input(make_filled<float>({}, {0.5f}));
    h.input(narrow(LOOM_DTYPE_INT2, {}, {1}));
    EXPECT_EQ(floats(h.run(1)[0]), (std::vector<float>{-1.5f, -1.f, -0.5f, 0.f}));
  }
  {
    KernelHarness h("DequantizeLinear", 21);
    const std::vector<int64_t> dims = {2};
    Tensor x = make_tensor(LOOM_DTYPE_UINT16, dims);
    uint16_t v[2] = {0, 65535};
    std::memcpy(x.view.data, v, sizeof v);
    h.input(std::move(x));
    h.input(make_filled<float>({}, {2.f}));
    EXPECT_EQ(floats(h.run(1)[0]), (std::vector<float>{0.f, 131070.f}));
  }
  {
    KernelHarness h("DequantizeLinear", 23);
    h.attr_int("output_dtype", LOOM_DTYPE_FLOAT64);
    h.input(narrow(LOOM_DTYPE_FLOAT4E2M1, {2}, {0x7, 0x9}));  // 6, -0.5
    h.input(make_filled<float>({}, {2.f}));
    auto out = h.run(1);
    ASSERT_EQ(out[0].view.dtype, LOOM_DTYPE_FLOAT64);
    EXPECT_EQ(values_of<double>(out[0]), (std::vector<double>{12.0, -1.0}));
  }
}

TEST(NarrowDequantize, Float8NeedsAZeroZeroPoint) {
  KernelHarness h("DequantizeLinear", 21);
  h.input(narrow(LOOM_DTYPE_FLOAT8E5M2, {1}, {0x3C}));
  h.input(make_filled<float>({}, {1.f}));
  h.input(narrow(LOOM_DTYPE_FLOAT8E5M2, {}, {0x3C}));  // 1.0
  EXPECT_THROW(h.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
