// BitShift of the cpu device: unsigned shifts, opset 28's signed shifts (arithmetic right
// shift, two's-complement left shift) and out-of-range shift amounts.
#include <gtest/gtest.h>

#include <cstdint>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

template <typename T>
std::vector<T> shift(int64_t opset, const char* direction, std::vector<T> x, std::vector<T> y) {
  KernelHarness h("BitShift", opset);
  h.attr_string("direction", direction);
  const int64_t n = static_cast<int64_t>(x.size());
  h.input(make_filled<T>({n}, x));
  h.input(make_filled<T>({n}, y));
  return values_of<T>(h.run(1)[0]);
}

TEST(BitShift, UnsignedShiftsPastTheWidthGiveZero) {
  EXPECT_EQ(shift<uint8_t>(11, "LEFT", {1, 255, 3}, {2, 1, 8}), (std::vector<uint8_t>{4, 254, 0}));
  EXPECT_EQ(shift<uint8_t>(11, "RIGHT", {16, 255, 3}, {2, 7, 9}), (std::vector<uint8_t>{4, 1, 0}));
}

TEST(BitShift, SignedRightShiftIsArithmetic) {
  EXPECT_EQ(shift<int8_t>(28, "RIGHT", {-128, -7, 100, -1}, {1, 1, 3, 7}),
            (std::vector<int8_t>{-64, -4, 12, -1}));
  EXPECT_EQ(shift<int64_t>(28, "RIGHT", {INT64_MIN, -5}, {63, 2}), (std::vector<int64_t>{-1, -2}));
}

TEST(BitShift, SignedLeftShiftDropsBitsPastTheSign) {
  EXPECT_EQ(shift<int8_t>(28, "LEFT", {64, 1, -1, 3}, {1, 7, 7, 6}),
            (std::vector<int8_t>{-128, -128, -128, -64}));
  EXPECT_EQ(shift<int32_t>(28, "LEFT", {1, -3, 0x40000000}, {31, 2, 2}),
            (std::vector<int32_t>{INT32_MIN, -12, 0}));
}

TEST(BitShift, NegativeOrTooLargeAmountsLeaveTheSignFill) {
  EXPECT_EQ(shift<int32_t>(28, "RIGHT", {-5, 5, -5, 5}, {-1, -1, 32, 40}),
            (std::vector<int32_t>{-1, 0, -1, 0}));
  EXPECT_EQ(shift<int32_t>(28, "LEFT", {-5, 5, -5}, {-1, 32, 100}),
            (std::vector<int32_t>{0, 0, 0}));
}

TEST(BitShift, SignedTypesNeedOpset28) {
  EXPECT_THROW(shift<int32_t>(11, "LEFT", {1}, {1}), Error);
  EXPECT_THROW(shift<int32_t>(28, "UP", {1}, {1}), Error);
}

}  // namespace
}  // namespace loom::cpu
