// Cast: rounding to float16/bfloat16, saturation of out-of-range floats, strings both ways.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

Tensor cast(Tensor in, loom_dtype_t to, int64_t opset = 13) {
  KernelHarness h("Cast", opset);
  h.attr_int("to", to);
  h.input(std::move(in));
  return h.run(1)[0];
}

TEST(Cast, FloatToHalfRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to the even 1.0;
  // 1 + 3*2^-11 rounds up to 1 + 2^-9.
  Tensor out =
      cast(make_filled<float>({4}, {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.0f, -0.0f}),
           LOOM_DTYPE_FLOAT16);
  ASSERT_EQ(out.view.dtype, LOOM_DTYPE_FLOAT16);
  const auto* h = static_cast<const uint16_t*>(out.view.data);
  EXPECT_EQ(h[0], 0x3C00);  // 1.0
  EXPECT_EQ(h[1], 0x3C02);  // 1 + 2^-9
  EXPECT_EQ(h[2], 0x7C00);  // overflow to +inf
  EXPECT_EQ(h[3], 0x8000);  // -0
}

TEST(Cast, FloatToBFloat16AndBack) {
  Tensor bf = cast(make_filled<float>({2}, {1.00390625f, 3.0f}), LOOM_DTYPE_BFLOAT16);
  const auto* b = static_cast<const uint16_t*>(bf.view.data);
  EXPECT_EQ(b[0], 0x3F80);  // 1 + 2^-8 is a tie: to even, 1.0
  EXPECT_EQ(b[1], 0x4040);
  Tensor back = cast(std::move(bf), LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(values_of<float>(back), (std::vector<float>{1.0f, 3.0f}));
}

TEST(Cast, FloatToIntTruncatesAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor out = cast(make_filled<float>({5}, {2.7f, -2.7f, 1e10f, -1e10f, nan}), LOOM_DTYPE_INT32);
  EXPECT_EQ(values_of<int32_t>(out),
            (std::vector<int32_t>{2, -2, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 0}));
  Tensor u8 = cast(make_filled<float>({3}, {300.0f, -1.0f, 7.9f}), LOOM_DTYPE_UINT8);
  EXPECT_EQ(values_of<uint8_t>(u8), (std::vector<uint8_t>{255, 0, 7}));
}

TEST(Cast, IntegersWrapAndBoolsAreNonZero) {
  Tensor out = cast(make_filled<int32_t>({2}, {300, -1}), LOOM_DTYPE_UINT8);
  EXPECT_EQ(values_of<uint8_t>(out), (std::vector<uint8_t>{44, 255}));
  Tensor b = cast(make_filled<float>({3}, {0.0f, -0.5f, 2.0f}), LOOM_DTYPE_BOOL);
  EXPECT_EQ(values_of<uint8_t>(b), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(Cast, StringsBothWays) {
  Tensor s = cast(make_filled<float>({3}, {0.5f, -3.0f, std::numeric_limits<float>::infinity()}),
                  LOOM_DTYPE_STRING);
  ASSERT_EQ(s.view.dtype, LOOM_DTYPE_STRING);
  const auto* v = static_cast<const loom_string_t*>(s.view.data);
  EXPECT_EQ(std::string(v[0].data, v[0].size), "0.5");
  EXPECT_EQ(std::string(v[1].data, v[1].size), "-3");
  EXPECT_EQ(std::string(v[2].data, v[2].size), "INF");
  Tensor f = cast(std::move(s), LOOM_DTYPE_FLOAT32);
  std::vector<float> back = values_of<float>(f);
  EXPECT_EQ(back[0], 0.5f);
  EXPECT_EQ(back[1], -3.0f);
  EXPECT_TRUE(std::isinf(back[2]));
}

TEST(Cast, UnparsableStringIsAnError) {
  Tensor s = make_tensor(LOOM_DTYPE_STRING, std::vector<int64_t>{1});
  (*s.strings)[0] = "twelve";
  static_cast<loom_string_t*>(s.view.data)[0] = {(*s.strings)[0].data(), (*s.strings)[0].size()};
  EXPECT_THROW(cast(std::move(s), LOOM_DTYPE_INT64), Error);
}

TEST(CastLike, TakesTheTypeOfTheSecondInput) {
  KernelHarness h("CastLike", 15);
  h.input(make_filled<double>({2}, {1.5, -2.25}));
  h.input(make_filled<float>({1}, {0}));
  Tensor out = h.run(1)[0];
  EXPECT_EQ(out.view.dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{1.5f, -2.25f}));
}

}  // namespace
}  // namespace loom::cpu
