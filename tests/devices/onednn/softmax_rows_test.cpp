// The onednn device's softmax row kernel (plugins/devices/onednn/softmax_rows.hpp) against a
// double-precision softmax: row lengths around its 16-wide vectors, values up to exp's
// underflow, masked (-inf) entries, and rows whose answer is NaN.
#include "softmax_rows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace loom::onednn {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Softmax or LogSoftmax of one row in double, max-subtracted (NaN when the reference is).
std::vector<double> reference_row(const float* x, int64_t len, bool log) {
  double m = -INFINITY;
  for (int64_t j = 0; j < len; ++j)
    if (x[j] > m) m = x[j];
  double sum = 0;
  for (int64_t j = 0; j < len; ++j) sum += std::exp(double(x[j]) - m);
  std::vector<double> y(static_cast<size_t>(len));
  for (int64_t j = 0; j < len; ++j)
    y[j] = log ? (double(x[j]) - m) - std::log(sum) : std::exp(double(x[j]) - m) / sum;
  return y;
}

void expect_rows_match(const std::vector<float>& x, int64_t rows, int64_t len, bool log) {
  std::vector<float> y(x.size(), 12345.f);
  softmax_rows(x.data(), y.data(), rows, len, log);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> want = reference_row(x.data() + r * len, len, log);
    for (int64_t j = 0; j < len; ++j) {
      double got = y[r * len + j], w = want[j];
      SCOPED_TRACE("row " + std::to_string(r) + " column " + std::to_string(j));
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(got)) << got;
      } else if (std::isinf(w)) {
        EXPECT_EQ(got, w);
      } else {
        // exp's polynomial is within 1.2e-7 relative, float sums add a few ulps per row.
        EXPECT_NEAR(got, w, log ? 4e-6 * (1 + std::abs(w)) : 1e-6 * w + 1e-12);
      }
    }
  }
}

TEST(OnednnSoftmaxRows, MatchesADoubleSoftmax) {
  if (!softmax_rows_available()) GTEST_SKIP() << "no AVX-512 here: oneDNN's softmax is used";
  std::mt19937 rng(3);
  for (float spread : {1.f, 30.f, 200.f}) {
    std::uniform_real_distribution<float> dist(-spread, spread);
    for (int64_t len : {1, 2, 15, 16, 17, 31, 128, 197, 1000}) {
      for (bool log : {false, true}) {
        SCOPED_TRACE("len " + std::to_string(len) + " spread " + std::to_string(spread) +
                     (log ? " log" : ""));
        const int64_t rows = 5;
        std::vector<float> x(static_cast<size_t>(rows * len));
        for (float& v : x) v = dist(rng);
        expect_rows_match(x, rows, len, log);
      }
    }
  }
}

TEST(OnednnSoftmaxRows, MaskedAndNonFiniteRows) {
  if (!softmax_rows_available()) GTEST_SKIP() << "no AVX-512 here: oneDNN's softmax is used";
  const int64_t len = 19;
  for (bool log : {false, true}) {
    SCOPED_TRACE(log ? "log" : "softmax");
    std::vector<float> x;
    auto row = [&](std::vector<float> r) {
      r.resize(len, 0.5f);
      x.insert(x.end(), r.begin(), r.end());
    };
    row({-kInf, 1.f, -kInf, 2.f});                // masked entries: exactly 0 (log: -inf)
    row(std::vector<float>(len, -kInf));          // all masked: NaN
    row({1.f, std::nanf(""), 3.f});               // a NaN: NaN throughout
    row({kInf, 1.f});                             // +inf: NaN throughout
    row({-1e30f, 0.f, -150.f, -104.5f, -87.5f});  // underflow to 0 and denormals
    expect_rows_match(x, static_cast<int64_t>(x.size()) / len, len, log);
  }
}

// The in-place single-row form Attention uses: the same softmax on every CPU, and a row of
// only -inf (a query with no visible key) gives 0, not NaN.
TEST(OnednnSoftmaxRows, InPlaceRowAndFullyMaskedRow) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-20.f, 20.f);
  for (int64_t len : {1, 15, 16, 17, 100, 513}) {
    SCOPED_TRACE("length " + std::to_string(len));
    std::vector<float> x(static_cast<size_t>(len));
    for (float& v : x) v = dist(rng);
    if (len > 3) x[2] = -kInf;
    std::vector<double> want = reference_row(x.data(), len, false);
    std::vector<float> y = x;
    softmax_row_inplace(y.data(), len);
    for (int64_t j = 0; j < len; ++j) EXPECT_NEAR(y[j], want[j], 1e-6 + 1e-5 * want[j]) << j;
    std::vector<float> masked(static_cast<size_t>(len), -kInf);
    softmax_row_inplace(masked.data(), len);
    for (float v : masked) EXPECT_EQ(v, 0.f);
  }
}

}  // namespace
}  // namespace loom::onednn
