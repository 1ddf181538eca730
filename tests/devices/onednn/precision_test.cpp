// precision=bf16 and what it keeps in f32 (plugins/devices/onednn/precision.hpp, option
// bf16_f32): the accuracy the policy buys on a residual network, which steps it moves to f32,
// the option's parsing, and the device's own f32 kernels fed by bf16 products.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

// True when the device computes bf16 here; false (with the reason) where it warns that the CPU
// has no AVX-512 BF16 and computes in f32, which makes the bf16 checks meaningless.
bool bf16_runs_here(const ModelBuilder& m, const std::vector<std::pair<std::string, Tensor>>& in,
                    std::string* why) {
  for (const std::string& line :
       run_model_capturing_log(m, in, onednn_only("precision=bf16"), "onednn"))
    if (line.find("AVX-512 BF16") != std::string::npos) {
      *why = line;
      return false;
    }
  return true;
}

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.elements()));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

// The largest |a - b| over the elements, relative to b's range (max - min), as the benchmarks
// report bf16's accuracy.
double max_diff_of_range(const Tensor& a, const Tensor& b) {
  std::vector<float> x = floats_of(a), y = floats_of(b);
  auto [lo, hi] = std::minmax_element(y.begin(), y.end());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
  return worst / (static_cast<double>(*hi) - *lo);
}

// Six pre-norm-free encoder-like blocks: x = LayerNorm(x + Relu(x W1 + b1) W2), an attention-
// like softmax over a projection, and a final projection. In bf16 the residual stream and the
// normalizations are where rounding accumulates.
ModelBuilder residual_encoder(int64_t blocks, bool normalized = true) {
  const int64_t d = 64, ff = 128;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, d});
  std::string x = "x";
  uint32_t seed = 10;
  for (int64_t k = 0; k < blocks; ++k) {
    const std::string s = std::to_string(k);
    m.initializer("w1_" + s, random_tensor(LOOM_DTYPE_FLOAT32, {d, ff}, seed++, -0.15, 0.15));
    m.initializer("b1_" + s, random_tensor(LOOM_DTYPE_FLOAT32, {ff}, seed++, -0.1, 0.1));
    m.initializer("w2_" + s, random_tensor(LOOM_DTYPE_FLOAT32, {ff, d}, seed++, -0.1, 0.1));
    m.initializer("g_" + s, random_tensor(LOOM_DTYPE_FLOAT32, {d}, seed++, 0.8, 1.2));
    m.initializer("be_" + s, random_tensor(LOOM_DTYPE_FLOAT32, {d}, seed++, -0.1, 0.1));
    m.node("MatMul", {x, "w1_" + s}, {"h_" + s});
    m.node("Add", {"h_" + s, "b1_" + s}, {"hb_" + s});
    m.node("Relu", {"hb_" + s}, {"r_" + s});
    m.node("MatMul", {"r_" + s, "w2_" + s}, {"o_" + s});
    m.node("Add", {x, "o_" + s}, {"sum_" + s});
    x = "sum_" + s;
    if (!normalized) continue;
    m.node("LayerNormalization", {x, "g_" + s, "be_" + s}, {"ln_" + s});
    x = "ln_" + s;
  }
  m.initializer("wq", random_tensor(LOOM_DTYPE_FLOAT32, {d, d}, seed++, -0.3, 0.3));
  m.initializer("wo", random_tensor(LOOM_DTYPE_FLOAT32, {d, 10}, seed++, -0.3, 0.3));
  m.node("MatMul", {x, "wq"}, {"q"});
  m.node("Softmax", {"q"}, {"p"});
  m.node("Add", {"p", x}, {"px"});
  m.node("MatMul", {"px", "wo"}, {"y"});
  m.output("y");
  return m;
}

