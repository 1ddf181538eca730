// The optimizer steps of ai.onnx.preview.training on the cpu device beyond the backend tests:
// values computed by hand from the update rules (two tensors in one node, doubles, the
// first-step adjustments at T = 0, the post-update decay), and the errors for malformed nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

constexpr const char* kDomain = "ai.onnx.preview.training";

void scalars(KernelHarness& h, float r, int64_t t) {
  h.input(make_filled<float>({}, {r}));
  h.input(make_filled<int64_t>({}, {t}));
}

TEST(TrainingOptimizers, AdagradUpdatesEveryTensorOfTheNode) {
  KernelHarness h("Adagrad", 1, kDomain);
  scalars(h, 0.5f, 2);
  h.attr_float("decay_factor", 0.5f);  // r = 0.5 / (1 + 2 * 0.5) = 0.25
  h.attr_float("norm_coefficient", 0.f);
  h.attr_float("epsilon", 0.f);
  h.input(make_filled<double>({2}, {1.0, 2.0}));   // X1
  h.input(make_filled<double>({1}, {4.0}));        // X2
  h.input(make_filled<double>({2}, {3.0, -4.0}));  // G1
  h.input(make_filled<double>({1}, {0.0}));        // G2
  h.input(make_filled<double>({2}, {16.0, 9.0}));  // H1
  h.input(make_filled<double>({1}, {1.0}));        // H2
  const auto out = h.run(4);
  // H' = H + G^2 = {25, 25}; X' = X - 0.25 G / sqrt(H') = {1 - 0.15, 2 + 0.2}.
  EXPECT_EQ(values_of<double>(out[0]), (std::vector<double>{0.85, 2.2}));
  EXPECT_EQ(values_of<double>(out[1]), (std::vector<double>{4.0}));
  EXPECT_EQ(values_of<double>(out[2]), (std::vector<double>{25.0, 25.0}));
  EXPECT_EQ(values_of<double>(out[3]), (std::vector<double>{1.0}));
}

TEST(TrainingOptimizers, AdamCorrectsTheRateAfterTheFirstStepAndDecaysAfterTheUpdate) {
  for (int64_t t : {0, 1}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    KernelHarness h("Adam", 1, kDomain);
    scalars(h, 0.1f, t);
    h.attr_float("alpha", 0.5f);
    h.attr_float("beta", 0.75f);
    h.attr_float("epsilon", 0.f);
    h.attr_float("norm_coefficient", 1.f);        // g = X + G
    h.attr_float("norm_coefficient_post", 0.5f);  // X'' = 0.5 X'
    h.input(make_filled<float>({1}, {1.f}));      // X
    h.input(make_filled<float>({1}, {1.f}));      // G: g = 2
    h.input(make_filled<float>({1}, {2.f}));      // V: V' = 0.5 * 2 + 0.5 * 2 = 2
    h.input(make_filled<float>({1}, {4.f}));      // H: H' = 0.75 * 4 + 0.25 * 4 = 4
    const auto out = h.run(3);
    // r = 0.1 at T = 0; at T = 1, 0.1 sqrt(1 - 0.75) / (1 - 0.5) = 0.1. X' = 1 - r * 2 / 2.
    const double r = t == 0 ? 0.1 : 0.1 * std::sqrt(1 - 0.75) / (1 - 0.5);
    EXPECT_FLOAT_EQ(values_of<float>(out[0])[0], static_cast<float>(0.5 * (1 - r)));
    EXPECT_EQ(values_of<float>(out[1]), (std::vector<float>{2.f}));
    EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{4.f}));
  }
}

TEST(TrainingOptimizers, MomentumStandardAndNesterov) {
  for (const char* mode : {"standard", "nesterov"})
    for (int64_t t : {0, 3}) {
      SCOPED_TRACE(std::string(mode) + " T = " + std::to_string(t));
      KernelHarness h("Momentum", 1, kDomain);
      scalars(h, 0.5f, t);
      h.attr_float("alpha", 0.5f);
      h.attr_float("beta", 0.25f);
      h.attr_string("mode", mode);
      h.attr_float("norm_coefficient", 0.f);
      h.input(make_filled<float>({1}, {1.f}));  // X
      h.input(make_filled<float>({1}, {2.f}));  // G
      h.input(make_filled<float>({1}, {4.f}));  // V
      const auto out = h.run(2);
      // beta is 1 at the first step: V' = 0.5 * 4 + b * 2.
      const float b = t == 0 ? 1.f : 0.25f, v = 2.f + b * 2.f;
      const float x =
          std::string(mode) == "standard" ? 1.f - 0.5f * v : 1.f - 0.5f * (2.f + 0.5f * v);
      EXPECT_FLOAT_EQ(values_of<float>(out[0])[0], x);
      EXPECT_FLOAT_EQ(values_of<float>(out[1])[0], v);
    }
}

TEST(TrainingOptimizers, MalformedNodesAreRefused) {
  auto expect_error = [](KernelHarness& h, size_t outputs, const std::string& words) {
    try {
      h.run(outputs);
      ADD_FAILURE() << "ran";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  {
    SCOPED_TRACE("a gradient of another shape");
    KernelHarness h("Adagrad", 1, kDomain);
    scalars(h, 0.1f, 0);
    h.input(make_filled<float>({2}, {1.f, 2.f}));
    h.input(make_filled<float>({3}, {1.f, 2.f, 3.f}));
    h.input(make_filled<float>({2}, {1.f, 2.f}));
    expect_error(h, 2, "does not have the type and shape of X1");
  }
  {
    SCOPED_TRACE("inputs that do not form whole groups");
    KernelHarness h("Adam", 1, kDomain);
    scalars(h, 0.1f, 0);
    for (int i = 0; i < 5; ++i) h.input(make_filled<float>({1}, {1.f}));
    expect_error(h, 3, "groups of n tensors");
  }
  {
    SCOPED_TRACE("R of two elements");
    KernelHarness h("Adagrad", 1, kDomain);
    h.input(make_filled<float>({2}, {0.1f, 0.2f}));
    h.input(make_filled<int64_t>({}, {0}));
    for (int i = 0; i < 3; ++i) h.input(make_filled<float>({1}, {1.f}));
    expect_error(h, 2, "R must be one float or double");
  }
  {
    SCOPED_TRACE("Momentum without its required mode");
    KernelHarness h("Momentum", 1, kDomain);
    scalars(h, 0.1f, 0);
    h.attr_float("alpha", 0.5f);
    h.attr_float("beta", 0.5f);
    h.attr_float("norm_coefficient", 0.f);
    for (int i = 0; i < 3; ++i) h.input(make_filled<float>({1}, {1.f}));
    expect_error(h, 2, "the attribute 'mode' is required");
  }
}

}  // namespace
}  // namespace loom::cpu
