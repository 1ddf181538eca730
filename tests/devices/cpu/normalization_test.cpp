// Normalisation kernels (BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, LRN, MeanVarianceNormalization, LpNormalization) and Dropout against
// naive formulas written here.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> wave(size_t n, float f = 0.61f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * f) * 3.0f + 0.5f;
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "index " << i;
}

TEST(BatchNormalizationOp, MatchesFormulaWithRunningStatistics) {
  const size_t n = 2, c = 3, hw = 5;
  auto x = wave(n * c * hw);
  const std::vector<float> scale = {1, 1.5f, -2}, bias = {0, 1, -1}, mean = {0.5f, -1, 2},
                           var = {1, 0.25f, 4};
  KernelHarness h("BatchNormalization", 15);
  h.input(make_filled<float>({2, 3, 5}, x));
  for (const auto* v : {&scale, &bias, &mean, &var}) h.input(make_filled<float>({3}, *v));
  h.attr_float("epsilon", 1e-3f);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = (i / hw) % c;
    want[i] = (x[i] - mean[ch]) / std::sqrt(double(var[ch]) + 1e-3) * scale[ch] + bias[ch];
  }
  expect_near_all(values_of<float>(h.run(1)[0]), want, 1e-5);

  KernelHarness bad("BatchNormalization", 15);
  bad.input(make_filled<float>({2, 3, 5}, x));
  bad.input(make_filled<float>({2}, {1, 1}));
  for (const auto* v : {&bias, &mean, &var}) bad.input(make_filled<float>({3}, *v));
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(BatchNormalizationOp, TrainingModeUsesBatchStatisticsAndUpdatesRunningOnes) {
  const size_t n = 2, c = 3, hw = 4;
  auto x = wave(n * c * hw, 0.37f);
  const std::vector<float> scale = {1, 0.5f, -2}, bias = {0, 1, -1}, mean = {0.5f, -1, 2},
                           var = {1, 0.25f, 4};
  KernelHarness h("BatchNormalization", 15);
  h.input(make_filled<float>({2, 3, 2, 2}, x));
  for (const auto* v : {&scale, &bias, &mean, &var}) h.input(make_filled<float>({3}, *v));
  h.attr_int("training_mode", 1);
  h.attr_float("momentum", 0.8f);
  auto out = h.run(3);
  std::vector<double> batch_mean(c, 0), batch_var(c, 0), want_y(x.size()), want_mean(c),
      want_var(c);
  for (size_t i = 0; i < x.size(); ++i) batch_mean[(i / hw) % c] += x[i] / double(n * hw);
  for (size_t i = 0; i < x.size(); ++i)
    batch_var[(i / hw) % c] += std::pow(x[i] - batch_mean[(i / hw) % c], 2) / double(n * hw);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = (i / hw) % c;
    want_y[i] = (x[i] - batch_mean[ch]) / std::sqrt(batch_var[ch] + 1e-5) * scale[ch] + bias[ch];
  }
  for (size_t ch = 0; ch < c; ++ch) {
    want_mean[ch] = mean[ch] * 0.8 + batch_mean[ch] * 0.2;
    want_var[ch] = var[ch] * 0.8 + batch_var[ch] * 0.2;
  }
  expect_near_all(values_of<float>(out[0]), want_y, 1e-5);
  expect_near_all(values_of<float>(out[1]), want_mean, 1e-6);
  expect_near_all(values_of<float>(out[2]), want_var, 1e-6);

  // The running outputs without training_mode contradict the spec.
  KernelHarness eval("BatchNormalization", 15);
  eval.input(make_filled<float>({2, 3, 2, 2}, x));
  for (const auto* v : {&scale, &bias, &mean, &var}) eval.input(make_filled<float>({3}, *v));
  try {
    eval.run(3);
    FAIL() << "running outputs without training_mode must be refused";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_MODEL) << e.what();
  }
}

TEST(InstanceNormalizationOp, NormalisesEachPlane) {
  const size_t n = 2, c = 2, hw = 6;
  auto x = wave(n * c * hw);
  KernelHarness h("InstanceNormalization", 6);
  h.input(make_filled<float>({2, 2, 2, 3}, x));
  h.input(make_filled<float>({2}, {2, 0.5f}));
  h.input(make_filled<float>({2}, {1, -1}));
  std::vector<double> want(x.size());
  for (size_t p = 0; p < n * c; ++p) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < hw; ++i) mean += x[p * hw + i] / double(hw);
    for (size_t i = 0; i < hw; ++i) var += std::pow(x[p * hw + i] - mean, 2) / double(hw);
    const double s = p % c ? 0.5 : 2, b = p % c ? -1 : 1;
    for (size_t i = 0; i < hw; ++i)
      want[p * hw + i] = (x[p * hw + i] - mean) / std::sqrt(var + 1e-5) * s + b;
  }
  expect_near_all(values_of<float>(h.run(1)[0]), want, 1e-5);
}

