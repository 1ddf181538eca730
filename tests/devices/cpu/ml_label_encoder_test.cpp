// ai.onnx.ml LabelEncoder of the cpu device beyond the backend tests: float keys with NaN, int64
// keys beyond 2^53, the spec's defaults, repeated keys, and the errors for mismatched input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::make_strings;
using testing::strings_of;
using testing::values_of;
using Strings = std::vector<std::string>;

// Opset 1: classes_strings, strings to indices and back, with the spec's defaults and a set one.
TEST(LabelEncoder, OpsetOneMapsStringsAndIndicesBothWays) {
  KernelHarness to_index("LabelEncoder", 1, "ai.onnx.ml");
  to_index.input(make_strings({2, 2}, {"b", "z", "a", "b"}));
  to_index.attr_strings("classes_strings", {"a", "b", "c"});
  auto out = to_index.run(1);
  EXPECT_EQ(std::vector<int64_t>(out[0].view.dims, out[0].view.dims + 2),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{1, -1, 0, 1}));
  KernelHarness to_string("LabelEncoder", 1, "ai.onnx.ml");
  to_string.input(make_filled<int64_t>({4}, {2, 0, 3, -1}));
  to_string.attr_strings("classes_strings", {"a", "b", "c"});
  to_string.attr_string("default_string", "?");
  EXPECT_EQ(strings_of(to_string.run(1)[0]), (Strings{"c", "a", "?", "?"}));
  KernelHarness floats("LabelEncoder", 1, "ai.onnx.ml");
  floats.input(make_filled<float>({1}, {1.f}));
  floats.attr_strings("classes_strings", {"a"});
  EXPECT_THROW(floats.run(1), std::runtime_error);
}

TEST(LabelEncoder, FloatKeysMatchNaNAndDefaultToMinusZero) {
  KernelHarness h("LabelEncoder", 2, "ai.onnx.ml");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  h.input(make_filled<float>({4}, {1.5f, nan, 2.f, -0.f}));
  h.attr_floats("keys_floats", {1.5f, nan, 0.f});
  h.attr_floats("values_floats", {10.f, 20.f, 30.f});
  const std::vector<float> y = values_of<float>(h.run(1)[0]);
  EXPECT_EQ(y[0], 10.f);
  EXPECT_EQ(y[1], 20.f);
  EXPECT_EQ(y[2], 0.f);  // no key: the default -0.0
  EXPECT_TRUE(std::signbit(y[2]));
  EXPECT_EQ(y[3], 30.f);  // -0 == 0 as numbers
}

TEST(LabelEncoder, Int64KeysAreExactAndTheFirstOfARepeatedKeyWins) {
  KernelHarness h("LabelEncoder", 2, "ai.onnx.ml");
  const int64_t big = (int64_t{1} << 60) + 1;
  h.input(make_filled<int64_t>({3}, {big, big - 1, 7}));
  h.attr_ints("keys_int64s", {big, 7, 7});
  h.attr_strings("values_strings", {"big", "seven", "again"});
  EXPECT_EQ(strings_of(h.run(1)[0]), (Strings{"big", "_Unused", "seven"}));
}

TEST(LabelEncoder, StringKeysToIntsWithADefault) {
  KernelHarness h("LabelEncoder", 2, "ai.onnx.ml");
  h.input(make_strings({2, 2}, {"a", "b", "", "a"}));
  h.attr_strings("keys_strings", {"a", "b"});
  h.attr_ints("values_int64s", {1, 2});
  h.attr_int("default_int64", 42);
  EXPECT_EQ(values_of<int64_t>(h.run(1)[0]), (std::vector<int64_t>{1, 2, 42, 1}));
}

TEST(LabelEncoder, RefusesAnInputOfAnotherKindAndUnequalLists) {
  {
    KernelHarness h("LabelEncoder", 2, "ai.onnx.ml");
    h.input(make_filled<float>({1}, {1.f}));
    h.attr_strings("keys_strings", {"a"});
    h.attr_ints("values_int64s", {1});
    EXPECT_THROW(h.run(1), std::runtime_error);
  }
  {
    KernelHarness h("LabelEncoder", 2, "ai.onnx.ml");
    h.input(make_strings({1}, {"a"}));
    h.attr_strings("keys_strings", {"a", "b"});
    h.attr_ints("values_int64s", {1});
    EXPECT_THROW(h.run(1), std::runtime_error);
  }
}

}  // namespace
}  // namespace loom::cpu
