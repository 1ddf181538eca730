// Slice of the cpu device: negative steps, clamping of out-of-range starts/ends, the
// attribute form of opset 1 and errors.
#include <gtest/gtest.h>

#include <limits>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

std::vector<Tensor> slice(std::vector<int64_t> dims, std::vector<int64_t> starts,
                          std::vector<int64_t> ends, std::vector<int64_t> axes,
                          std::vector<int64_t> steps) {
  KernelHarness h("Slice", 13);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  h.input(make_filled<float>(dims, iota(static_cast<size_t>(n))));
  const int64_t k = static_cast<int64_t>(starts.size());
  h.input(make_filled<int64_t>({k}, starts));
  h.input(make_filled<int64_t>({k}, ends));
  if (axes.empty())
    h.omitted_input();
  else
    h.input(make_filled<int64_t>({k}, axes));
  if (!steps.empty()) h.input(make_filled<int64_t>({k}, steps));
  return h.run(1);
}

TEST(Slice, NegativeStepReversesWholeAxis) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto out = slice({5}, {-1}, {kMin}, {0}, {-1});
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{4, 3, 2, 1, 0}));
}

TEST(Slice, NegativeStepTwoWithClampedStart) {
  // start 100 clamps to 9 for a negative step; end -20 clamps to -1 (before the first).
  auto out = slice({10}, {100}, {-20}, {0}, {-2});
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{9, 7, 5, 3, 1}));
}

TEST(Slice, NegativeStepFromBeforeTheStartSelectsNothing) {
  // start -7 + 3 = -4 lies before the axis: numpy (and the ONNX reference) take nothing.
  auto out = slice({3}, {-7}, {-10}, {0}, {-1});
  EXPECT_EQ(out[0].view.dims[0], 0);
}

TEST(Slice, ClampsEndsAndHandlesEmptyResults) {
  auto out = slice({2, 4}, {1, 0}, {1000, 3}, {}, {});
  EXPECT_EQ(out[0].view.dims[0], 1);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{4, 5, 6}));
  auto empty = slice({2, 4}, {3}, {1}, {1}, {1});
  EXPECT_EQ(empty[0].view.dims[1], 0);
}

TEST(Slice, NegativeAxesAndSteps) {
  // 3x4, rows 0..2 step 2, columns from -1 down to (not including) 0.
  auto out = slice({3, 4}, {0, -1}, {3, 0}, {0, -1}, {2, -1});
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{3, 2, 1, 11, 10, 9}));
}

TEST(Slice, AttributeFormOfOpset1) {
  KernelHarness h("Slice", 1);
  h.input(make_filled<float>({3, 3}, iota(9)));
  h.attr_ints("starts", {1});
  h.attr_ints("ends", {-1});
  h.attr_ints("axes", {1});
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 4, 7}));
}

TEST(Slice, ZeroStepAndDuplicateAxesAreErrors) {
  EXPECT_THROW(slice({4}, {0}, {4}, {0}, {0}), Error);
  EXPECT_THROW(slice({4, 4}, {0, 0}, {1, 1}, {0, -2}, {}), Error);
}

}  // namespace
}  // namespace loom::cpu