// Normalises each of `rows` rows of length `row` with per-position scale and bias.
std::vector<double> naive_row_norm(const std::vector<float>& x, size_t row,
                                   const std::vector<float>& scale, const std::vector<float>& bias,
                                   double eps, std::vector<double>* means = nullptr,
                                   std::vector<double>* inv_stds = nullptr) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / row; ++r) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < row; ++i) mean += x[r * row + i] / double(row);
    for (size_t i = 0; i < row; ++i) var += std::pow(x[r * row + i] - mean, 2) / double(row);
    const double inv = 1 / std::sqrt(var + eps);
    if (means) means->push_back(mean);
    if (inv_stds) inv_stds->push_back(inv);
    for (size_t i = 0; i < row; ++i)
      y[r * row + i] = (x[r * row + i] - mean) * inv * scale[i % scale.size()] +
                       (bias.empty() ? 0.0 : bias[i % bias.size()]);
  }
  return y;
}

TEST(LayerNormalizationOp, AxesScaleBroadcastAndStatisticsOutputs) {
  auto x = wave(2 * 3 * 4);
  // axis -1: rows of 4, full scale and bias; Mean and InvStdDev requested.
  {
    const std::vector<float> scale = {1, 2, 3, 4}, bias = {0, 0.5f, -0.5f, 1};
    KernelHarness h("LayerNormalization", 17);
    h.input(make_filled<float>({2, 3, 4}, x));
    h.input(make_filled<float>({4}, scale));
    h.input(make_filled<float>({4}, bias));
    h.attr_float("epsilon", 1e-4f);
    auto out = h.run(3);
    std::vector<double> means, invs;
    expect_near_all(values_of<float>(out[0]),
                    naive_row_norm(x, 4, scale, bias, 1e-4, &means, &invs), 1e-5);
    ASSERT_EQ(out[1].view.rank, 3);
    EXPECT_EQ(out[1].view.dims[1], 3);
    EXPECT_EQ(out[1].view.dims[2], 1);
    expect_near_all(values_of<float>(out[1]), means, 1e-5);
    expect_near_all(values_of<float>(out[2]), invs, 1e-4);
  }
  // axis 1: rows of 12, scale broadcast from [4] (right-aligned), no bias.
  {
    const std::vector<float> scale = {1, -1, 2, 0.5f};
    KernelHarness h("LayerNormalization", 17);
    h.input(make_filled<float>({2, 3, 4}, x));
    h.input(make_filled<float>({4}, scale));
    h.attr_int("axis", 1);
    expect_near_all(values_of<float>(h.run(1)[0]), naive_row_norm(x, 12, scale, {}, 1e-5), 1e-5);
  }
  KernelHarness bad("LayerNormalization", 17);
  bad.input(make_filled<float>({2, 3, 4}, x));
  bad.input(make_filled<float>({3}, {1, 1, 1}));
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(GroupNormalizationOp, NormalisesChannelGroups) {
  const size_t n = 2, c = 4, hw = 3, groups = 2;
  auto x = wave(n * c * hw);
  KernelHarness h("GroupNormalization", 18);
  h.input(make_filled<float>({2, 4, 3}, x));
  h.input(make_filled<float>({2}, {2, -1}));
  h.input(make_filled<float>({2}, {0.5f, 1}));
  h.attr_int("num_groups", 2);
  const size_t gsize = c / groups * hw;
  std::vector<double> want(x.size());
  for (size_t g = 0; g < n * groups; ++g) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < gsize; ++i) mean += x[g * gsize + i] / double(gsize);
    for (size_t i = 0; i < gsize; ++i) var += std::pow(x[g * gsize + i] - mean, 2) / double(gsize);
    const double s = g % groups ? -1 : 2, b = g % groups ? 1 : 0.5;
    for (size_t i = 0; i < gsize; ++i)
      want[g * gsize + i] = (x[g * gsize + i] - mean) / std::sqrt(var + 1e-5) * s + b;
  }
  expect_near_all(values_of<float>(h.run(1)[0]), want, 1e-5);
}

TEST(GroupNormalizationOp, Opset21ScalesAndShiftsEachChannel) {
  const size_t n = 2, c = 4, hw = 3, groups = 2;
  auto x = wave(n * c * hw);
  const std::vector<float> scale = {2, -1, 0.5f, 3}, bias = {0.5f, 1, -2, 0};
  KernelHarness h("GroupNormalization", 21);
  h.input(make_filled<float>({2, 4, 3}, x));
  h.input(make_filled<float>({4}, scale));
  h.input(make_filled<float>({4}, bias));
  h.attr_int("num_groups", 2);
  h.attr_int("stash_type", 1);
  const size_t per_group = c / groups, gsize = per_group * hw;
  std::vector<double> want(x.size());
  for (size_t g = 0; g < n * groups; ++g) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < gsize; ++i) mean += x[g * gsize + i] / double(gsize);
    for (size_t i = 0; i < gsize; ++i) var += std::pow(x[g * gsize + i] - mean, 2) / double(gsize);
    for (size_t i = 0; i < gsize; ++i) {
      const size_t ch = (g % groups) * per_group + i / hw;
      want[g * gsize + i] =
          (x[g * gsize + i] - mean) / std::sqrt(var + 1e-5) * scale[ch] + bias[ch];
    }
  }
  expect_near_all(values_of<float>(h.run(1)[0]), want, 1e-5);
}

