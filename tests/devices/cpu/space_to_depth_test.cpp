// SpaceToDepth (opset 28's DCR/CRD modes) and DepthToSpace of the cpu device: hand-computed
// channel orders and the round trip between the two ops in each mode.
#include <gtest/gtest.h>

#include <numeric>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> iota_values(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

Tensor space_to_depth(const Tensor& x, int64_t opset, const char* mode, int64_t b) {
  KernelHarness h("SpaceToDepth", opset);
  h.input(x);
  h.attr_int("blocksize", b);
  if (mode) h.attr_string("mode", mode);
  return h.run(1)[0];
}

// x[0, c, r, col] = c * 4 + r * 2 + col with C = 2 and a 2x2 block.
TEST(SpaceToDepth, DcrOrdersChannelsByBlockPositionThenDepth) {
  Tensor x = make_filled<float>({1, 2, 2, 2}, iota_values(8));
  for (const char* mode : {static_cast<const char*>(nullptr), "DCR"}) {
    Tensor y = space_to_depth(x, 28, mode, 2);
    EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 8, 1, 1}));
    EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
  }
}

TEST(SpaceToDepth, CrdOrdersChannelsByDepthThenBlockPosition) {
  Tensor y = space_to_depth(make_filled<float>({1, 2, 2, 2}, iota_values(8)), 28, "CRD", 2);
  EXPECT_EQ(values_of<float>(y), iota_values(8));
}

TEST(SpaceToDepth, OpsetsBefore28AreAlwaysDcr) {
  Tensor y = space_to_depth(make_filled<float>({1, 2, 2, 2}, iota_values(8)), 13, nullptr, 2);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(SpaceToDepth, DepthToSpaceUndoesEachMode) {
  Tensor x = make_filled<float>({2, 3, 4, 6}, iota_values(144));
  for (const char* mode : {"DCR", "CRD"}) {
    Tensor y = space_to_depth(x, 28, mode, 2);
    EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{2, 12, 2, 3}));
    KernelHarness h("DepthToSpace", 13);
    h.input(y);
    h.attr_int("blocksize", 2);
    h.attr_string("mode", mode);
    Tensor back = h.run(1)[0];
    EXPECT_EQ(testing::shape(back), testing::shape(x)) << mode;
    EXPECT_EQ(values_of<float>(back), iota_values(144)) << mode;
  }
}

TEST(SpaceToDepth, RejectsUnknownModeAndBadBlocks) {
  Tensor x = make_filled<float>({1, 2, 2, 2}, iota_values(8));
  EXPECT_THROW(space_to_depth(x, 28, "RDC", 2), Error);
  EXPECT_THROW(space_to_depth(x, 28, "DCR", 3), Error);
  EXPECT_THROW(space_to_depth(x, 28, "DCR", 0), Error);
  // A blocksize whose square overflows must be refused, not computed.
  KernelHarness h("DepthToSpace", 13);
  h.input(x);
  h.attr_int("blocksize", int64_t{1} << 40);
  EXPECT_THROW(h.run(1), Error);
  // An empty image is divisible by any blocksize: channels x blocksize^2 must still be checked.
  Tensor empty = make_filled<float>({1, 2, 0, 0}, {});
  EXPECT_THROW(space_to_depth(empty, 28, "DCR", int64_t{1} << 40), Error);
}

}  // namespace
}  // namespace loom::cpu
