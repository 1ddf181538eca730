// Unique: all four outputs, sorted and first-occurrence order, slices along an axis.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

TEST(UniqueKernel, SortedFlattenedWithAllOutputs) {
  KernelHarness h("Unique", 11);
  h.input(make_filled<float>({6}, {2.f, 1.f, 1.f, 3.f, 4.f, 3.f}));
  auto out = h.run(4);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1.f, 2.f, 3.f, 4.f}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{2, 1, 2, 1}));
}

TEST(UniqueKernel, UnsortedKeepsFirstOccurrenceOrder) {
  KernelHarness h("Unique", 11);
  h.attr_int("sorted", 0);
  h.input(make_filled<int64_t>({2, 3}, {5, 2, 5, 7, 2, 9}));
  auto out = h.run(4);
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{5, 2, 7, 9}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{0, 1, 3, 5}));
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{0, 1, 0, 2, 1, 3}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{2, 2, 1, 1}));
}

TEST(UniqueKernel, RowsAlongAxis0AreSortedLexicographically) {
  KernelHarness h("Unique", 11);
  h.attr_int("axis", 0);
  h.input(make_filled<int32_t>({4, 2}, {1, 2, 0, 5, 1, 2, 0, 3}));
  auto out = h.run(4);
  EXPECT_EQ(out[0].view.dims[0], 3);
  EXPECT_EQ(out[0].view.dims[1], 2);
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{0, 3, 0, 5, 1, 2}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{2, 1, 2, 0}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{1, 1, 2}));
}

TEST(UniqueKernel, ColumnsAlongNegativeAxis) {
  KernelHarness h("Unique", 11);
  h.attr_int("axis", -1);
  h.input(make_filled<int64_t>({2, 3}, {1, 0, 1, 4, 2, 4}));
  auto out = h.run(4);
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 2, 4}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{1, 2}));
}

TEST(UniqueKernel, StringsSortedByteWise) {
  const std::vector<std::string> words{"pear", "apple", "pear", "fig"};
  Tensor x = make_tensor(LOOM_DTYPE_STRING, std::vector<int64_t>{4});
  auto* views = static_cast<loom_string_t*>(x.view.data);
  for (size_t i = 0; i < words.size(); ++i) {
    (*x.strings)[i] = words[i];
    views[i] = loom_string_t{(*x.strings)[i].data(), (*x.strings)[i].size()};
  }
  KernelHarness h("Unique", 11);
  h.input(std::move(x));
  auto out = h.run(4);
  ASSERT_EQ(out[0].view.dtype, LOOM_DTYPE_STRING);
  ASSERT_EQ(out[0].view.dims[0], 3);
  const auto* y = static_cast<const loom_string_t*>(out[0].view.data);
  EXPECT_EQ(std::string(y[0].data, y[0].size), "apple");
  EXPECT_EQ(std::string(y[1].data, y[1].size), "fig");
  EXPECT_EQ(std::string(y[2].data, y[2].size), "pear");
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{2, 0, 2, 1}));
}

}  // namespace
}  // namespace loom::cpu
