// Gemm kernel and the shared blocked gemm() routine against naive triple loops.
#include "kernels/gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Naive reference of the gemm() contract, in double.
std::vector<float> naive_gemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
                              const std::vector<float>& a, size_t lda, const std::vector<float>& b,
                              size_t ldb, float beta, std::vector<float> c, size_t ldc) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 0;
      for (size_t p = 0; p < k; ++p)
        s += double(ta ? a[p * lda + i] : a[i * lda + p]) *
             double(tb ? b[j * ldb + p] : b[p * ldb + j]);
      float& dst = c[i * ldc + j];
      dst = float(alpha * s + (beta == 0 ? 0.0 : beta * double(dst)));
    }
  return c;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at flat index " << i;
}

// Runs chunks on two real threads so the routine's task split is exercised concurrently.
void two_threads(size_t n, size_t, const std::function<void(size_t, size_t)>& fn) {
  std::thread t([&] { fn(0, n / 2); });
  if (n / 2 < n) fn(n / 2, n);
  t.join();
}

TEST(GemmRoutine, MatchesNaiveForOddShapesTransposesAndStrides) {
  struct Case {
    size_t m, n, k;
    bool ta, tb;
    float alpha, beta;
  };
  const Case cases[] = {{1, 1, 1, false, false, 1, 0},
                        {7, 5, 3, false, false, 1, 0},
                        {13, 17, 300, true, false, 0.5f, 1},
                        {33, 65, 19, false, true, 2, -1},
                        {97, 130, 257, true, true, 1, 0.25f},
                        {1, 300, 40, false, false, 1, 1},
                        {300, 1, 40, false, true, 1, 0},
                        {6, 16, 1, false, false, 1, 0},
                        {200, 70, 600, false, false, 1, 0},
                        // Few columns (the dot-product path): B plain and transposed, with
                        // beta, and one more column than that path takes.
                        {258, 5, 256, false, false, 1, 0},
                        {64, 3, 100, false, true, 0.5f, 1},
                        {9, 7, 33, false, false, 2, 0.5f},
                        {9, 8, 33, false, false, 1, 0},
                        {1, 40, 300, false, true, 1, 0},
                        // Few rows against B transposed (a recurrent cell's gates): dots of
                        // each row of A with B's rows, four at a time and the rest one by one.
                        {4, 256, 64, false, true, 1, 0},
                        {3, 37, 19, false, true, 0.5f, 1},
                        {5, 38, 20, false, true, 1, 0}};
  unsigned seed = 1;
  for (const Case& cs : cases) {
    for (int threaded = 0; threaded < 2; ++threaded) {
      // Leading dimensions larger than the logical extents, to test strides.
      const size_t lda = (cs.ta ? cs.m : cs.k) + 3, ldb = (cs.tb ? cs.k : cs.n) + 2, ldc = cs.n + 5;
      auto a = random_values((cs.ta ? cs.k : cs.m) * lda, seed++);
      auto b = random_values((cs.tb ? cs.n : cs.k) * ldb, seed++);
      auto c = random_values(cs.m * ldc, seed++);
      auto want =
          naive_gemm(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a, lda, b, ldb, cs.beta, c, ldc);
      ParallelFor pf;
      if (threaded) pf = two_threads;
      gemm(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta,
           c.data(), ldc, pf);
      SCOPED_TRACE(::testing::PrintToString(std::vector<size_t>{cs.m, cs.n, cs.k}));
      expect_near_all(c, want, 1e-4f);
    }
  }
}

TEST(GemmRoutine, BetaZeroIgnoresGarbageInC) {
  auto a = random_values(20 * 30, 7), b = random_values(30 * 40, 8);
  std::vector<float> c(20 * 40, std::nanf(""));
  gemm(false, false, 20, 40, 30, 1.0f, a.data(), 30, b.data(), 40, 0.0f, c.data(), 40);
  for (float v : c) ASSERT_FALSE(std::isnan(v));
}

