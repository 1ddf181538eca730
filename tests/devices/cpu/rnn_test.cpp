// RNN, LSTM and GRU kernels against naive scalar references written here from the ONNX
// equations, for small random sizes, every direction, sequence_lens, initial states,
// peepholes, clip, linear_before_reset and layout 1.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> random_values(size_t n, std::mt19937& rng, float scale = 0.5f) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

struct Case {
  int64_t S = 4, N = 3, I = 5, H = 4;
  int dirs = 1;
  std::string direction = "forward";
  std::vector<int64_t> lens;  // empty = all S
  double clip = 0;            // 0 = none
};

// Naive reference: returns Y [S, D, N, H], Y_h [D, N, H], Y_c [D, N, H].
// kind: 0 = RNN (tanh), 1 = LSTM (sigmoid/tanh/tanh), 2 = GRU (sigmoid/tanh).
struct Ref {
  std::vector<double> y, yh, yc;
};
Ref reference(int kind, const Case& c, const std::vector<float>& X, const std::vector<float>& W,
              const std::vector<float>& R, const std::vector<float>& B,
              const std::vector<float>& h0, const std::vector<float>& c0,
              const std::vector<float>& P, bool lbr) {
  const int G = kind == 0 ? 1 : (kind == 1 ? 4 : 3);
  const int64_t S = c.S, N = c.N, I = c.I, H = c.H, D = c.dirs;
  Ref r;
  r.y.assign(S * D * N * H, 0.0);
  r.yh.assign(D * N * H, 0.0);
  r.yc.assign(D * N * H, 0.0);
  auto clip = [&](double v) { return c.clip > 0 ? std::max(-c.clip, std::min(c.clip, v)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < N; ++b) {
      const int64_t len = c.lens.empty() ? S : c.lens[b];
      std::vector<double> h(H), cell(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0.empty() ? 0.0 : h0[(d * N + b) * H + j];
        cell[j] = c0.empty() ? 0.0 : c0[(d * N + b) * H + j];
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = rev ? len - 1 - step : step;
        // xw[g*H+j] = x·W[g*H+j] + Wb; hr = h·R + Rb (separately for GRU's h gate)
        std::vector<double> xw(G * H), hr(G * H);
        for (int64_t k = 0; k < G * H; ++k) {
          double sx = B.empty() ? 0 : B[d * 2 * G * H + k];
          for (int64_t i = 0; i < I; ++i)
            sx += X[(t * N + b) * I + i] * double(W[(d * G * H + k) * I + i]);
          double sh = B.empty() ? 0 : B[d * 2 * G * H + G * H + k];
          for (int64_t i = 0; i < H; ++i) sh += h[i] * double(R[(d * G * H + k) * H + i]);
          xw[k] = sx;
          hr[k] = sh;
        }
        std::vector<double> nh(H);
        if (kind == 0) {
          for (int64_t j = 0; j < H; ++j) nh[j] = std::tanh(clip(xw[j] + hr[j]));
        } else if (kind == 1) {
          for (int64_t j = 0; j < H; ++j) {
            const double pi = P.empty() ? 0 : P[d * 3 * H + j],
                         po = P.empty() ? 0 : P[d * 3 * H + H + j],
                         pf = P.empty() ? 0 : P[d * 3 * H + 2 * H + j];
            const double ig = sigmoid(clip(xw[j] + hr[j] + pi * cell[j]));
            const double fg = sigmoid(clip(xw[2 * H + j] + hr[2 * H + j] + pf * cell[j]));
            const double cg = std::tanh(clip(xw[3 * H + j] + hr[3 * H + j]));
            cell[j] = fg * cell[j] + ig * cg;
            const double og = sigmoid(clip(xw[H + j] + hr[H + j] + po * cell[j]));
            nh[j] = og * std::tanh(cell[j]);
          }
        } else {
          std::vector<double> z(H), rg(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = sigmoid(clip(xw[j] + hr[j]));
            rg[j] = sigmoid(clip(xw[H + j] + hr[H + j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            double rec;
            if (lbr) {
              rec = rg[j] * hr[2 * H + j];
            } else {
              rec = B.empty() ? 0 : B[d * 6 * H + 3 * H + 2 * H + j];
              for (int64_t i = 0; i < H; ++i)
                rec += rg[i] * h[i] * double(R[(d * 3 * H + 2 * H + j) * H + i]);
            }
            const double n = std::tanh(clip(xw[2 * H + j] + rec));
            nh[j] = (1 - z[j]) * n + z[j] * h[j];
          }
        }
        h = nh;
        for (int64_t j = 0; j < H; ++j) r.y[((t * D + d) * N + b) * H + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        r.yh[(d * N + b) * H + j] = h[j];
        r.yc[(d * N + b) * H + j] = cell[j];
      }
    }
  }
  return r;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << what << " at " << i;
}

// Runs one op through the harness and compares all outputs with the reference.
void check(int kind, const Case& c, bool with_bias, bool with_init, bool peephole, bool lbr,
           int layout = 0) {
  std::mt19937 rng(static_cast<unsigned>(kind * 100 + c.dirs * 10 + with_bias + 2 * with_init +
                                         4 * lbr + 8 * layout));
  const int G = kind == 0 ? 1 : (kind == 1 ? 4 : 3);
  const int64_t S = c.S, N = c.N, I = c.I, H = c.H, D = c.dirs;
  auto X = random_values(S * N * I, rng, 1.f);
  auto W = random_values(D * G * H * I, rng);
  auto R = random_values(D * G * H * H, rng);
  auto B = with_bias ? random_values(D * 2 * G * H, rng) : std::vector<float>{};
  auto h0 = with_init ? random_values(D * N * H, rng) : std::vector<float>{};
  auto c0 = with_init && kind == 1 ? random_values(D * N * H, rng) : std::vector<float>{};
  auto P = peephole ? random_values(D * 3 * H, rng) : std::vector<float>{};
  Ref ref = reference(kind, c, X, W, R, B, h0, c0, P, lbr);

  const char* op = kind == 0 ? "RNN" : (kind == 1 ? "LSTM" : "GRU");
  KernelHarness h(op, 14);
  h.attr_int("hidden_size", H);
  h.attr_string("direction", c.direction);
  if (c.clip > 0) h.attr_float("clip", static_cast<float>(c.clip));
  if (lbr) h.attr_int("linear_before_reset", 1);
  if (layout) h.attr_int("layout", 1);
  // Layout 1 swaps the first two dims of X and of the states.
  auto swap01 = [](const std::vector<float>& v, int64_t a, int64_t b, int64_t rest) {
    std::vector<float> out(v.size());
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        for (int64_t k = 0; k < rest; ++k) out[(j * a + i) * rest + k] = v[(i * b + j) * rest + k];
    return out;
  };
  if (layout)
    h.input(make_filled<float>({N, S, I}, swap01(X, S, N, I)));
  else
    h.input(make_filled<float>({S, N, I}, X));
  h.input(make_filled<float>({D, G * H, I}, W));
  h.input(make_filled<float>({D, G * H, H}, R));
  if (with_bias)
    h.input(make_filled<float>({D, 2 * G * H}, B));
  else
    h.omitted_input();
  if (!c.lens.empty()) {
    std::vector<int32_t> lens(c.lens.begin(), c.lens.end());
    Tensor t = make_tensor(LOOM_DTYPE_INT32, std::vector<int64_t>{N});
    std::copy(lens.begin(), lens.end(), static_cast<int32_t*>(t.view.data));
    h.input(std::move(t));
  } else {
    h.omitted_input();
  }
  auto state = [&](const std::vector<float>& v) {
    if (v.empty()) return h.omitted_input();
    if (layout)
      h.input(make_filled<float>({N, D, H}, swap01(v, D, N, H)));
    else
      h.input(make_filled<float>({D, N, H}, v));
  };
  state(h0);
  if (kind == 1) {
    state(c0);
    if (peephole) h.input(make_filled<float>({D, 3 * H}, P));
  }
  auto out = h.run(kind == 1 ? 3 : 2);
  std::vector<double> y = ref.y, yh = ref.yh;
  if (layout) {
    // [S, D, N, H] -> [N, S, D, H]; [D, N, H] -> [N, D, H]
    std::vector<double> y1(y.size()), yh1(yh.size());
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < N; ++b)
          for (int64_t j = 0; j < H; ++j)
            y1[((b * S + s) * D + d) * H + j] = y[((s * D + d) * N + b) * H + j];
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < N; ++b)
        for (int64_t j = 0; j < H; ++j) yh1[(b * D + d) * H + j] = yh[(d * N + b) * H + j];
    y = y1;
    yh = yh1;
    EXPECT_EQ(out[0].view.dims[0], N);
  } else {
    EXPECT_EQ(out[0].view.dims[0], S);
  }
  expect_near(values_of<float>(out[0]), y, "Y");
  expect_near(values_of<float>(out[1]), yh, "Y_h");
  if (kind == 1 && !layout) expect_near(values_of<float>(out[2]), ref.yc, "Y_c");
}

TEST(RnnKernels, RnnForwardMatchesReference) {
  check(0, Case{}, true, true, false, false);
}
TEST(RnnKernels, RnnBidirectionalWithSequenceLens) {
  Case c;
  c.dirs = 2;
  c.direction = "bidirectional";
  c.lens = {4, 2, 3};
  check(0, c, true, true, false, false);
}
TEST(RnnKernels, LstmDefaultsMatchReference) {
  check(1, Case{}, false, false, false, false);
}
TEST(RnnKernels, LstmPeepholesBiasInitialStates) {
  check(1, Case{}, true, true, true, false);
}
TEST(RnnKernels, LstmReverseWithClip) {
  Case c;
  c.direction = "reverse";
  c.clip = 0.3;
  check(1, c, true, true, true, false);
}
TEST(RnnKernels, LstmBidirectionalSequenceLensLayout1) {
  Case c;
  c.dirs = 2;
  c.direction = "bidirectional";
  c.lens = {1, 4, 3};
  check(1, c, true, true, true, false, 0);
  check(1, c, true, true, true, false, 1);
}
TEST(RnnKernels, GruBothResetModes) {
  Case c;
  check(2, c, true, true, false, false);
  check(2, c, true, true, false, true);
}
TEST(RnnKernels, GruBidirectionalReverseLens) {
  Case c;
  c.dirs = 2;
  c.direction = "bidirectional";
  c.lens = {3, 0, 4};
  check(2, c, true, false, false, true);
  check(2, c, true, true, false, false, 1);
}

TEST(RnnKernels, LargerSizesExerciseTheBlockedGemm) {
  Case c;
  c.S = 7;
  c.N = 5;
  c.I = 33;
  c.H = 19;
  c.dirs = 2;
  c.direction = "bidirectional";
  c.lens = {7, 3, 6, 1, 5};
  check(1, c, true, true, true, false);
  check(2, c, true, true, false, false);
  check(0, c, true, true, false, false, 1);
}

TEST(RnnKernels, WrongWeightShapeIsAClearError) {
  KernelHarness h("LSTM", 14);
  h.input(make_filled<float>({2, 1, 3}, std::vector<float>(6, 0.f)));
  h.input(make_filled<float>({1, 8, 3}, std::vector<float>(24, 0.f)));  // 4*H = 8 -> H = 2
  h.input(make_filled<float>({1, 8, 3}, std::vector<float>(24, 0.f)));  // but R says H = 3
  try {
    h.run(3);
    FAIL() << "expected an error";
  } catch (const sdk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("W must have shape"), std::string::npos) << e.what();
  }
}

TEST(RnnKernels, SequenceLengthBeyondInputIsAClearError) {
  KernelHarness h("RNN", 7);
  h.input(make_filled<float>({2, 1, 1}, {1.f, 2.f}));
  h.input(make_filled<float>({1, 1, 1}, {1.f}));
  h.input(make_filled<float>({1, 1, 1}, {0.f}));
  h.omitted_input();
  Tensor lens = make_tensor(LOOM_DTYPE_INT32, std::vector<int64_t>{1});
  static_cast<int32_t*>(lens.view.data)[0] = 3;
  h.input(std::move(lens));
  EXPECT_THROW(h.run(2), sdk::Error);
}

// Activation names are matched without regard to case (exporters write "Tanh" and "tanh"); an
// unknown one is refused naming it and the node.
TEST(RnnKernels, ActivationNamesIgnoreCaseAndUnknownOnesAreNamed) {
  auto run = [](std::vector<std::string> acts) {
    KernelHarness h("LSTM", 14);
    h.input(make_filled<float>({1, 1, 1}, {0.5f}));
    h.input(make_filled<float>({1, 4, 1}, {1.f, 1.f, 1.f, 1.f}));  // H = 1
    h.input(make_filled<float>({1, 4, 1}, {0.f, 0.f, 0.f, 0.f}));
    h.attr_strings("activations", acts);
    return values_of<float>(h.run(3)[1]);
  };
  // i = o = f = sigmoid(0.5), g = tanh(0.5): c = i * g, h = o * tanh(c).
  const double s = sigmoid(0.5), c = s * std::tanh(0.5);
  const std::vector<float> h = run({"sigmoid", "TANH", "Tanh"});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_NEAR(h[0], s * std::tanh(c), 1e-6);
  EXPECT_EQ(run({"Sigmoid", "Tanh", "Tanh"}), h);
  try {
    run({"Sigmoid", "Swoosh", "Tanh"});
    FAIL() << "expected an error";
  } catch (const sdk::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown activation function 'Swoosh'"), std::string::npos) << what;
    EXPECT_NE(what.find("LSTM"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace loom::cpu
