// ai.onnx.ml TreeEnsemble of the cpu device beyond the backend tests: aggregation, the post
// transforms (which the ONNX reference ignores; onnxruntime applies them), NaN routing, and the
// hostile models: indices out of range and a cycle, each a one-line error.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

// Two stumps on feature 0 (split 0.5) and feature 1 (split 1.0): each sends a row to leaf 0
// (weight 1, target 0) when the feature is <= the split, else to leaf 1 (weight 3, target 1).
void stumps(KernelHarness& h, std::vector<int64_t> true_ids = {0, 0},
            std::vector<int64_t> true_leafs = {1, 1}) {
  h.attr_tensor("nodes_splits", make_filled<float>({2}, {0.5f, 1.f}));
  h.attr_tensor("nodes_modes", make_filled<uint8_t>({2}, {0, 0}));
  h.attr_ints("nodes_featureids", {0, 1});
  h.attr_ints("nodes_truenodeids", std::move(true_ids));
  h.attr_ints("nodes_falsenodeids", {1, 1});
  h.attr_ints("nodes_trueleafs", std::move(true_leafs));
  h.attr_ints("nodes_falseleafs", {1, 1});
  h.attr_ints("nodes_missing_value_tracks_true", {1, 0});
  h.attr_tensor("leaf_weights", make_filled<float>({2}, {1.f, 3.f}));
  h.attr_ints("leaf_targetids", {0, 1});
  h.attr_ints("tree_roots", {0, 1});
  h.attr_int("n_targets", 2);
}

TEST(TreeEnsemble, AggregatesAndRoutesNaN) {
  KernelHarness h("TreeEnsemble", 5, "ai.onnx.ml");
  // Row 0: both true -> target 0 gets 1 + 1. Row 1: both false -> target 1 gets 3 + 3.
  // Row 2: NaN on feature 0 goes true (tracked), NaN on feature 1 goes false.
  h.input(make_filled<float>({3, 2}, {0.f, 0.f, 1.f, 2.f, NAN, NAN}));
  stumps(h);
  EXPECT_EQ(values_of<float>(h.run(1)[0]), (std::vector<float>{2, 0, 0, 6, 1, 3}));
}

TEST(TreeEnsemble, AverageThenLogistic) {
  KernelHarness h("TreeEnsemble", 5, "ai.onnx.ml");
  h.input(make_filled<double>({1, 2}, {0.0, 2.0}));
  stumps(h);
  h.attr_int("aggregate_function", 0);
  h.attr_int("post_transform", 2);
  const std::vector<double> y = values_of<double>(h.run(1)[0]);
  EXPECT_NEAR(y[0], 1 / (1 + std::exp(-0.5)), 1e-12);
  EXPECT_NEAR(y[1], 1 / (1 + std::exp(-1.5)), 1e-12);
}

TEST(TreeEnsemble, MaxThenProbit) {
  KernelHarness h("TreeEnsemble", 5, "ai.onnx.ml");
  h.input(make_filled<double>({1, 2}, {0.0, 0.0}));
  h.attr_tensor("nodes_splits", make_filled<double>({1}, {0.5}));
  h.attr_tensor("nodes_modes", make_filled<uint8_t>({1}, {0}));
  h.attr_ints("nodes_featureids", {0});
  h.attr_ints("nodes_truenodeids", {0});
  h.attr_ints("nodes_falsenodeids", {1});
  h.attr_ints("nodes_trueleafs", {1});
  h.attr_ints("nodes_falseleafs", {1});
  h.attr_tensor("leaf_weights", make_filled<double>({2}, {0.975, 0.5}));
  h.attr_ints("leaf_targetids", {0, 0});
  h.attr_ints("tree_roots", {0});
  h.attr_int("n_targets", 1);
  h.attr_int("aggregate_function", 3);
  h.attr_int("post_transform", 4);
  EXPECT_NEAR(values_of<double>(h.run(1)[0])[0], 1.959963984540054, 1e-9);
}

void expect_model_error(KernelHarness& h, const std::string& fragment) {
  try {
    h.run(1);
    ADD_FAILURE() << "ran a model that should fail with: " << fragment;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TreeEnsemble, HostileModelsFailWithOneLine) {
  {
    KernelHarness h("TreeEnsemble", 5, "ai.onnx.ml");
    h.input(make_filled<float>({1, 2}, {0.f, 0.f}));
    stumps(h, {0, 7}, {1, 0});  // node 1's true branch: node 7 of 2
    expect_model_error(h, "branch id 7 is outside the 2 nodes");
  }
  {
    KernelHarness h("TreeEnsemble", 5, "ai.onnx.ml");
    h.input(make_filled<float>({1, 2}, {0.f, 0.f}));
    stumps(h, {0, 1}, {1, 0});  // node 1's true branch: itself
    expect_model_error(h, "has a cycle");
  }
  {
    KernelHarness h("TreeEnsemble", 5, "ai.onnx.ml");
    h.input(make_filled<float>({1, 1}, {0.f}));  // one feature; the second stump reads two
    stumps(h);
    expect_model_error(h, "feature id 1 is outside X's 1 features");
  }
}

}  // namespace
}  // namespace loom::cpu
