// Attention (opsets 23-25): hand-checked values for the head layouts, grouped-query heads, the
// masking rules (bool/float/short masks, causal with a past cache, nonpad_kv_seqlen, windows),
// the qk_matmul_output modes, fully masked rows and the errors for malformed nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::shape;
using testing::values_of;

constexpr float kTol = 1e-5f;

// Deterministic values in [-1, 1) for tensors too big to write out.
std::vector<float> ramp(size_t n, float step = 0.37f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::fmod(static_cast<float>(i) * step, 2.0f) - 1.0f;
  return v;
}

Tensor floats(std::vector<int64_t> dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return make_filled<float>(dims, ramp(n));
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = kTol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// One query against two keys with scale 1: the weights are a softmax of the two dot products.
TEST(Attention, SingleHeadMatchesAHandComputation) {
  KernelHarness h("Attention", 23);
  h.attr_float("scale", 1.0f);
  h.input(make_filled<float>({1, 1, 1, 2}, {1, 2}));
  h.input(make_filled<float>({1, 1, 2, 2}, {1, 0, 0, 1}));  // scores 1 and 2
  h.input(make_filled<float>({1, 1, 2, 1}, {10, 20}));
  std::vector<Tensor> out = h.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{1, 1, 1, 1}));
  const float w = 1.0f / (1.0f + std::exp(1.0f));  // weight of the first key
  expect_near(values_of<float>(out[0]), {10 * w + 20 * (1 - w)});
}

// The default scale is 1/sqrt(head_size), applied as sqrt on each side.
TEST(Attention, DefaultScaleIsOneOverRootHeadSize) {
  KernelHarness h("Attention", 23);
  h.attr_int("qk_matmul_output_mode", 0);
  h.input(make_filled<float>({1, 1, 1, 4}, {1, 1, 1, 1}));
  h.input(make_filled<float>({1, 1, 1, 4}, {1, 1, 1, 1}));
  h.input(make_filled<float>({1, 1, 1, 1}, {3}));
  std::vector<Tensor> out = h.run(4);
  expect_near(values_of<float>(out[3]), {2.0f});  // 4 / sqrt(4)
  expect_near(values_of<float>(out[0]), {3.0f});
}

// 3-D inputs are [B, S, heads * head_size]: the same numbers as the 4-D form, transposed.
TEST(Attention, ThreeDInputsSplitHeadsLikeTheFourDForm) {
  const int64_t B = 2, H = 2, Sq = 3, Skv = 4, D = 2, Dv = 3;
  const std::vector<float> q4 = ramp(B * H * Sq * D, 0.31f), k4 = ramp(B * H * Skv * D, 0.23f),
                           v4 = ramp(B * H * Skv * Dv, 0.17f);
  // [B, H, S, X] -> [B, S, H * X]
  const auto to3 = [&](const std::vector<float>& src, int64_t S, int64_t X) {
    std::vector<float> dst(src.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hh = 0; hh < H; ++hh)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t x = 0; x < X; ++x)
            dst[((b * S + s) * H + hh) * X + x] = src[((b * H + hh) * S + s) * X + x];
    return dst;
  };
  KernelHarness four("Attention", 23);
  four.input(make_filled<float>({B, H, Sq, D}, q4));
  four.input(make_filled<float>({B, H, Skv, D}, k4));
  four.input(make_filled<float>({B, H, Skv, Dv}, v4));
  const std::vector<float> y4 = values_of<float>(four.run(1)[0]);

  KernelHarness three("Attention", 23);
  three.attr_int("q_num_heads", H);
  three.attr_int("kv_num_heads", H);
  three.input(make_filled<float>({B, Sq, H * D}, to3(q4, Sq, D)));
  three.input(make_filled<float>({B, Skv, H * D}, to3(k4, Skv, D)));
  three.input(make_filled<float>({B, Skv, H * Dv}, to3(v4, Skv, Dv)));
  std::vector<Tensor> out = three.run(1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{B, Sq, H * Dv}));
  expect_near(values_of<float>(out[0]), to3(y4, Sq, Dv));
}

