// Gather, GatherElements and GatherND of the cpu device.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

using testing::shape;

TEST(Gather, NegativeIndicesOnAxisOne) {
  KernelHarness h("Gather", 13);
  h.input(make_filled<float>({2, 3}, {0, 1, 2, 3, 4, 5}));
  h.input(make_filled<int32_t>({2, 2}, {-1, 0, 1, -3}));
  h.attr_int("axis", 1);
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{2, 0, 1, 0, 5, 3, 4, 3}));
}

TEST(Gather, ScalarIndexDropsTheAxis) {
  KernelHarness h("Gather", 13);
  h.input(make_filled<int64_t>({3, 2}, {0, 1, 2, 3, 4, 5}));
  h.input(make_filled<int64_t>({}, {-2}));
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2}));
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{2, 3}));
}

TEST(Gather, OutOfRangeIndexIsAClearError) {
  KernelHarness h("Gather", 13);
  h.input(make_filled<float>({3}, {0, 1, 2}));
  h.input(make_filled<int64_t>({1}, {3}));
  try {
    h.run(1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("index 3 is out of range"), std::string::npos) << e.what();
  }
}

TEST(GatherElements, PicksAlongAxis) {
  KernelHarness h("GatherElements", 13);
  h.input(make_filled<float>({2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({2, 2}, {0, 0, 1, -2}));
  h.attr_int("axis", 1);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{1, 1, 4, 3}));
}

TEST(GatherND, IndexTuplesAndSlices) {
  KernelHarness h("GatherND", 13);
  h.input(make_filled<int32_t>({2, 2}, {0, 1, 2, 3}));
  h.input(make_filled<int64_t>({2, 1}, {1, 0}));
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{2, 3, 0, 1}));
}

TEST(GatherND, BatchDims) {
  // data [2, 2, 2], batch_dims 1, indices [2, 1]: per batch pick row indices[b].
  KernelHarness h("GatherND", 13);
  h.input(make_filled<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  h.input(make_filled<int64_t>({2, 1}, {1, 0}));
  h.attr_int("batch_dims", 1);
  auto out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{2, 3, 4, 5}));

  // Full index tuples with a batch: indices [2, 1, 2] pick single elements.
  KernelHarness full("GatherND", 13);
  full.input(make_filled<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  full.input(make_filled<int64_t>({2, 1, 2}, {0, 1, 1, -1}));
  full.attr_int("batch_dims", 1);
  auto o2 = full.run(1);
  EXPECT_EQ(shape(o2[0]), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values_of<int32_t>(o2[0]), (std::vector<int32_t>{1, 7}));
}

}  // namespace
}  // namespace loom::cpu
