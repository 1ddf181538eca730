// TensorScatter-24 of the cpu device: linear writes at per-batch indices, circular wrap-around,
// a non-default axis, and updates that do not fit.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> scatter(const char* mode, std::vector<int64_t> indices,
                           std::vector<float> update, int64_t len) {
  // Cache [2 batches, 4 positions, 1]; update [2, len, 1].
  KernelHarness h("TensorScatter", 24);
  h.input(make_filled<float>({2, 4, 1}, std::vector<float>(8, 0)));
  h.input(make_filled<float>({2, len, 1}, update));
  if (!indices.empty()) h.input(make_filled<int64_t>({2}, indices));
  h.attr_string("mode", mode);
  return values_of<float>(h.run(1)[0]);
}

TEST(TensorScatter, LinearWritesFromEachBatchIndex) {
  EXPECT_EQ(scatter("linear", {1, 2}, {1, 2, 3, 4}, 2),
            (std::vector<float>{0, 1, 2, 0, 0, 0, 3, 4}));
  // Without write_indices every batch writes from 0.
  EXPECT_EQ(scatter("linear", {}, {1, 2}, 1), (std::vector<float>{1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_THROW(scatter("linear", {3, 0}, {1, 2, 3, 4}, 2), Error);
  EXPECT_THROW(scatter("linear", {-1, 0}, {1, 2, 3, 4}, 2), Error);
}

TEST(TensorScatter, CircularWrapsAround) {
  EXPECT_EQ(scatter("circular", {3, 6}, {1, 2, 3, 4}, 2),
            (std::vector<float>{2, 0, 0, 1, 0, 0, 3, 4}));
  EXPECT_THROW(scatter("ring", {0, 0}, {1, 2, 3, 4}, 2), Error);
}

TEST(TensorScatter, OtherAxisAndBadShapes) {
  // axis 1 of a [1, 3, 2] cache: rows of 2 elements.
  KernelHarness h("TensorScatter", 24);
  h.input(make_filled<float>({1, 3, 2}, std::vector<float>(6, 0)));
  h.input(make_filled<float>({1, 1, 2}, {7, 8}));
  h.input(make_filled<int64_t>({1}, {2}));
  h.attr_int("axis", 1);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{0, 0, 0, 0, 7, 8}));
  KernelHarness batch_axis("TensorScatter", 24);
  batch_axis.input(make_filled<float>({2, 2}, {0, 0, 0, 0}));
  batch_axis.input(make_filled<float>({1, 2}, {1, 1}));
  batch_axis.attr_int("axis", 0);
  EXPECT_THROW(batch_axis.run(1), Error);
  KernelHarness too_long("TensorScatter", 24);
  too_long.input(make_filled<float>({1, 2, 1}, {0, 0}));
  too_long.input(make_filled<float>({1, 3, 1}, {1, 2, 3}));
  EXPECT_THROW(too_long.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