TEST(GemmRoutine, DoubleMatchesNaive) {
  const size_t m = 23, n = 41, k = 37;
  std::vector<double> a(m * k), b(k * n), c(m * n, 1.0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(double(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(double(i));
  gemm(false, true, m, n, k, 1.0, a.data(), k, b.data(), k, 2.0, c.data(), n);
  // b read as transposed: op(B)[p][j] = b[j * k + p] (b is interpreted as n x k here).
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 2.0;
      for (size_t p = 0; p < k; ++p) s += a[i * k + p] * b[j * k + p];
      ASSERT_NEAR(c[i * n + j], s, 1e-10);
    }
}

TEST(GemmOp, SpecExampleWithTransposesAlphaBetaAndRowBias) {
  KernelHarness h("Gemm", 13);
  h.attr_int("transA", 1);
  h.attr_int("transB", 1);
  h.attr_float("alpha", 0.5f);
  h.attr_float("beta", 2.0f);
  h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));         // A^T is 3x2
  h.input(make_filled<float>({4, 2}, {1, 0, 0, 1, 1, 1, 2, -1}));  // B^T is 2x4
  h.input(make_filled<float>({4}, {1, 2, 3, 4}));                  // row bias
  auto out = h.run(1);
  ASSERT_EQ(out[0].view.rank, 2);
  EXPECT_EQ(out[0].view.dims[0], 3);
  EXPECT_EQ(out[0].view.dims[1], 4);
  // A^T = [[1,4],[2,5],[3,6]]; A^T B^T rows: [1,4,5,-2], [2,5,7,-1], [3,6,9,0]
  const std::vector<float> want = {0.5f + 2, 2 + 4,     2.5f + 6, -1 + 8, 1 + 2,    2.5f + 4,
                                   3.5f + 6, -0.5f + 8, 1.5f + 2, 3 + 4,  4.5f + 6, 0 + 8};
  EXPECT_EQ(values_of<float>(out[0]), want);
}

TEST(GemmOp, BroadcastsColumnAndScalarCAndOmittedC) {
  auto a = random_values(5 * 7, 11), b = random_values(7 * 3, 12);
  for (int variant = 0; variant < 3; ++variant) {
    KernelHarness h("Gemm", 13);
    h.input(make_filled<float>({5, 7}, a));
    h.input(make_filled<float>({7, 3}, b));
    std::vector<float> cfull(15, 0);
    if (variant == 0) {
      h.input(make_filled<float>({5, 1}, {1, 2, 3, 4, 5}));
      for (size_t i = 0; i < 5; ++i)
        for (size_t j = 0; j < 3; ++j) cfull[i * 3 + j] = float(i + 1);
    } else if (variant == 1) {
      h.input(make_filled<float>({}, {7}));
      std::fill(cfull.begin(), cfull.end(), 7.0f);
    }
    auto want = naive_gemm(false, false, 5, 3, 7, 1, a, 7, b, 3, 1, cfull, 3);
    expect_near_all(values_of<float>(h.run(1)[0]), want, 1e-5f);
  }
}

TEST(GemmOp, IntegerAndDoubleTypes) {
  KernelHarness h("Gemm", 13);
  h.input(make_filled<int32_t>({2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int32_t>({2, 2}, {5, 6, 7, 8}));
  h.input(make_filled<int32_t>({2}, {10, 20}));
  EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{29, 42, 53, 70}));

  KernelHarness d("Gemm", 13);
  d.attr_int("transA", 1);
  d.input(make_filled<double>({2, 1}, {2, 3}));
  d.input(make_filled<double>({2, 1}, {4, 5}));
  EXPECT_EQ(values_of<double>(d.run(1)[0]), (std::vector<double>{23}));
}

TEST(GemmOp, RejectsMismatchedInnerDimensionsAndBadC) {
  KernelHarness h("Gemm", 13);
  h.input(make_filled<float>({2, 3}, std::vector<float>(6, 1)));
  h.input(make_filled<float>({4, 2}, std::vector<float>(8, 1)));
  EXPECT_THROW(h.run(1), sdk::Error);

  KernelHarness c("Gemm", 13);
  c.input(make_filled<float>({2, 3}, std::vector<float>(6, 1)));
  c.input(make_filled<float>({3, 2}, std::vector<float>(6, 1)));
  c.input(make_filled<float>({3}, std::vector<float>(3, 1)));
  EXPECT_THROW(c.run(1), sdk::Error);

  KernelHarness old("Gemm", 9);  // C is required before opset 11
  old.input(make_filled<float>({2, 3}, std::vector<float>(6, 1)));
  old.input(make_filled<float>({3, 2}, std::vector<float>(6, 1)));
  EXPECT_THROW(old.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