// Grouped-query heads: query head h reads key/value head h / (Hq / Hkv), the same as an MHA
// node whose K and V repeat each head.
TEST(Attention, GroupedQueryHeadsShareKeyValueHeads) {
  const int64_t Hq = 4, Hkv = 2, S = 3, D = 2;
  const std::vector<float> k = ramp(Hkv * S * D, 0.29f), v = ramp(Hkv * S * D, 0.41f);
  std::vector<float> k_rep, v_rep;
  for (int64_t hh = 0; hh < Hq; ++hh) {
    const auto first = (hh / (Hq / Hkv)) * S * D;
    k_rep.insert(k_rep.end(), k.begin() + first, k.begin() + first + S * D);
    v_rep.insert(v_rep.end(), v.begin() + first, v.begin() + first + S * D);
  }
  KernelHarness gqa("Attention", 23);
  gqa.input(floats({1, Hq, S, D}));
  gqa.input(make_filled<float>({1, Hkv, S, D}, k));
  gqa.input(make_filled<float>({1, Hkv, S, D}, v));
  KernelHarness mha("Attention", 23);
  mha.input(floats({1, Hq, S, D}));
  mha.input(make_filled<float>({1, Hq, S, D}, k_rep));
  mha.input(make_filled<float>({1, Hq, S, D}, v_rep));
  expect_near(values_of<float>(gqa.run(1)[0]), values_of<float>(mha.run(1)[0]));
}

// With a past cache of P keys, present = past ++ new, and causal masking is bottom-right: query
// i sees keys j <= P + i.
TEST(Attention, PastCacheConcatenatesAndShiftsTheCausalFrontier) {
  KernelHarness h("Attention", 23);
  h.attr_int("is_causal", 1);
  h.attr_int("qk_matmul_output_mode", 3);
  h.input(make_filled<float>({1, 1, 2, 1}, {0, 0}));  // all scores 0: uniform weights
  h.input(make_filled<float>({1, 1, 2, 1}, {7, 8}));
  h.input(make_filled<float>({1, 1, 2, 1}, {30, 40}));
  h.omitted_input();
  h.input(make_filled<float>({1, 1, 1, 1}, {6}));
  h.input(make_filled<float>({1, 1, 1, 1}, {20}));
  std::vector<Tensor> out = h.run(4);
  EXPECT_EQ(values_of<float>(out[1]), (std::vector<float>{6, 7, 8}));
  EXPECT_EQ(values_of<float>(out[2]), (std::vector<float>{20, 30, 40}));
  expect_near(values_of<float>(out[3]), {0.5f, 0.5f, 0, 1 / 3.f, 1 / 3.f, 1 / 3.f});
  expect_near(values_of<float>(out[0]), {25, 30});
}

// A row whose every key is masked gives 0 in Y and in the mode-3 probabilities, never NaN.
TEST(Attention, FullyMaskedRowIsZero) {
  KernelHarness h("Attention", 23);
  h.attr_int("qk_matmul_output_mode", 3);
  h.input(floats({1, 1, 2, 2}));
  h.input(floats({1, 1, 2, 2}));
  h.input(make_filled<float>({1, 1, 2, 1}, {5, 5}));
  h.input(make_filled<bool>({2, 2}, {false, false, true, false}));
  std::vector<Tensor> out = h.run(4);
  expect_near(values_of<float>(out[0]), {0, 5});
  expect_near(values_of<float>(out[3]), {0, 0, 1, 0});
}

// A mask shorter than the key count masks the keys past its end (-inf padding, not broadcast);
// a float mask adds to the scores.
TEST(Attention, ShortMaskPadsWithMinusInfinityAndFloatMasksAdd) {
  KernelHarness h("Attention", 23);
  h.attr_int("qk_matmul_output_mode", 2);
  h.attr_float("scale", 1.0f);
  h.input(make_filled<float>({1, 1, 1, 1}, {1}));
  h.input(make_filled<float>({1, 1, 3, 1}, {1, 2, 3}));
  h.input(make_filled<float>({1, 1, 3, 1}, {10, 20, 30}));
  h.input(make_filled<float>({2}, {0.5f, 0}));  // key 2 is past the mask
  std::vector<Tensor> out = h.run(4);
  const std::vector<float> qk = values_of<float>(out[3]);
  EXPECT_FLOAT_EQ(qk[0], 1.5f);
  EXPECT_FLOAT_EQ(qk[1], 2.0f);
  EXPECT_TRUE(std::isinf(qk[2]) && qk[2] < 0);
  const float w = 1.0f / (1.0f + std::exp(0.5f));
  expect_near(values_of<float>(out[0]), {10 * w + 20 * (1 - w)});
}