// The policy's point: with the default bf16_f32 the encoder's output is more than twice closer
// to f32 than with everything in bf16 (measured on a Zen 4: 1.8e-3 and 4.5e-3 of its range),
// and within 5e-3 of its range.
TEST(OnednnPrecision, Bf16KeepsResidualsAndNormalizationsAccurate) {
  ModelBuilder m = residual_encoder(6);
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 64}, 7)}};
  std::string why;
  if (!bf16_runs_here(m, in, &why)) GTEST_SKIP() << why;
  const std::filesystem::path path = m.save();
  const Tensor f32 = run_model(path, in, onednn_only())[0];
  const Tensor kept = run_model(path, in, onednn_only("precision=bf16"))[0];
  const Tensor all = run_model(path, in, onednn_only("precision=bf16;bf16_f32=none"))[0];
  std::filesystem::remove(path);
  const double kept_diff = max_diff_of_range(kept, f32), all_diff = max_diff_of_range(all, f32);
  EXPECT_LT(kept_diff, 5e-3) << "everything in bf16: " << all_diff;
  EXPECT_LT(kept_diff * 2, all_diff) << "kept: " << kept_diff;
  EXPECT_GT(kept_diff, 0) << "the matrix products did not run in bf16";

  // Without normalizations the residual stream stays f32 only with `residual`.
  ModelBuilder plain = residual_encoder(6, false);
  const std::filesystem::path plain_path = plain.save();
  const Tensor plain_f32 = run_model(plain_path, in, onednn_only())[0];
  const Tensor stream =
      run_model(plain_path, in, onednn_only("precision=bf16;bf16_f32=residual"))[0];
  const Tensor rounded = run_model(plain_path, in, onednn_only("precision=bf16;bf16_f32=none"))[0];
  std::filesystem::remove(plain_path);
  // Measured on a Zen 4: 1.9e-3 and 3.9e-3.
  EXPECT_LT(max_diff_of_range(stream, plain_f32) * 1.5, max_diff_of_range(rounded, plain_f32));
}

// Which steps run in f32: the softmax takes the device's f32 row kernel ("loom rows") and the
// final batch-1 projection its f32 matrix-vector kernel ("loom matvec") only when the policy
// keeps them; with bf16_f32=none neither does.
TEST(OnednnPrecision, Bf16F32OptionChoosesTheF32Steps) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 64});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {64, 64}, 2, -0.2, 0.2));
  m.initializer("fc", random_tensor(LOOM_DTYPE_FLOAT32, {64, 10}, 3, -0.2, 0.2));
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Softmax", {"h"}, {"p"});
  m.node("MatMul", {"p", "fc"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 64}, 5)}};
  std::string why;
  if (!bf16_runs_here(m, in, &why)) GTEST_SKIP() << why;
  auto has = [](const std::vector<std::string>& steps, const std::string& what) {
    return std::any_of(steps.begin(), steps.end(),
                       [&](const std::string& s) { return s.find(what) != std::string::npos; });
  };
  const std::vector<std::string> kept = compiled_steps(m, in, "precision=bf16");
  EXPECT_TRUE(has(kept, "Softmax") && has(kept, "loom rows"));
  EXPECT_TRUE(has(kept, "loom matvec"));
  const std::vector<std::string> none = compiled_steps(m, in, "precision=bf16;bf16_f32=none");
  EXPECT_TRUE(has(none, "Softmax") && !has(none, "loom rows"));
  EXPECT_FALSE(has(none, "loom matvec"));
  const std::vector<std::string> softmax_only =
      compiled_steps(m, in, "precision=bf16;bf16_f32=softmax");
  EXPECT_TRUE(has(softmax_only, "loom rows"));
  EXPECT_FALSE(has(softmax_only, "loom matvec"));
  Tolerance bf16{5e-2, 2e-2};
  for (const char* keep : {"", ";bf16_f32=none", ";bf16_f32=final,residual"})
    expect_matches_cpu(m, in, onednn_only(std::string("precision=bf16") + keep), &bf16);
}

