// BitCast-26 of the cpu device: bit patterns preserved between same-width types, bool bytes
// checked, width mismatches and sub-byte types refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

template <typename T>
Tensor bitcast(std::vector<int64_t> dims, std::vector<T> x, loom_dtype_t to) {
  KernelHarness h("BitCast", 26);
  h.input(make_filled<T>(dims, x));
  h.attr_int("to", to);
  return h.run(1)[0];
}

TEST(BitCast, KeepsTheBitsAndTheShape) {
  Tensor y = bitcast<float>({2, 1}, {1.0f, -2.5f}, LOOM_DTYPE_INT32);
  EXPECT_EQ(y.view.dtype, LOOM_DTYPE_INT32);
  EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values_of<int32_t>(y),
            (std::vector<int32_t>{0x3f800000, static_cast<int32_t>(0xc0200000)}));
  Tensor back = bitcast<int32_t>({2, 1}, values_of<int32_t>(y), LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(values_of<float>(back), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_EQ(values_of<uint8_t>(bitcast<int8_t>({3}, {-1, 0, -128}, LOOM_DTYPE_UINT8)),
            (std::vector<uint8_t>{255, 0, 128}));
  Tensor d = bitcast<double>({}, {1.0}, LOOM_DTYPE_INT64);
  EXPECT_EQ(values_of<int64_t>(d), (std::vector<int64_t>{0x3ff0000000000000}));
}

TEST(BitCast, BoolBytesMustBeZeroOrOne) {
  EXPECT_EQ(values_of<uint8_t>(bitcast<bool>({2}, {true, false}, LOOM_DTYPE_UINT8)),
            (std::vector<uint8_t>{1, 0}));
  Tensor b = bitcast<uint8_t>({2}, {1, 0}, LOOM_DTYPE_BOOL);
  EXPECT_EQ(b.view.dtype, LOOM_DTYPE_BOOL);
  EXPECT_THROW(bitcast<uint8_t>({2}, {1, 2}, LOOM_DTYPE_BOOL), Error);
}

TEST(BitCast, RefusesOtherWidthsAndSubByteTypes) {
  EXPECT_THROW(bitcast<float>({1}, {1}, LOOM_DTYPE_INT64), Error);
  EXPECT_THROW(bitcast<uint8_t>({1}, {1}, LOOM_DTYPE_INT4), Error);
  EXPECT_THROW(bitcast<uint8_t>({1}, {1}, LOOM_DTYPE_STRING), Error);
  EXPECT_THROW(bitcast<uint8_t>({1}, {1}, static_cast<loom_dtype_t>(999)), Error);
}

}  // namespace
}  // namespace loom::cpu