TEST(GroupNormalizationOp, ParameterCountFollowsTheOpset) {
  // Opset 18 takes one value per group, 21 one per channel; each refuses the other's count.
  for (auto [opset, count] : {std::pair{18, 4}, std::pair{21, 2}}) {
    KernelHarness h("GroupNormalization", opset);
    h.input(make_filled<float>({1, 4, 2}, wave(8)));
    h.input(make_filled<float>({count}, std::vector<float>(size_t(count), 1)));
    h.input(make_filled<float>({count}, std::vector<float>(size_t(count), 0)));
    h.attr_int("num_groups", 2);
    EXPECT_THROW(h.run(1), sdk::Error) << opset;
  }
  KernelHarness bad("GroupNormalization", 21);
  bad.input(make_filled<float>({1, 4, 2}, wave(8)));
  bad.input(make_filled<float>({4}, {1, 1, 1, 1}));
  bad.input(make_filled<float>({4}, {0, 0, 0, 0}));
  bad.attr_int("num_groups", 2);
  bad.attr_int("stash_type", 6);  // int32
  EXPECT_THROW(bad.run(1), sdk::Error);
}

TEST(LrnOp, MatchesCrossChannelFormula) {
  const int64_t n = 1, c = 5, hw = 4, size = 3;
  auto x = wave(size_t(n * c * hw));
  KernelHarness h("LRN", 13);
  h.input(make_filled<float>({1, 5, 2, 2}, x));
  h.attr_int("size", size);
  h.attr_float("alpha", 0.01f);
  h.attr_float("beta", 0.6f);
  h.attr_float("bias", 2.0f);
  std::vector<double> want(x.size());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < hw; ++i) {
      double sq = 0;
      for (int64_t k = std::max<int64_t>(0, ch - 1); k <= std::min<int64_t>(c - 1, ch + 1); ++k)
        sq += std::pow(x[size_t(k * hw + i)], 2);
      want[size_t(ch * hw + i)] = x[size_t(ch * hw + i)] / std::pow(2.0 + 0.01 / size * sq, 0.6);
    }
  expect_near_all(values_of<float>(h.run(1)[0]), want, 1e-5);
}

TEST(MeanVarianceNormalizationOp, DefaultAxesGiveZeroMeanUnitVariancePerChannel) {
  auto x = wave(2 * 3 * 2 * 2);
  KernelHarness h("MeanVarianceNormalization", 13);
  h.input(make_filled<float>({2, 3, 2, 2}, x));
  auto y = values_of<float>(h.run(1)[0]);
  for (size_t ch = 0; ch < 3; ++ch) {
    double mean = 0, sq = 0;
    for (size_t b = 0; b < 2; ++b)
      for (size_t i = 0; i < 4; ++i) {
        const double v = y[(b * 3 + ch) * 4 + i];
        mean += v / 8;
        sq += v * v / 8;
      }
    EXPECT_NEAR(mean, 0.0, 1e-5);
    EXPECT_NEAR(sq, 1.0, 1e-4);
  }
}

TEST(LpNormalizationOp, L1AndL2AlongAxis) {
  KernelHarness l2("LpNormalization", 1);
  l2.input(make_filled<float>({2, 2}, {3, 4, 0, 0}));
  EXPECT_EQ(values_of<float>(l2.run(1)[0]), (std::vector<float>{0.6f, 0.8f, 0, 0}));
  KernelHarness l1("LpNormalization", 1);
  l1.input(make_filled<float>({2, 2}, {1, 3, -1, 1}));
  l1.attr_int("axis", 0);
  l1.attr_int("p", 1);
  EXPECT_EQ(values_of<float>(l1.run(1)[0]), (std::vector<float>{0.5f, 0.75f, -0.5f, 0.25f}));
}

TEST(DropoutOp, InferenceIsIdentityWithAllTrueMask) {
  const std::vector<float> x = {1, -2, 3, 4.5f};
  KernelHarness h("Dropout", 13);
  h.input(make_filled<float>({2, 2}, x));
  h.input(make_filled<float>({}, {0.3f}));
  auto out = h.run(2);
  EXPECT_EQ(values_of<float>(out[0]), x);
  ASSERT_EQ(out[1].view.dtype, LOOM_DTYPE_BOOL);
  EXPECT_EQ(values_of<bool>(out[1]), std::vector<bool>(4, true));

  KernelHarness train("Dropout", 13);  // training with a seed: kept values are scaled
  std::vector<float> ones(1000, 1.0f);
  train.input(make_filled<float>({1000}, ones));
  train.input(make_filled<float>({}, {0.5f}));
  train.input(make_filled<bool>({}, {true}));
  train.attr_int("seed", 7);
  auto t = train.run(2);
  auto y = values_of<float>(t[0]);
  auto mask = values_of<bool>(t[1]);
  size_t kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], mask[i] ? 2.0f : 0.0f);
    kept += mask[i];
  }
  EXPECT_GT(kept, 400u);
  EXPECT_LT(kept, 600u);
}

}  // namespace
}  // namespace loom::cpu
