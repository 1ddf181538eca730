// Broadcasting and the integer semantics of the binary arithmetic kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

using testing::shape;

TEST(Broadcast, SameShapeScalarAndMiddleAxis) {
  {
    KernelHarness h("Add", 14);
    h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
    h.input(make_filled<float>({}, {10}));
    auto out = h.run(1);
    EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{11, 12, 13, 14, 15, 16}));
  }
  {
    // [2,1,3] + [4,1]: both operands broadcast, in different dimensions.
    KernelHarness h("Mul", 14);
    h.input(make_filled<int32_t>({2, 1, 3}, {1, 2, 3, 4, 5, 6}));
    h.input(make_filled<int32_t>({4, 1}, {1, 10, 100, 1000}));
    auto out = h.run(1);
    ASSERT_EQ(shape(out[0]), (std::vector<int64_t>{2, 4, 3}));
    std::vector<int32_t> v = values_of<int32_t>(out[0]);
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[3 * 1 + 2], 30);         // [0,1,2] = 3 * 10
    EXPECT_EQ(v[12 + 3 * 3 + 0], 4000);  // [1,3,0] = 4 * 1000
    EXPECT_EQ(v[23], 6000);
  }
  {
    // The operand on the left is the smaller one.
    KernelHarness h("Sub", 14);
    h.input(make_filled<float>({3}, {1, 2, 3}));
    h.input(make_filled<float>({2, 3}, {1, 1, 1, 2, 2, 2}));
    auto out = h.run(1);
    EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{0, 1, 2, -1, 0, 1}));
  }
}

TEST(Broadcast, ZeroSizedAndIncompatibleShapes) {
  {
    KernelHarness h("Add", 14);
    h.input(make_filled<float>({0, 3}, {}));
    h.input(make_filled<float>({1, 3}, {1, 2, 3}));
    auto out = h.run(1);
    EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{0, 3}));
  }
  {
    KernelHarness h("Add", 14);
    h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
    h.input(make_filled<float>({2}, {1, 2}));
    try {
      h.run(1);
      FAIL() << "incompatible shapes were accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("[2,3] and [2] cannot be broadcast"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Broadcast, LargeTensorsSplitAcrossChunksCorrectly) {
  // Big enough for several thread chunks that start mid-row.
  const int64_t rows = 300, cols = 257;
  std::vector<float> a(rows * cols), b(cols);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  for (size_t j = 0; j < b.size(); ++j) b[j] = static_cast<float>(j) * 0.5f;
  KernelHarness h("Add", 14);
  h.input(make_filled<float>({rows, cols}, a));
  h.input(make_filled<float>({cols}, b));
  std::vector<float> v = values_of<float>(h.run(1)[0]);
  for (int64_t r = 0; r < rows; r += 7)
    for (int64_t c = 0; c < cols; c += 5) ASSERT_EQ(v[r * cols + c], a[r * cols + c] + b[c]);
}

TEST(Broadcast, LegacyAttributesBeforeOpset7) {
  {
    // broadcast=1, axis=1: B [3] lines up with A's dim 1, not the trailing one.
    KernelHarness h("Add", 6);
    h.attr_int("broadcast", 1);
    h.attr_int("axis", 1);
    h.input(make_filled<float>({2, 3, 2}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
    h.input(make_filled<float>({3}, {10, 20, 30}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]),
              (std::vector<float>{10, 10, 20, 20, 30, 30, 11, 11, 21, 21, 31, 31}));
  }
  {
    // broadcast=0: no implicit broadcasting at all.
    KernelHarness h("Mul", 6);
    h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
    h.input(make_filled<float>({3}, {1, 2, 3}));
    EXPECT_THROW(h.run(1), Error);
  }
}

TEST(PRelu, Opset6SlopeIsPerChannel) {
  KernelHarness h("PRelu", 6);
  h.input(make_filled<float>({1, 2, 3}, {-1, -1, -1, -1, 2, -1}));
  h.input(make_filled<float>({2}, {0.5f, 0.25f}));
  EXPECT_EQ(values_of<float>(h.run(1)[0]),
            (std::vector<float>{-0.5f, -0.5f, -0.5f, -0.25f, 2, -0.25f}));
}

TEST(IntegerDivision, TruncatesTowardZero) {
  KernelHarness h("Div", 14);
  h.input(make_filled<int32_t>({4}, {7, -7, 7, -7}));
  h.input(make_filled<int32_t>({4}, {2, 2, -2, -2}));
  EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{3, -3, -3, 3}));
}

TEST(IntegerDivision, ByZeroIsAnErrorAndMinByMinusOneWraps) {
  {
    KernelHarness h("Div", 14);
    h.input(make_filled<int64_t>({2}, {1, 2}));
    h.input(make_filled<int64_t>({2}, {1, 0}));
    EXPECT_THROW(h.run(1), Error);
  }
  {
    KernelHarness h("Div", 14);
    h.input(make_filled<int32_t>({1}, {std::numeric_limits<int32_t>::min()}));
    h.input(make_filled<int32_t>({1}, {-1}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0])[0], std::numeric_limits<int32_t>::min());
  }
}