// opset 24's nonpad_kv_seqlen masks the padding keys of each batch and, with is_causal, places
// the queries at the end of the valid keys; at opset 23 there is no such input.
TEST(Attention, NonpadKvSeqlenMasksPaddingPerBatch) {
  const auto run = [](int64_t opset) {
    KernelHarness h("Attention", opset);
    h.attr_int("is_causal", 1);
    h.input(make_filled<float>({2, 1, 1, 1}, {0, 0}));
    h.input(make_filled<float>({2, 1, 3, 1}, {0, 0, 0, 0, 0, 0}));
    h.input(make_filled<float>({2, 1, 3, 1}, {1, 2, 3, 4, 5, 6}));
    h.omitted_input();
    h.omitted_input();
    h.omitted_input();
    h.input(make_filled<int64_t>({2}, {1, 2}));
    return values_of<float>(h.run(1)[0]);
  };
  expect_near(run(24), {1, 4.5f});  // batch 0: key 0; batch 1: keys 0 and 1
  expect_near(run(23), {1, 4});     // causal from offset 0: key 0 only
}

// opset 25's windows: (0, 0) lets each query see only the key at its own position.
TEST(Attention, SlidingWindowFromOpset25) {
  const auto run = [](int64_t opset) {
    KernelHarness h("Attention", opset);
    h.attr_int("left_window_size", 0);
    h.attr_int("right_window_size", 0);
    h.input(make_filled<float>({1, 1, 3, 1}, {0, 0, 0}));
    h.input(make_filled<float>({1, 1, 3, 1}, {0, 0, 0}));
    h.input(make_filled<float>({1, 1, 3, 1}, {3, 6, 9}));
    return values_of<float>(h.run(1)[0]);
  };
  expect_near(run(25), {3, 6, 9});
  expect_near(run(24), {6, 6, 6});  // no windows before opset 25
}

// Mode 0 is the raw scaled product; mode 1 the softcapped one (softcap * tanh(x / softcap)).
TEST(Attention, SoftcapAndTheQkOutputModes) {
  const auto run = [](int64_t mode) {
    KernelHarness h("Attention", 23);
    h.attr_float("scale", 1.0f);
    h.attr_float("softcap", 2.0f);
    h.attr_int("qk_matmul_output_mode", mode);
    h.input(make_filled<float>({1, 1, 1, 1}, {3}));
    h.input(make_filled<float>({1, 1, 2, 1}, {1, -1}));
    h.input(make_filled<float>({1, 1, 2, 1}, {1, 0}));
    return h.run(4);
  };
  expect_near(values_of<float>(run(0)[3]), {3, -3});
  const float capped = 2.0f * std::tanh(1.5f);
  expect_near(values_of<float>(run(1)[3]), {capped, -capped});
  const std::vector<Tensor> out = run(3);
  const float w = 1.0f / (1.0f + std::exp(-2 * capped));
  expect_near(values_of<float>(out[3]), {w, 1 - w});
  expect_near(values_of<float>(out[0]), {w});
}

// float16 and float64 run too; float16 results round to the storage type.
TEST(Attention, HalfAndDoubleInputs) {
  KernelHarness d("Attention", 23);
  d.attr_float("scale", 1.0f);
  d.input(make_filled<double>({1, 1, 1, 2}, {1, 2}));
  d.input(make_filled<double>({1, 1, 2, 2}, {1, 0, 0, 1}));
  d.input(make_filled<double>({1, 1, 2, 1}, {10, 20}));
  const double w = 1.0 / (1.0 + std::exp(1.0));
  EXPECT_NEAR(values_of<double>(d.run(1)[0])[0], 10 * w + 20 * (1 - w), 1e-12);

  const auto half = [](std::vector<int64_t> dims, std::vector<float> v) {
    Tensor t = make_tensor(LOOM_DTYPE_FLOAT16, dims);
    Half* p = static_cast<Half*>(t.view.data);
    for (size_t i = 0; i < v.size(); ++i) p[i] = Half(v[i]);
    return t;
  };
  KernelHarness h("Attention", 23);
  h.attr_float("scale", 1.0f);
  h.input(half({1, 1, 1, 2}, {1, 2}));
  h.input(half({1, 1, 2, 2}, {1, 0, 0, 1}));
  h.input(half({1, 1, 2, 1}, {10, 20}));
  Tensor y = h.run(1)[0];
  ASSERT_EQ(y.view.dtype, LOOM_DTYPE_FLOAT16);
  EXPECT_NEAR(static_cast<float>(static_cast<const Half*>(y.view.data)[0]), 10 * w + 20 * (1 - w),
              0.02);
}

