// Reductions: axes as attribute or input, keepdims, empty axes, empty inputs; ArgMax/ArgMin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

using testing::shape;

// x = [[[0,1],[2,3],[4,5]], [[6,7],[8,9],[10,11]]], shape [2,3,2].
Tensor x232() {
  return make_filled<float>({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

TEST(Reduce, AxesAttributeBeforeOpset18) {
  KernelHarness h("ReduceMax", 13);
  h.attr_ints("axes", {1});
  h.attr_int("keepdims", 0);
  h.input(x232());
  Tensor out = h.run(1)[0];
  EXPECT_EQ(shape(out), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{4, 5, 10, 11}));
}

TEST(Reduce, AxesInputFromOpset18AndNegativeAxes) {
  KernelHarness h("ReduceMean", 18);
  h.input(x232());
  h.input(make_filled<int64_t>({2}, {0, -1}));
  Tensor out = h.run(1)[0];
  EXPECT_EQ(shape(out), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{3.5f, 5.5f, 7.5f}));
}

TEST(Reduce, ReduceSumTakesAxesAsInputFromOpset13) {
  KernelHarness h("ReduceSum", 13);
  h.input(x232());
  h.input(make_filled<int64_t>({1}, {2}));
  h.attr_int("keepdims", 0);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 5, 9, 13, 17, 21}));
}

TEST(Reduce, EmptyAxesReduceAllOrPassThroughWithNoop) {
  {
    KernelHarness h("ReduceSum", 13);
    h.input(x232());
    Tensor out = h.run(1)[0];
    EXPECT_EQ(shape(out), (std::vector<int64_t>{1, 1, 1}));
    EXPECT_EQ(values_of<float>(out), (std::vector<float>{66}));
  }
  {
    KernelHarness h("ReduceSum", 13);
    h.attr_int("noop_with_empty_axes", 1);
    h.input(x232());
    h.input(make_filled<int64_t>({0}, {}));
    Tensor out = h.run(1)[0];
    EXPECT_EQ(shape(out), (std::vector<int64_t>{2, 3, 2}));
    EXPECT_EQ(values_of<float>(out)[11], 11);
  }
}

TEST(Reduce, EmptyReductionGivesTheIdentity) {
  Tensor empty = make_filled<float>({2, 0}, {});
  auto run = [&](const char* op) {
    KernelHarness h(op, 18);
    h.input(make_filled<float>({2, 0}, {}));
    h.input(make_filled<int64_t>({1}, {1}));
    h.attr_int("keepdims", 0);
    return values_of<float>(h.run(1)[0]);
  };
  EXPECT_EQ(run("ReduceSum"), (std::vector<float>{0, 0}));
  EXPECT_EQ(run("ReduceProd"), (std::vector<float>{1, 1}));
  EXPECT_EQ(run("ReduceMax")[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(run("ReduceLogSumExp")[0], -std::numeric_limits<float>::infinity());
}

TEST(Reduce, NormsAndLogSumExpAreStable) {
  {
    KernelHarness h("ReduceL2", 13);
    h.attr_ints("axes", {1});
    h.input(make_filled<float>({2, 2}, {3, 4, -6, 8}));
    EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{5, 10}));
  }
  {
    KernelHarness h("ReduceLogSumExp", 13);
    h.attr_ints("axes", {0});
    h.input(make_filled<float>({2}, {1000, 1000}));
    EXPECT_FLOAT_EQ(values_of<float>(h.run(1)[0])[0], 1000.0f + std::log(2.0f));
  }
  {
    KernelHarness h("ReduceL1", 13);
    h.input(make_filled<int32_t>({3}, {-1, 2, -3}));
    EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{6}));
  }
}

TEST(Reduce, LargeReductionsSplitOverThreadsGiveTheSerialResult) {
  // Few outputs, many inputs each: the reduced dimension is split and partial results merged.
  const int64_t n = 100003;
  std::vector<float> v(static_cast<size_t>(2 * n));
  double s0 = 0, s1 = 0;
  float m1 = -1e30f;
  for (int64_t i = 0; i < 2 * n; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>((i * 7919) % 1000) * 0.001f - 0.3f;
    (i < n ? s0 : s1) += v[static_cast<size_t>(i)];
    if (i >= n) m1 = std::max(m1, v[static_cast<size_t>(i)]);
  }
  {
    KernelHarness h("ReduceSum", 13);
    h.input(make_filled<float>({2, n}, v));
    h.input(make_filled<int64_t>({1}, {1}));
    std::vector<float> out = values_of<float>(h.run(1)[0]);
    EXPECT_FLOAT_EQ(out[0], static_cast<float>(s0));
    EXPECT_FLOAT_EQ(out[1], static_cast<float>(s1));
  }
  {
    KernelHarness h("ReduceMax", 13);
    h.attr_ints("axes", {1});
    h.input(make_filled<float>({2, n}, v));
    EXPECT_EQ(values_of<float>(h.run(1)[0])[1], m1);
  }
  {
    KernelHarness h("ReduceMean", 13);  // every axis
    h.input(make_filled<float>({2, n}, v));
    EXPECT_FLOAT_EQ(values_of<float>(h.run(1)[0])[0], static_cast<float>((s0 + s1) / (2 * n)));
  }
}

