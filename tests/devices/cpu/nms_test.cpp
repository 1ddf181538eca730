// NonMaxSuppression on the ONNX specification's examples (boxes of the spec's test cases).
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

const std::vector<float> kBoxes{0.0f, 0.0f,  1.0f, 1.0f,  0.0f, 0.1f,   1.0f, 1.1f,
                                0.0f, -0.1f, 1.0f, 0.9f,  0.0f, 10.0f,  1.0f, 11.0f,
                                0.0f, 10.1f, 1.0f, 11.1f, 0.0f, 100.0f, 1.0f, 101.0f};
const std::vector<float> kScores{0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

std::vector<int64_t> run_nms(std::vector<float> boxes, std::vector<float> scores, int64_t batches,
                             int64_t classes, int64_t max_out, float iou, float score,
                             int center = 0) {
  const int64_t n = static_cast<int64_t>(boxes.size()) / 4 / batches;
  KernelHarness h("NonMaxSuppression", 11);
  if (center) h.attr_int("center_point_box", 1);
  h.input(make_filled<float>({batches, n, 4}, boxes));
  h.input(make_filled<float>({batches, classes, n}, scores));
  h.input(make_filled<int64_t>({1}, {max_out}));
  h.input(make_filled<float>({1}, {iou}));
  h.input(make_filled<float>({1}, {score}));
  auto out = h.run(1);
  EXPECT_EQ(out[0].view.rank, 2);
  EXPECT_EQ(out[0].view.dims[1], 3);
  return values_of<int64_t>(out[0]);
}

TEST(NmsKernel, SuppressByIou) {
  EXPECT_EQ(run_nms(kBoxes, kScores, 1, 1, 3, 0.5f, 0.f),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(NmsKernel, SuppressByIouAndScores) {
  EXPECT_EQ(run_nms(kBoxes, kScores, 1, 1, 3, 0.5f, 0.4f),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0}));
}

TEST(NmsKernel, FlippedCoordinatesAndCenterPointFormat) {
  std::vector<float> flipped{1.0f, 1.0f,  0.0f, 0.0f,  0.0f, 0.1f,   1.0f, 1.1f,
                             0.0f, 0.9f,  1.0f, -0.1f, 0.0f, 10.0f,  1.0f, 11.0f,
                             1.0f, 10.1f, 0.0f, 11.1f, 1.0f, 101.0f, 0.0f, 100.0f};
  EXPECT_EQ(run_nms(flipped, kScores, 1, 1, 3, 0.5f, 0.f),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  std::vector<float> centered{0.5f, 0.5f,  1.0f, 1.0f, 0.5f, 0.6f,   1.0f, 1.0f,
                              0.5f, 0.4f,  1.0f, 1.0f, 0.5f, 10.5f,  1.0f, 1.0f,
                              0.5f, 10.6f, 1.0f, 1.0f, 0.5f, 100.5f, 1.0f, 1.0f};
  EXPECT_EQ(run_nms(centered, kScores, 1, 1, 3, 0.5f, 0.f, 1),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(NmsKernel, LimitOutputTwoBatchesTwoClassesIdenticalBoxes) {
  EXPECT_EQ(run_nms(kBoxes, kScores, 1, 1, 2, 0.5f, 0.f), (std::vector<int64_t>{0, 0, 3, 0, 0, 0}));
  std::vector<float> two_batches = kBoxes;
  two_batches.insert(two_batches.end(), kBoxes.begin(), kBoxes.end());
  std::vector<float> scores2 = kScores;
  scores2.insert(scores2.end(), kScores.begin(), kScores.end());
  EXPECT_EQ(run_nms(two_batches, scores2, 2, 1, 2, 0.5f, 0.f),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0}));
  EXPECT_EQ(run_nms(kBoxes, scores2, 1, 2, 2, 0.5f, 0.f),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0}));
  std::vector<float> same(40);
  for (int i = 0; i < 10; ++i) {
    same[i * 4 + 2] = 1.f;
    same[i * 4 + 3] = 1.f;
  }
  EXPECT_EQ(run_nms(same, std::vector<float>(10, 0.9f), 1, 1, 3, 0.5f, 0.f),
            (std::vector<int64_t>{0, 0, 0}));
}

TEST(NmsKernel, BadBoxShapeIsAnError) {
  KernelHarness h("NonMaxSuppression", 11);
  h.input(make_filled<float>({1, 2, 3}, std::vector<float>(6, 0.f)));
  h.input(make_filled<float>({1, 1, 2}, {0.5f, 0.5f}));
  EXPECT_THROW(h.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
