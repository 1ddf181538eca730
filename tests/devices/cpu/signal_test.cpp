// DFT / STFT against a direct double-precision DFT written here (power-of-two and other
// lengths, inverse, onesided, padding), window formulas, MelWeightMatrix properties, Det,
// and the seeded random generators.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <optional>
#include <random>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<std::complex<double>> naive_dft(const std::vector<std::complex<double>>& x, size_t n,
                                            bool inverse) {
  std::vector<std::complex<double>> out(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < std::min(n, x.size()); ++j)
      out[k] +=
          x[j] * std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * double(j * k) / double(n));
  if (inverse)
    for (auto& v : out) v /= double(n);
  return out;
}

void check_dft(int64_t len, int64_t dft_length, bool inverse, bool onesided) {
  std::mt19937 rng(static_cast<unsigned>(len * 7 + dft_length));
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> data(2 * len * 2);  // batch 2, complex
  for (float& v : data) v = dist(rng);
  KernelHarness h("DFT", 17);
  if (inverse) h.attr_int("inverse", 1);
  if (onesided) h.attr_int("onesided", 1);
  h.input(make_filled<float>({2, len, 2}, data));
  if (dft_length) h.input(make_filled<int64_t>({}, {dft_length}));
  auto out = values_of<float>(h.run(1)[0]);
  const size_t n = dft_length ? size_t(dft_length) : size_t(len);
  const size_t bins = onesided ? n / 2 + 1 : n;
  ASSERT_EQ(out.size(), 2 * bins * 2);
  for (int b = 0; b < 2; ++b) {
    std::vector<std::complex<double>> x(len);
    for (int64_t j = 0; j < len; ++j) x[j] = {data[(b * len + j) * 2], data[(b * len + j) * 2 + 1]};
    auto want = naive_dft(x, n, inverse);
    for (size_t k = 0; k < bins; ++k) {
      EXPECT_NEAR(out[(b * bins + k) * 2], want[k].real(), 1e-4) << "bin " << k;
      EXPECT_NEAR(out[(b * bins + k) * 2 + 1], want[k].imag(), 1e-4) << "bin " << k;
    }
  }
}

TEST(SignalKernels, DftMatchesDirectSum) {
  check_dft(8, 0, false, false);   // radix-2 path
  check_dft(6, 0, false, false);   // direct path
  check_dft(16, 0, true, false);   // inverse
  check_dft(5, 8, false, true);    // zero padding + onesided
  check_dft(12, 7, false, false);  // truncation
}

// DFT-20 of a real [1, 2, 3, 1] signal along the axis given as input 2 (absent: -2).
std::vector<float> dft20(const std::vector<float>& x, std::optional<int64_t> axis,
                         std::vector<int64_t>* dims = nullptr) {
  KernelHarness h("DFT", 20);
  h.input(make_filled<float>({1, 2, 3, 1}, x));
  if (axis) {
    h.omitted_input();
    h.input(make_filled<int64_t>({}, {*axis}));
  }
  Tensor y = h.run(1)[0];
  if (dims) *dims = testing::shape(y);
  return values_of<float>(y);
}

TEST(SignalKernels, Dft20TakesTheAxisAsAnInput) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // rows (1, 2, 3) and (4, 5, 6)
  std::vector<int64_t> dims;
  // Default -2: along the rows' 3 elements. Bin 0 is the row sum.
  auto last = dft20(x, std::nullopt, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 2, 3, 2}));
  EXPECT_NEAR(last[0], 6, 1e-5);
  EXPECT_NEAR(last[6], 15, 1e-5);
  EXPECT_EQ(dft20(x, 2), last);
  // Axis 1 (or -3): along the 2 rows: bin 0 the column sums, bin 1 their differences.
  auto rows = dft20(x, 1, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 2, 3, 2}));
  EXPECT_EQ(rows, (std::vector<float>{5, 0, 7, 0, 9, 0, -3, 0, -3, 0, -3, 0}));
  EXPECT_EQ(dft20(x, -3), rows);
  // Axis 0 is a valid (if trivial) signal axis of length 1; -1 is the real/imaginary axis.
  EXPECT_EQ(dft20(x, 0), (std::vector<float>{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}));
  EXPECT_THROW(dft20(x, -1), sdk::Error);
  EXPECT_THROW(dft20(x, 3), sdk::Error);
}