// softmax_precision rounds the softmax to that type: FLOAT16 probabilities are float16 values.
TEST(Attention, SoftmaxPrecisionRoundsTheProbabilities) {
  KernelHarness h("Attention", 24);
  h.attr_float("scale", 1.0f);
  h.attr_int("softmax_precision", LOOM_DTYPE_FLOAT16);
  h.attr_int("qk_matmul_output_mode", 3);
  h.input(make_filled<float>({1, 1, 1, 1}, {1}));
  h.input(make_filled<float>({1, 1, 3, 1}, {0.1f, 0.2f, 0.3f}));
  h.input(make_filled<float>({1, 1, 3, 1}, {1, 2, 3}));
  for (float p : values_of<float>(h.run(4)[3]))
    EXPECT_EQ(p, static_cast<float>(Half(p))) << p << " is not a float16 value";
}

void expect_error(KernelHarness& h, size_t outputs = 1) {
  EXPECT_THROW(h.run(outputs), Error);
}

TEST(Attention, MalformedNodesAreErrors) {
  {  // 3-D without head counts
    KernelHarness h("Attention", 23);
    h.input(floats({1, 2, 4}));
    h.input(floats({1, 2, 4}));
    h.input(floats({1, 2, 4}));
    expect_error(h);
  }
  {  // 3 query heads over 2 key/value heads
    KernelHarness h("Attention", 23);
    h.input(floats({1, 3, 2, 2}));
    h.input(floats({1, 2, 2, 2}));
    h.input(floats({1, 2, 2, 2}));
    expect_error(h);
  }
  {  // head counts with 4-D inputs from opset 25
    KernelHarness h("Attention", 25);
    h.attr_int("q_num_heads", 1);
    h.attr_int("kv_num_heads", 1);
    h.input(floats({1, 1, 2, 2}));
    h.input(floats({1, 1, 2, 2}));
    h.input(floats({1, 1, 2, 2}));
    expect_error(h);
  }
  {  // a mask longer than the keys, and one of rank 5
    for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3}, {1, 1, 1, 2, 2}}) {
      KernelHarness h("Attention", 23);
      h.input(floats({1, 1, 2, 2}));
      h.input(floats({1, 1, 2, 2}));
      h.input(floats({1, 1, 2, 2}));
      h.input(floats(dims));
      expect_error(h);
    }
  }
  {  // past_key without past_value
    KernelHarness h("Attention", 23);
    h.input(floats({1, 1, 2, 2}));
    h.input(floats({1, 1, 2, 2}));
    h.input(floats({1, 1, 2, 2}));
    h.omitted_input();
    h.input(floats({1, 1, 1, 2}));
    expect_error(h);
  }
  {  // nonpad_kv_seqlen with a past cache, and a nonpad of the wrong length
    for (bool with_past : {true, false}) {
      KernelHarness h("Attention", 24);
      h.input(floats({1, 1, 2, 2}));
      h.input(floats({1, 1, 2, 2}));
      h.input(floats({1, 1, 2, 2}));
      h.omitted_input();
      if (with_past) {
        h.input(floats({1, 1, 1, 2}));
        h.input(floats({1, 1, 1, 2}));
      } else {
        h.omitted_input();
        h.omitted_input();
      }
      h.input(
          make_filled<int64_t>(with_past ? std::vector<int64_t>{1} : std::vector<int64_t>{2},
                               with_past ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 1}));
      expect_error(h);
    }
  }
  {  // bad attribute values
    for (const char* name : {"qk_matmul_output_mode", "softmax_precision", "left_window_size"}) {
      KernelHarness h("Attention", 25);
      h.attr_int(name, name[0] == 'l' ? -2 : 7);
      h.input(floats({1, 1, 2, 2}));
      h.input(floats({1, 1, 2, 2}));
      h.input(floats({1, 1, 2, 2}));
      expect_error(h);
    }
  }
}

// Nonpad values far outside [0, keys] mask everything or nothing without overflowing.
TEST(Attention, ExtremeNonpadValuesAreSafe) {
  for (int64_t n : {INT64_MIN, int64_t{-5}, int64_t{0}, INT64_MAX}) {
    KernelHarness h("Attention", 25);
    h.attr_int("is_causal", 1);
    h.attr_int("left_window_size", INT64_MAX);
    h.input(make_filled<float>({1, 1, 1, 1}, {0}));
    h.input(make_filled<float>({1, 1, 2, 1}, {0, 0}));
    h.input(make_filled<float>({1, 1, 2, 1}, {2, 4}));
    h.omitted_input();
    h.omitted_input();
    h.omitted_input();
    h.input(make_filled<int64_t>({1}, {n}));
    const float y = values_of<float>(h.run(1)[0])[0];
    EXPECT_FALSE(std::isnan(y));
    EXPECT_NEAR(y, n > 0 ? 3.0f : 0.0f, kTol) << "nonpad " << n;
  }
}

}  // namespace
}  // namespace loom::cpu