// The device's own kernels compute in f32: fed by a bf16 product (bf16_f32=none keeps nothing
// in f32), each converts its input rather than read bf16 bytes as floats.
TEST(OnednnPrecision, F32KernelsAfterBf16Products) {
  Tolerance bf16{5e-2, 2e-2};
  ModelBuilder rms(23);
  rms.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 32});
  rms.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 32}, 2, -0.3, 0.3));
  rms.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {32}, 3, 0.5, 1.5));
  rms.node("MatMul", {"x", "w"}, {"h"});
  rms.node("RMSNormalization", {"h", "s"}, {"n"});
  rms.node("Relu", {"n"}, {"y"});
  rms.output("y");
  for (const char* keep : {"", ";bf16_f32=none"})
    check_unary_model(rms, {2, 8, 32}, 1, std::string("precision=bf16") + keep, &bf16);

  ModelBuilder lstm;
  const int64_t hidden = 16;
  lstm.input("x", LOOM_DTYPE_FLOAT32, {5, 1, 24});
  lstm.initializer("w0", random_tensor(LOOM_DTYPE_FLOAT32, {24, 24}, 4, -0.3, 0.3));
  lstm.initializer("W", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4 * hidden, 24}, 5, -0.3, 0.3));
  lstm.initializer("R", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4 * hidden, hidden}, 6, -0.3, 0.3));
  lstm.node("MatMul", {"x", "w0"}, {"h"});
  lstm.node("LSTM", {"h", "W", "R"}, {"ys"}).i("hidden_size", hidden);
  lstm.node("Relu", {"ys"}, {"y"});
  lstm.output("y");
  for (const char* keep : {"", ";bf16_f32=none"})
    check_unary_model(lstm, {5, 1, 24}, 1, std::string("precision=bf16") + keep, &bf16);

  // Attention (opset 23, 3-D, two heads) over three bf16 projections and a boolean mask,
  // which keeps its type.
  ModelBuilder att(23);
  att.input("x", LOOM_DTYPE_FLOAT32, {1, 6, 16});
  att.input("mask", LOOM_DTYPE_BOOL, {6, 6});
  for (const char* w : {"wq", "wk", "wv"}) {
    att.initializer(w, random_tensor(LOOM_DTYPE_FLOAT32, {16, 16}, 7 + (w[1] - 'k'), -0.4, 0.4));
    att.node("MatMul", {"x", w}, {std::string("p") + w[1]});
  }
  att.node("Attention", {"pq", "pk", "pv", "mask"}, {"a"}).i("q_num_heads", 2).i("kv_num_heads", 2);
  att.node("Relu", {"a"}, {"y"});
  att.output("y");
  Tensor mask = random_tensor(LOOM_DTYPE_BOOL, {6, 6}, 9);
  for (size_t i = 0; i < 6; ++i) mask.bytes[i * 6] = 1;  // no fully masked row
  for (const char* keep : {"", ";bf16_f32=none"})
    expect_matches_cpu(att,
                       {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 6, 16}, 1)}, {"mask", mask}},
                       onednn_only(std::string("precision=bf16") + keep), &bf16);
}

TEST(OnednnPrecision, Bf16F32OptionIsChecked) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  const std::filesystem::path path = m.save();
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, {1, 8}, 1);
  for (const char* bad : {"bf16_f32=norms", "bf16_f32=norm,norm", "bf16_f32=", "bf16_f32=none,"}) {
    SCOPED_TRACE(bad);
    try {
      run_model(path, {{"x", x}}, onednn_only(bad));
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("norm,softmax,residual,final"), std::string::npos)
          << e.what();
    }
  }
  for (const char* good : {"bf16_f32=none", "bf16_f32=final", "bf16_f32=softmax,norm"})
    EXPECT_NO_THROW(run_model(path, {{"x", x}}, onednn_only(good))) << good;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::onednn_testing