TEST(SignalKernels, InverseOnesidedIsTheRealIrfft) {
  // The one-sided spectrum of a real signal of length 6 (bins 0..3) inverts back to the signal
  // with the default dft_length 2 * (4 - 1) = 6, in a real [..., 6, 1] output.
  const std::vector<double> signal = {1, -2, 3, 0.5, 4, -1};
  std::vector<std::complex<double>> c(signal.begin(), signal.end());
  auto spectrum = naive_dft(c, 6, false);
  std::vector<float> half;
  for (int k = 0; k < 4; ++k) {
    half.push_back(static_cast<float>(spectrum[k].real()));
    half.push_back(static_cast<float>(spectrum[k].imag()));
  }
  for (int64_t opset : {17, 20}) {
    KernelHarness h("DFT", opset);
    h.attr_int("inverse", 1);
    h.attr_int("onesided", 1);
    if (opset == 17) h.attr_int("axis", 1);
    h.input(make_filled<float>({1, 4, 2}, half));
    Tensor y = h.run(1)[0];
    EXPECT_EQ(testing::shape(y), (std::vector<int64_t>{1, 6, 1}));
    auto got = values_of<float>(y);
    for (size_t j = 0; j < signal.size(); ++j) EXPECT_NEAR(got[j], signal[j], 1e-5) << j;
  }
  // An explicit odd dft_length uses bins 0..2 only.
  KernelHarness odd("DFT", 20);
  odd.attr_int("inverse", 1);
  odd.attr_int("onesided", 1);
  odd.input(make_filled<float>({1, 4, 2}, half));
  odd.input(make_filled<int64_t>({}, {5}));
  EXPECT_EQ(testing::shape(odd.run(1)[0]), (std::vector<int64_t>{1, 5, 1}));
  // One bin gives no default length.
  KernelHarness one("DFT", 20);
  one.attr_int("inverse", 1);
  one.attr_int("onesided", 1);
  one.input(make_filled<float>({1, 1, 2}, {1, 0}));
  EXPECT_THROW(one.run(1), sdk::Error);
}

TEST(SignalKernels, StftFramesWithWindow) {
  std::vector<float> signal(10);
  for (int i = 0; i < 10; ++i) signal[i] = float(i % 3);
  KernelHarness h("STFT", 17);
  h.input(make_filled<float>({1, 10, 1}, signal));
  h.input(make_filled<int64_t>({}, {3}));
  h.input(make_filled<float>({4}, {0.5f, 1.f, 1.f, 0.5f}));
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.rank, 4);
  EXPECT_EQ(out[0].view.dims[1], 3);  // (10 - 4) / 3 + 1
  EXPECT_EQ(out[0].view.dims[2], 3);  // 4 / 2 + 1
  auto v = values_of<float>(out[0]);
  for (int f = 0; f < 3; ++f) {
    std::vector<std::complex<double>> frame(4);
    const double w[4] = {0.5, 1, 1, 0.5};
    for (int j = 0; j < 4; ++j) frame[j] = signal[f * 3 + j] * w[j];
    auto want = naive_dft(frame, 4, false);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(v[(f * 3 + k) * 2], want[k].real(), 1e-5);
      EXPECT_NEAR(v[(f * 3 + k) * 2 + 1], want[k].imag(), 1e-5);
    }
  }
}

TEST(SignalKernels, WindowsFollowTheirFormulas) {
  auto window = [](const char* op, int periodic) {
    KernelHarness h(op, 17);
    h.attr_int("periodic", periodic);
    h.input(make_filled<int64_t>({}, {5}));
    return values_of<float>(h.run(1)[0]);
  };
  auto hann = window("HannWindow", 0);
  EXPECT_NEAR(hann[0], 0.f, 1e-7);
  EXPECT_NEAR(hann[2], 1.f, 1e-7);
  EXPECT_NEAR(hann[1], 0.5f, 1e-7);
  auto hann_p = window("HannWindow", 1);  // N = 5
  EXPECT_NEAR(hann_p[1], 0.5 - 0.5 * std::cos(2 * std::numbers::pi / 5), 1e-6);
  auto hamming = window("HammingWindow", 0);
  EXPECT_NEAR(hamming[0], 25.0 / 46 - 21.0 / 46, 1e-6);
  auto blackman = window("BlackmanWindow", 0);
  EXPECT_NEAR(blackman[0], 0.f, 1e-6);
  EXPECT_NEAR(blackman[2], 1.f, 1e-6);
}

