// The losses, GridSample and TfIdfVectorizer kernels on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

// The specification's NLL example: input [2, 3, 2], target [[2, 1], [0, 2]].
const std::vector<float> kInput{1, 2, 2, 2, 3, 2, 0, 1, 2, 2, 1, 2};
const std::vector<int64_t> kTarget{2, 1, 0, 2};

TEST(LossKernels, NllNoneSumAndWeightedMean) {
  KernelHarness none("NegativeLogLikelihoodLoss", 13);
  none.attr_string("reduction", "none");
  none.input(make_filled<float>({2, 3, 2}, kInput));
  none.input(make_filled<int64_t>({2, 2}, kTarget));
  EXPECT_EQ(values_of<float>(none.run(1)[0]), (std::vector<float>{-3, -2, -0, -2}));

  KernelHarness mean("NegativeLogLikelihoodLoss", 13);
  mean.input(make_filled<float>({2, 3, 2}, kInput));
  mean.input(make_filled<int64_t>({2, 2}, kTarget));
  mean.input(make_filled<float>({3}, {0.2f, 0.3f, 0.1f}));
  auto out = mean.run(1);
  EXPECT_EQ(out[0].view.rank, 0);
  EXPECT_NEAR(values_of<float>(out[0])[0], -1.1f / 0.7f, 1e-6);
}

TEST(LossKernels, NllIgnoreIndexAndOutOfRangeTarget) {
  KernelHarness h("NegativeLogLikelihoodLoss", 13);
  h.attr_int("ignore_index", 2);
  h.input(make_filled<float>({2, 3, 2}, kInput));
  h.input(make_filled<int64_t>({2, 2}, kTarget));
  // Non-ignored: -2 (n0 d1 class 1) and -0 (n1 d0 class 0): mean over 2 samples.
  EXPECT_NEAR(values_of<float>(h.run(1)[0])[0], -1.f, 1e-6);

  KernelHarness bad("NegativeLogLikelihoodLoss", 13);
  bad.input(make_filled<float>({1, 2}, {0.f, 0.f}));
  bad.input(make_filled<int64_t>({1}, {5}));
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(LossKernels, SoftmaxCrossEntropyWithLogProb) {
  KernelHarness h("SoftmaxCrossEntropyLoss", 13);
  h.attr_string("reduction", "sum");
  h.input(make_filled<float>({2, 2}, {0.f, 0.f, 1.f, 3.f}));
  h.input(make_filled<int32_t>({2}, {0, 1}));
  auto out = h.run(2);
  const double l0 = std::log(2.0), l1 = std::log(1.0 + std::exp(-2.0));
  EXPECT_NEAR(values_of<float>(out[0])[0], l0 + l1, 1e-6);
  auto log_prob = values_of<float>(out[1]);
  EXPECT_NEAR(log_prob[0], -l0, 1e-6);
  EXPECT_NEAR(log_prob[3], -l1, 1e-6);
}

TEST(GridSampleKernel, BilinearNearestAndPadding) {
  auto sample = [](const char* mode, const char* padding, int align, std::vector<float> grid) {
    KernelHarness h("GridSample", 16);
    h.attr_string("mode", mode);
    h.attr_string("padding_mode", padding);
    h.attr_int("align_corners", align);
    h.input(make_filled<float>({1, 1, 2, 2}, {1, 2, 3, 4}));
    const int64_t points = static_cast<int64_t>(grid.size()) / 2;
    h.input(make_filled<float>({1, 1, points, 2}, grid));
    return values_of<float>(h.run(1)[0]);
  };
  // align_corners: (-1,-1) is pixel (0,0), (1,1) is pixel (1,1), (0,0) the centre.
  EXPECT_EQ(sample("bilinear", "zeros", 1, {-1, -1, 1, 1, 0, 0}), (std::vector<float>{1, 4, 2.5f}));
  // Without align_corners (-1,-1) is the image corner: a quarter of pixel (0,0) remains.
  EXPECT_EQ(sample("bilinear", "zeros", 0, {-1, -1}), (std::vector<float>{0.25f}));
  EXPECT_EQ(sample("bilinear", "border", 0, {-1, -1, 3, 3}), (std::vector<float>{1, 4}));
  EXPECT_EQ(sample("nearest", "zeros", 1, {0.9f, -0.9f, 5, 5}), (std::vector<float>{2, 0}));
  // Reflection: x = 2 (one pixel past the right edge, align_corners) reflects to pixel 0.
  EXPECT_EQ(sample("nearest", "reflection", 1, {3, -1}), (std::vector<float>{1}));
}

TEST(TfIdfKernel, CountsUnigramsAndSkipBigrams) {
  KernelHarness h("TfIdfVectorizer", 9);
  h.attr_string("mode", "TF");
  h.attr_int("min_gram_length", 1);
  h.attr_int("max_gram_length", 2);
  h.attr_int("max_skip_count", 1);
  h.attr_ints("ngram_counts", {0, 2});
  h.attr_ints("ngram_indexes", {0, 1, 2});
  h.attr_ints("pool_int64s", {7, 8, 7, 8});  // unigrams 7, 8; bigram (7, 8)
  h.input(make_filled<int32_t>({5}, {7, 8, 7, 9, 8}));
  // 7 twice, 8 twice; (7,8) adjacent at 0 and with one skip at 2 -> 4 (7,9,8).
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{2, 2, 2}));
}

}  // namespace
}  // namespace loom::cpu
