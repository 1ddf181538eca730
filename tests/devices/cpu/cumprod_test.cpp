// CumProd-26 of the cpu device: inclusive/exclusive, forward/reverse, axes, and integer
// products that overflow (they wrap like two's complement instead of being undefined).
#include <gtest/gtest.h>

#include <cstdint>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

template <typename T>
std::vector<T> cumprod(std::vector<int64_t> dims, std::vector<T> x, int64_t axis, int exclusive,
                       int reverse) {
  KernelHarness h("CumProd", 26);
  h.input(make_filled<T>(dims, x));
  h.input(make_filled<int32_t>({}, {static_cast<int32_t>(axis)}));
  h.attr_int("exclusive", exclusive);
  h.attr_int("reverse", reverse);
  return values_of<T>(h.run(1)[0]);
}

TEST(CumProd, TheSpecExamples) {
  const std::vector<float> x = {1, 2, 3};
  EXPECT_EQ(cumprod<float>({3}, x, 0, 0, 0), (std::vector<float>{1, 2, 6}));
  EXPECT_EQ(cumprod<float>({3}, x, 0, 1, 0), (std::vector<float>{1, 1, 2}));
  EXPECT_EQ(cumprod<float>({3}, x, 0, 0, 1), (std::vector<float>{6, 6, 3}));
  EXPECT_EQ(cumprod<float>({3}, x, 0, 1, 1), (std::vector<float>{6, 3, 1}));
}

TEST(CumProd, AlongEitherAxisOfAMatrix) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(cumprod<double>({2, 3}, x, 0, 0, 0), (std::vector<double>{1, 2, 3, 4, 10, 18}));
  EXPECT_EQ(cumprod<double>({2, 3}, x, -1, 0, 0), (std::vector<double>{1, 2, 6, 4, 20, 120}));
  EXPECT_THROW(cumprod<double>({2, 3}, x, 2, 0, 0), Error);
}

TEST(CumProd, IntegerOverflowWraps) {
  EXPECT_EQ(cumprod<int32_t>({3}, {65536, 65536, 3}, 0, 0, 0), (std::vector<int32_t>{65536, 0, 0}));
  EXPECT_EQ(cumprod<int64_t>({2}, {INT64_MIN, -1}, 0, 0, 0),
            (std::vector<int64_t>{INT64_MIN, INT64_MIN}));
}

}  // namespace
}  // namespace loom::cpu
