// FlexAttention (ai.onnx.preview) and the ai.onnx.ml Binarizer and ArrayFeatureExtractor of the
// cpu device: hand-computed results and malformed inputs. The score_mod/prob_mod subgraphs are
// covered by the current onnx suite's node tests (conformance_current_cpu).
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> flex(std::vector<int64_t> qd, std::vector<float> q, std::vector<int64_t> kd,
                        std::vector<float> k, std::vector<int64_t> vd, std::vector<float> v) {
  KernelHarness h("FlexAttention", 1, "ai.onnx.preview");
  h.input(make_filled<float>(qd, q));
  h.input(make_filled<float>(kd, k));
  h.input(make_filled<float>(vd, v));
  return values_of<float>(h.run(1)[0]);
}

TEST(FlexAttention, EqualScoresAverageTheValues) {
  // Zero keys: every score is 0, the softmax is uniform, Y is the mean of V's rows.
  const auto y = flex({1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 3, 2}, std::vector<float>(6, 0.f),
                      {1, 1, 3, 1}, {3, 6, 9});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 6.f, 1e-5);
  EXPECT_NEAR(y[1], 6.f, 1e-5);
}

TEST(FlexAttention, QueryHeadsShareTheirGroupsKeyValueHead) {
  // Two query heads, one key/value head; head size 1, default scale 1. Keys 0 and ln 3: the
  // second key gets 3 times the first one's weight for query 1, the same weight for query 0.
  const float ln3 = std::log(3.f);
  const auto y = flex({1, 2, 1, 1}, {1, 0}, {1, 1, 2, 1}, {0, ln3}, {1, 1, 2, 1}, {4, 8});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 0.25f * 4 + 0.75f * 8, 1e-5);  // query head 0 (q = 1)
  EXPECT_NEAR(y[1], 6.f, 1e-5);                    // query head 1 (q = 0)
}

TEST(FlexAttention, MismatchedShapesFail) {
  EXPECT_THROW(flex({1, 1, 2, 2}, std::vector<float>(4, 0.f), {1, 1, 3, 3},
                    std::vector<float>(9, 0.f), {1, 1, 3, 1}, {1, 2, 3}),
               Error);
  EXPECT_THROW(flex({1, 3, 1, 1}, {0, 0, 0}, {1, 2, 1, 1}, {0, 0}, {1, 2, 1, 1}, {0, 0}),
               Error);  // 3 query heads for 2 key/value heads
}

TEST(MlBinarizer, OneAboveTheThreshold) {
  KernelHarness h("Binarizer", 1, "ai.onnx.ml");
  h.input(make_filled<float>({4}, {-1.f, 0.5f, 0.6f, NAN}));
  h.attr_float("threshold", 0.5f);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{0, 0, 1, 0}));
}

TEST(MlArrayFeatureExtractor, SelectsAlongTheLastAxis) {
  KernelHarness h("ArrayFeatureExtractor", 1, "ai.onnx.ml");
  h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  h.input(make_filled<int64_t>({2}, {2, 0}));
  Tensor y = h.run(1)[0];
  EXPECT_EQ(std::vector<int64_t>(y.view.dims, y.view.dims + y.view.rank),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{3, 1, 6, 4}));
  // A 1-D X gives one row, as onnxruntime.
  KernelHarness one("ArrayFeatureExtractor", 1, "ai.onnx.ml");
  one.input(make_filled<float>({3}, {7, 8, 9}));
  one.input(make_filled<int64_t>({1}, {1}));
  Tensor r = one.run(1)[0];
  EXPECT_EQ(r.view.rank, 2);
  EXPECT_EQ(values_of<float>(r), (std::vector<float>{8}));
}

TEST(MlArrayFeatureExtractor, IndexOutsideTheAxisFails) {
  KernelHarness h("ArrayFeatureExtractor", 1, "ai.onnx.ml");
  h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  h.input(make_filled<int64_t>({1}, {3}));
  EXPECT_THROW(h.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