TEST(SignalKernels, MelWeightMatrixTrianglesPeakAtOne) {
  KernelHarness h("MelWeightMatrix", 17);
  h.input(make_filled<int32_t>({}, {4}));
  h.input(make_filled<int32_t>({}, {64}));
  h.input(make_filled<int32_t>({}, {16000}));
  h.input(make_filled<float>({}, {0.f}));
  h.input(make_filled<float>({}, {8000.f}));
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.dims[0], 33);
  ASSERT_EQ(out[0].view.dims[1], 4);
  auto v = values_of<float>(out[0]);
  for (int m = 0; m < 4; ++m) {
    float peak = 0;
    for (int k = 0; k < 33; ++k) {
      EXPECT_GE(v[k * 4 + m], 0.f);
      peak = std::max(peak, v[k * 4 + m]);
    }
    EXPECT_FLOAT_EQ(peak, 1.f) << "filter " << m;
  }
}

TEST(MiscMathKernels, DeterminantOfBatch) {
  KernelHarness h("Det", 11);
  h.input(make_filled<float>({2, 3, 3}, {2, 0, 0, 0, 3, 0, 0, 0, 4,     // 24
                                         0, 1, 0, 1, 0, 0, 0, 0, 1}));  // row swap: -1
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.rank, 1);
  auto v = values_of<float>(out[0]);
  EXPECT_NEAR(v[0], 24.f, 1e-5);
  EXPECT_NEAR(v[1], -1.f, 1e-6);
}

TEST(MiscMathKernels, SeededRandomIsDeterministicAndInRange) {
  auto draw = [](float seed) {
    KernelHarness h("RandomUniform", 1);
    h.attr_ints("shape", {1000});
    h.attr_float("seed", seed);
    h.attr_float("low", 2.f);
    h.attr_float("high", 3.f);
    return values_of<float>(h.run(1)[0]);
  };
  auto a = draw(1.f), b = draw(1.f), c = draw(2.f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0;
  for (float x : a) {
    EXPECT_GE(x, 2.f);
    EXPECT_LT(x, 3.f);
    mean += x / 1000.0;
  }
  EXPECT_NEAR(mean, 2.5, 0.05);

  KernelHarness n("RandomNormalLike", 1);
  n.attr_float("seed", 3.f);
  n.attr_float("mean", 10.f);
  n.input(make_filled<double>({2000}, std::vector<double>(2000, 0.0)));
  auto normal = values_of<double>(n.run(1)[0]);
  double m = 0, var = 0;
  for (double x : normal) m += x / 2000.0;
  for (double x : normal) var += (x - m) * (x - m) / 2000.0;
  EXPECT_NEAR(m, 10.0, 0.1);
  EXPECT_NEAR(var, 1.0, 0.1);
}

TEST(MiscMathKernels, BernoulliAndMultinomialRespectProbabilities) {
  KernelHarness b("Bernoulli", 15);
  b.attr_float("seed", 5.f);
  b.input(make_filled<float>({4}, {0.f, 1.f, 0.f, 1.f}));
  EXPECT_EQ(values_of<float>(b.run(1)[0]), (std::vector<float>{0.f, 1.f, 0.f, 1.f}));

  KernelHarness m("Multinomial", 7);
  m.attr_float("seed", 5.f);
  m.attr_int("sample_size", 200);
  m.input(make_filled<float>({1, 3}, {-1000.f, 0.f, -1000.f}));  // all mass on class 1
  auto draws = values_of<int32_t>(m.run(1)[0]);
  ASSERT_EQ(draws.size(), 200u);
  for (int32_t d : draws) EXPECT_EQ(d, 1);
}

TEST(SignalKernels, BadAxisShortSignalAndHugeWindowAreErrors) {
  for (int64_t axis : {-1, 2, -4}) {  // the real/imaginary axis, past it, before the first
    KernelHarness dft("DFT", 17);
    dft.attr_int("axis", axis);
    dft.input(make_filled<float>({1, 4, 1}, {1, 2, 3, 4}));
    EXPECT_THROW(dft.run(1), sdk::Error) << axis;
  }

  KernelHarness stft("STFT", 17);
  stft.input(make_filled<float>({1, 3, 1}, {1, 2, 3}));
  stft.input(make_filled<int64_t>({}, {1}));
  stft.omitted_input();
  stft.input(make_filled<int64_t>({}, {8}));  // frame longer than the signal
  EXPECT_THROW(stft.run(1), sdk::Error);

  KernelHarness hann("HannWindow", 17);
  hann.input(make_filled<int64_t>({}, {int64_t{1} << 40}));
  EXPECT_THROW(hann.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