// Narrow integers and bfloat16 are widened to their accumulator before they are folded: sums
// wrap like the output type, products and norms use the full accumulator, NaN and the signed
// minimum survive.
TEST(Reduce, NarrowTypesReduceThroughTheirAccumulator) {
  {
    KernelHarness h("ReduceSum", 13);
    h.input(make_filled<int8_t>({2, 2}, {100, -128, 100, -1}));
    h.input(make_filled<int64_t>({1}, {0}));
    h.attr_int("keepdims", 0);
    // 200 wraps to -56 as int8; -129 wraps to 127.
    EXPECT_EQ(values_of<int8_t>(h.run(1)[0]), (std::vector<int8_t>{-56, 127}));
  }
  {
    KernelHarness h("ReduceMin", 18);
    h.input(make_filled<int16_t>({3}, {5, -32768, 7}));
    EXPECT_EQ(values_of<int16_t>(h.run(1)[0]), (std::vector<int16_t>{-32768}));
  }
  {
    KernelHarness h("ReduceProd", 18);
    h.input(make_filled<uint32_t>({3}, {65536, 65536, 3}));
    // 2^32 * 3 wraps to 0 as uint32, however it is accumulated.
    EXPECT_EQ(values_of<uint32_t>(h.run(1)[0]), (std::vector<uint32_t>{0}));
  }
  {
    KernelHarness h("ReduceSumSquare", 18);
    h.input(make_filled<uint16_t>({2}, {300, 400}));
    // 250000 wraps modulo 2^16.
    EXPECT_EQ(values_of<uint16_t>(h.run(1)[0]),
              (std::vector<uint16_t>{static_cast<uint16_t>(250000)}));
  }
  {
    KernelHarness h("ReduceMax", 18);
    h.input(make_filled<BFloat16>({3}, {BFloat16(1.5f), BFloat16(std::nanf("")), BFloat16(2.0f)}));
    EXPECT_TRUE(std::isnan(static_cast<float>(values_of<BFloat16>(h.run(1)[0])[0])));
  }
  {
    KernelHarness h("ReduceMean", 18);
    h.input(make_filled<BFloat16>({2, 2}, {BFloat16(1), BFloat16(2), BFloat16(3), BFloat16(5)}));
    h.input(make_filled<int64_t>({1}, {1}));
    std::vector<BFloat16> mean = values_of<BFloat16>(h.run(1)[0]);
    ASSERT_EQ(mean.size(), 2u);
    EXPECT_EQ(static_cast<float>(mean[0]), 1.5f);
    EXPECT_EQ(static_cast<float>(mean[1]), 4.0f);
  }
}

TEST(Reduce, RepeatedOrOutOfRangeAxisIsAnError) {
  KernelHarness h("ReduceSum", 11);
  h.attr_ints("axes", {3});
  h.input(x232());
  EXPECT_THROW(h.run(1), Error);
}

TEST(ArgMax, KeepdimsAndSelectLastIndex) {
  {
    KernelHarness h("ArgMax", 13);
    h.attr_int("axis", 1);
    h.input(make_filled<float>({2, 3}, {1, 3, 3, 5, 0, 5}));
    Tensor out = h.run(1)[0];
    EXPECT_EQ(shape(out), (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{1, 0}));
  }
  {
    KernelHarness h("ArgMax", 13);
    h.attr_int("axis", 1);
    h.attr_int("keepdims", 0);
    h.attr_int("select_last_index", 1);
    h.input(make_filled<float>({2, 3}, {1, 3, 3, 5, 0, 5}));
    Tensor out = h.run(1)[0];
    EXPECT_EQ(shape(out), (std::vector<int64_t>{2}));
    EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{2, 2}));
  }
  {
    KernelHarness h("ArgMin", 13);
    h.attr_int("axis", 0);
    h.input(make_filled<int32_t>({3, 2}, {4, 1, 2, 7, 3, 0}));
    EXPECT_EQ(values_of<int64_t>(h.run(1)[0]), (std::vector<int64_t>{1, 2}));
  }
}

TEST(ReduceBool, Opset20MaxIsAnyAndMinIsAll) {
  for (auto [op, want] : {std::pair{"ReduceMax", std::vector<bool>{true, false, true}},
                          std::pair{"ReduceMin", std::vector<bool>{false, false, true}}}) {
    KernelHarness h(op, 20);
    h.input(make_filled<bool>({3, 2}, {true, false, false, false, true, true}));
    h.input(make_filled<int64_t>({1}, {1}));
    h.attr_int("keepdims", 0);
    Tensor y = h.run(1)[0];
    EXPECT_EQ(y.view.dtype, LOOM_DTYPE_BOOL);
    const bool* p = static_cast<const bool*>(y.view.data);
    EXPECT_EQ(std::vector<bool>(p, p + 3), want) << op;
  }
  // Over an empty set: the identities, false for max and true for min.
  for (auto [op, want] : {std::pair{"ReduceMax", false}, std::pair{"ReduceMin", true}}) {
    KernelHarness h(op, 20);
    h.input(make_filled<bool>({0, 2}, {}));
    h.input(make_filled<int64_t>({1}, {0}));
    Tensor y = h.run(1)[0];
    EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(static_cast<const bool*>(y.view.data)[1], want) << op;
  }
  // Bool is not a ReduceMax type before opset 20.
  KernelHarness old("ReduceMax", 18);
  old.input(make_filled<bool>({2}, {true, false}));
  EXPECT_THROW(old.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
