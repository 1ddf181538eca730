// The opset-27 recurrent-model ops of the cpu device against values computed by hand:
// CausalConvWithState (past state as left padding, bias, SiLU, present state also for inputs
// shorter than the state), LinearAttention (the linear and gated-delta rules, grouped query
// heads, the default scale) and the errors of malformed nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
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

// LinearAttention with `inputs` in order (nullopt = omitted) and the given attributes.
struct LinearCase {
  std::vector<std::optional<Tensor>> inputs;
  int64_t q_heads = 1, kv_heads = 1;
  std::string rule;
  std::optional<float> scale;
};

std::unique_ptr<KernelHarness> linear_attention(LinearCase c) {
  auto h = std::make_unique<KernelHarness>("LinearAttention", 27);
  for (std::optional<Tensor>& t : c.inputs) {
    if (t)
      h->input(std::move(*t));
    else
      h->omitted_input();
  }
  h->attr_int("q_num_heads", c.q_heads);
  h->attr_int("kv_num_heads", c.kv_heads);
  if (!c.rule.empty()) h->attr_string("update_rule", c.rule);
  if (c.scale) h->attr_float("scale", *c.scale);
  return h;
}

TEST(LinearAttention, LinearRuleAccumulatesOuterProducts) {
  // One head, dk 2, dv 1: S = [2, 0] after token 1, [2, 3] after token 2.
  LinearCase c;
  c.inputs = {make_filled<float>({1, 2, 2}, {1, 1, 1, 2}),  // query
              make_filled<float>({1, 2, 2}, {1, 0, 0, 1}),  // key
              make_filled<float>({1, 2, 1}, {2, 3})};       // value
  c.rule = "linear";
  c.scale = 1.0f;
  const auto out = linear_attention(std::move(c))->run(2);
  expect_near(values_of<float>(out[0]), {2, 1 * 2 + 2 * 3});
  EXPECT_EQ(dims_of(out[1]), (std::vector<int64_t>{1, 1, 2, 1}));
  expect_near(values_of<float>(out[1]), {2, 3});
}

TEST(LinearAttention, DefaultScaleIsOneOverSqrtOfTheKeySize) {
  LinearCase c;
  c.inputs = {make_filled<float>({1, 1, 4}, {1, 1, 1, 1}),
              make_filled<float>({1, 1, 4}, {1, 1, 1, 1}), make_filled<float>({1, 1, 1}, {1})};
  c.rule = "linear";
  const auto out = linear_attention(std::move(c))->run(2);
  expect_near(values_of<float>(out[0]), {0.5f * 4});
}

TEST(LinearAttention, GatedDeltaDecaysThenCorrectsAndSharesTheStateAcrossTheGroup) {
  // Two query heads share one key/value head; dk = dv = 1, so the state is one number.
  //   token 1: S = 1 * 0.5 = 0.5; v' = 0.5 * (3 - 0.5 * 2) = 1; S = 0.5 + 2 * 1 = 2.5
  //   token 2: S = 2.5 * 1; v' = 1 * (0.5 - 2.5 * 1) = -2; S = 2.5 + 1 * -2 = 0.5
  LinearCase c;
  c.inputs = {make_filled<float>({1, 2, 2}, {1, -2, 2, 4}),           // query, 2 heads
              make_filled<float>({1, 2, 1}, {2, 1}),                  // key
              make_filled<float>({1, 2, 1}, {3, 0.5f}),               // value
              make_filled<float>({1, 1, 1, 1}, {1}),                  // past_state
              make_filled<float>({1, 2, 1}, {std::log(0.5f), 0.0f}),  // decay
              make_filled<float>({1, 2, 1}, {0.5f, 1})};              // beta
  c.q_heads = 2;
  const auto out = linear_attention(std::move(c))->run(2);
  expect_near(values_of<float>(out[0]), {2.5f, -5, 1, 2});
  expect_near(values_of<float>(out[1]), {0.5f});
}

TEST(LinearAttention, MalformedNodesFailWithAMessage) {
  const auto ones = [](std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return make_filled<float>(dims, std::vector<float>(static_cast<size_t>(n), 1.0f));
  };
  const auto message = [](LinearCase c) {
    auto h = linear_attention(std::move(c));
    return error_of(*h, 2);
  };
  // Query heads of size 4, keys of size 3.
  LinearCase bad_key;
  bad_key.inputs = {ones({1, 2, 8}), ones({1, 2, 6}), ones({1, 2, 4})};
  bad_key.q_heads = 2;
  bad_key.kv_heads = 2;
  bad_key.rule = "linear";
  const std::string key = message(std::move(bad_key));
  EXPECT_NE(key.find("key's last extent 6 must be kv_num_heads * head size = 2 * 4"),
            std::string::npos)
      << key;
  LinearCase bad_past;
  bad_past.inputs = {ones({1, 2, 4}), ones({1, 2, 4}), ones({1, 2, 2}), ones({1, 1, 2, 4})};
  bad_past.rule = "linear";
  const std::string past = message(std::move(bad_past));
  EXPECT_NE(past.find("past_state [1, 1, 2, 4] must be [1, 1, 4, 2]"), std::string::npos) << past;
  LinearCase no_decay;
  no_decay.inputs = {ones({1, 2, 4}), ones({1, 2, 4}), ones({1, 2, 2})};
  no_decay.rule = "gated";
  const std::string decay = message(std::move(no_decay));
  EXPECT_NE(decay.find("update_rule 'gated' requires the decay input"), std::string::npos) << decay;
  LinearCase bad_beta;
  bad_beta.inputs = {ones({1, 2, 8}), ones({1, 2, 8}), ones({1, 2, 4}),
                     std::nullopt,    std::nullopt,    ones({1, 2, 3})};
  bad_beta.q_heads = 2;
  bad_beta.kv_heads = 2;
  bad_beta.rule = "delta";
  const std::string beta = message(std::move(bad_beta));
  EXPECT_NE(beta.find("beta [1, 2, 3] must be [1, 2, 2] or [1, 2, 1]"), std::string::npos) << beta;
  LinearCase bad_heads;
  bad_heads.inputs = {ones({1, 2, 4}), ones({1, 2, 4}), ones({1, 2, 2})};
  bad_heads.q_heads = 3;
  bad_heads.kv_heads = 2;
  const std::string heads = message(std::move(bad_heads));
  EXPECT_NE(heads.find("q_num_heads 3 must be a positive multiple of kv_num_heads 2"),
            std::string::npos)
      << heads;
}

}  // namespace
}  // namespace loom::cpu
