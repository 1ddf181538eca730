// The opset-27 recurrent-model ops of the cpu device against values computed by hand:
// CausalConvWithState (past state as left padding, bias, SiLU, present state also for inputs
// shorter than the state) and the errors of malformed nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
}

std::vector<int64_t> dims_of(const Tensor& t) {
  return std::vector<int64_t>(t.view.dims, t.view.dims + t.view.rank);
}

// The error message of running h, or "no error".
std::string error_of(KernelHarness& h, size_t outputs) {
  try {
    h.run(outputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

TEST(CausalConvWithState, PastStatePadsTheLeftAndBiasIsAdded) {
  // Two channels, kernel 3: channel 0 taps (1, 2, 3), channel 1 picks the newest position.
  KernelHarness h("CausalConvWithState", 27);
  h.input(make_filled<float>({1, 2, 3}, {1, 2, 3, 7, 8, 9}));
  h.input(make_filled<float>({2, 1, 3}, {1, 2, 3, 0, 0, 1}));
  h.input(make_filled<float>({2}, {0.5f, -1}));
  h.input(make_filled<float>({1, 2, 2}, {10, 20, 5, 6}));
  const auto out = h.run(2);
  // Channel 0 reads [10, 20, 1, 2, 3]: 10+40+3, 20+2+6, 1+4+9, plus 0.5.
  expect_near(values_of<float>(out[0]), {53.5f, 28.5f, 14.5f, 6, 7, 8});
  EXPECT_EQ(dims_of(out[1]), (std::vector<int64_t>{1, 2, 2}));
  expect_near(values_of<float>(out[1]), {2, 3, 8, 9});
}

TEST(CausalConvWithState, SiluWithoutPastStartsFromZeros) {
  KernelHarness h("CausalConvWithState", 27);
  h.input(make_filled<float>({1, 1, 3}, {1, -1, 0}));
  h.input(make_filled<float>({1, 1, 2}, {1, 1}));
  h.attr_string("activation", "silu");
  const auto out = h.run(2);
  // Padded row [0, 1, -1, 0]: sums 1, 0, -1.
  expect_near(values_of<float>(out[0]), {silu(1), 0, silu(-1)});
  expect_near(values_of<float>(out[1]), {0});
}

TEST(CausalConvWithState, InputShorterThanTheStateKeepsPartOfThePast) {
  // Kernel 4 carries 3 positions; one new position shifts the past by one.
  KernelHarness h("CausalConvWithState", 27);
  h.input(make_filled<float>({1, 1, 1}, {4}));
  h.input(make_filled<float>({1, 1, 4}, {1, 1, 1, 1}));
  h.omitted_input();
  h.input(make_filled<float>({1, 1, 3}, {1, 2, 3}));
  const auto out = h.run(2);
  expect_near(values_of<float>(out[0]), {10});
  expect_near(values_of<float>(out[1]), {2, 3, 4});
}

TEST(CausalConvWithState, MalformedNodesFailWithAMessage) {
  const auto node = [](std::vector<int64_t> w_dims, std::vector<int64_t> past_dims,
                       std::string activation) {
    auto h = std::make_unique<KernelHarness>("CausalConvWithState", 27);
    h->input(make_filled<float>({1, 2, 3}, std::vector<float>(6, 1.0f)));
    int64_t w_count = 1, past_count = 1;
    for (int64_t d : w_dims) w_count *= d;
    for (int64_t d : past_dims) past_count *= d;
    h->input(make_filled<float>(w_dims, std::vector<float>(static_cast<size_t>(w_count), 1.0f)));
    h->omitted_input();
    h->input(
        make_filled<float>(past_dims, std::vector<float>(static_cast<size_t>(past_count), 0.0f)));
    h->attr_string("activation", activation);
    return h;
  };
  auto wrong_channels = node({3, 1, 3}, {1, 2, 2}, "none");
  const std::string channels = error_of(*wrong_channels, 2);
  EXPECT_NE(channels.find("weight [3, 1, 3] must be [2, 1, k]"), std::string::npos) << channels;
  auto wrong_past = node({2, 1, 3}, {1, 2, 3}, "none");
  const std::string past = error_of(*wrong_past, 2);
  EXPECT_NE(past.find("past_state [1, 2, 3] must be [1, 2, 2]"), std::string::npos) << past;
  auto wrong_activation = node({2, 1, 3}, {1, 2, 2}, "relu");
  const std::string act = error_of(*wrong_activation, 2);
  EXPECT_NE(act.find("activation 'relu'"), std::string::npos) << act;
}

}  // namespace
}  // namespace loom::cpu