TEST(Mod, IntegerSignFollowsDivisorUnlessFmod) {
  {
    KernelHarness h("Mod", 13);
    h.input(make_filled<int32_t>({4}, {7, -7, 7, -7}));
    h.input(make_filled<int32_t>({4}, {3, 3, -3, -3}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{1, 2, -2, -1}));
  }
  {
    KernelHarness h("Mod", 13);
    h.attr_int("fmod", 1);
    h.input(make_filled<int32_t>({4}, {7, -7, 7, -7}));
    h.input(make_filled<int32_t>({4}, {3, 3, -3, -3}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{1, -1, 1, -1}));
  }
  {
    KernelHarness h("Mod", 13);
    h.attr_int("fmod", 1);
    h.input(make_filled<float>({2}, {-4.5f, 4.5f}));
    h.input(make_filled<float>({2}, {2.0f, -2.0f}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{-0.5f, 0.5f}));
  }
}

TEST(Pow, MixedBaseAndExponentTypes) {
  {
    KernelHarness h("Pow", 15);
    h.input(make_filled<float>({3}, {2, 4, 9}));
    h.input(make_filled<int64_t>({3}, {3, -1, 0}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{8, 0.25f, 1}));
  }
  {
    KernelHarness h("Pow", 15);
    h.input(make_filled<int64_t>({3}, {3, -2, 5}));
    h.input(make_filled<int64_t>({3}, {4, 3, -1}));
    EXPECT_EQ(values_of<int64_t>(h.run(1)[0]), (std::vector<int64_t>{81, -8, 0}));
  }
}

// Exponents of another type are widened (int64, uint64, double) before the power: each case
// below would change if a widening were not exact.
TEST(Pow, WidenedExponentsKeepTheirValues) {
  {
    // int8 exponents, negative ones included, against an int32 base (|base| == 1 cases).
    KernelHarness h("Pow", 15);
    h.input(make_filled<int32_t>({4}, {-1, -1, 1, 3}));
    h.input(make_filled<int8_t>({4}, {-3, 4, -128, 5}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{-1, 1, 1, 243}));
  }
  {
    // A uint64 exponent above INT64_MAX stays non-negative: 3^(2^63+1) wraps modulo 2^8.
    KernelHarness h("Pow", 15);
    h.input(make_filled<uint8_t>({2}, {3, 2}));
    h.input(make_filled<uint64_t>({2}, {(uint64_t{1} << 63) + 1, 7}));
    uint8_t expected = 1, base = 3;
    for (uint64_t e = (uint64_t{1} << 63) + 1; e; e >>= 1, base = static_cast<uint8_t>(base * base))
      if (e & 1u) expected = static_cast<uint8_t>(expected * base);
    EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{expected, 128}));
  }
  {
    // float16 exponents against a float base, broadcast from a scalar.
    KernelHarness h("Pow", 15);
    h.input(make_filled<float>({3}, {4, 9, 2}));
    h.input(make_filled<Half>({}, {Half(0.5f)}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{2, 3, std::sqrt(2.0f)}));
  }
  {
    // An int32 exponent past float's 24-bit mantissa, against a double base.
    KernelHarness h("Pow", 15);
    h.input(make_filled<double>({1}, {-1.0}));
    h.input(make_filled<int32_t>({1}, {16777217}));
    EXPECT_EQ(values_of<double>(h.run(1)[0]), (std::vector<double>{-1.0}));
  }
}

TEST(BitShift, ShiftsPastTheWidthGiveZero) {
  KernelHarness h("BitShift", 11);
  h.attr_string("direction", "LEFT");
  h.input(make_filled<uint8_t>({3}, {1, 3, 255}));
  h.input(make_filled<uint8_t>({3}, {1, 2, 9}));
  EXPECT_EQ(values_of<uint8_t>(h.run(1)[0]), (std::vector<uint8_t>{2, 12, 0}));
}

TEST(Where, ThreeWayBroadcast) {
  KernelHarness h("Where", 16);
  h.input(make_filled<bool>({2, 1}, {true, false}));
  h.input(make_filled<float>({3}, {1, 2, 3}));
  h.input(make_filled<float>({}, {-1}));
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 2, 3, -1, -1, -1}));
}

TEST(Variadic, MaxAndMeanBroadcastOverThreeInputs) {
  {
    KernelHarness h("Max", 13);
    h.input(make_filled<int32_t>({3}, {1, 5, 3}));
    h.input(make_filled<int32_t>({2, 1}, {2, 4}));
    h.input(make_filled<int32_t>({}, {0}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{2, 5, 3, 4, 5, 4}));
  }
  {
    KernelHarness h("Mean", 13);
    h.input(make_filled<float>({2}, {1, 2}));
    h.input(make_filled<float>({2}, {3, 4}));
    h.input(make_filled<float>({1}, {5}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{3, 11.0f / 3}));
  }
}

TEST(Clip, InputBoundsSinceOpset11AndAttributesBefore) {
  {
    KernelHarness h("Clip", 13);
    h.input(make_filled<int32_t>({4}, {-5, 0, 5, 10}));
    h.input(make_filled<int32_t>({}, {-1}));
    h.input(make_filled<int32_t>({}, {6}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{-1, 0, 5, 6}));
  }
  {
    KernelHarness h("Clip", 13);
    h.input(make_filled<float>({3}, {-5, 0, 5}));
    h.omitted_input();
    h.input(make_filled<float>({}, {1}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{-5, 0, 1}));
  }
  {
    KernelHarness h("Clip", 6);
    h.attr_float("min", -1);
    h.attr_float("max", 1);
    h.input(make_filled<float>({3}, {-5, 0.5f, 5}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{-1, 0.5f, 1}));
  }
}

}  // namespace
}  // namespace loom::cpu
