// MatMul kernel against a naive numpy-matmul reference: batch broadcasting, 1-D operands,
// integer types.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * scale);
  return v;
}

size_t count(const std::vector<int64_t>& d) {
  size_t n = 1;
  for (int64_t x : d) n *= size_t(x);
  return n;
}

// Reference for rank >= 2 operands whose batch dims are already padded to the same rank.
std::vector<float> naive_batched(const std::vector<float>& a, std::vector<int64_t> ad,
                                 const std::vector<float>& b, std::vector<int64_t> bd,
                                 std::vector<int64_t>& out_dims) {
  while (ad.size() < bd.size()) ad.insert(ad.begin(), 1);
  while (bd.size() < ad.size()) bd.insert(bd.begin(), 1);
  const size_t r = ad.size() - 2;
  const int64_t m = ad[r], k = ad[r + 1], n = bd[r + 1];
  out_dims.clear();
  for (size_t i = 0; i < r; ++i) out_dims.push_back(std::max(ad[i], bd[i]));
  const size_t batches = count(out_dims);
  out_dims.push_back(m);
  out_dims.push_back(n);
  std::vector<float> y(batches * m * n);
  for (size_t bi = 0; bi < batches; ++bi) {
    size_t rem = bi, aoff = 0, boff = 0, astride = 1, bstride = 1;
    for (size_t d = r; d-- > 0;) {
      size_t coord = rem % out_dims[d];
      rem /= out_dims[d];
      if (ad[d] != 1) aoff += coord * astride;
      if (bd[d] != 1) boff += coord * bstride;
      astride *= ad[d];
      bstride *= bd[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += double(a[aoff * m * k + i * k + p]) * double(b[boff * k * n + p * n + j]);
        y[bi * m * n + i * n + j] = float(s);
      }
  }
  return y;
}

TEST(MatMulOp, BroadcastsBatchDimensions) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{3, 4}, {4, 5}},          {{2, 3, 4}, {4, 5}},    {{3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 5}}, {{1, 7, 9}, {5, 9, 2}}, {{2, 3, 33, 70}, {2, 3, 70, 19}},
      {{6, 1, 5}, {6, 5, 1}}};
  for (const auto& [ad, bd] : cases) {
    auto a = ramp(count(ad), 0.37f), b = ramp(count(bd), 0.11f);
    KernelHarness h("MatMul", 13);
    h.input(make_filled<float>(ad, a));
    h.input(make_filled<float>(bd, b));
    auto out = h.run(1);
    std::vector<int64_t> want_dims;
    auto want = naive_batched(a, ad, b, bd, want_dims);
    ASSERT_EQ(std::vector<int64_t>(out[0].view.dims, out[0].view.dims + out[0].view.rank),
              want_dims);
    auto got = values_of<float>(out[0]);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f) << i;
  }
}

TEST(MatMulOp, OneDimensionalOperandsAreSqueezed) {
  KernelHarness vm("MatMul", 13);  // [3] x [2,3,2] -> [2,2]
  vm.input(make_filled<float>({3}, {1, 2, 3}));
  vm.input(make_filled<float>({2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, -1}));
  auto out = vm.run(1);
  ASSERT_EQ(out[0].view.rank, 2);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{4, 5, 5, 1}));

  KernelHarness mv("MatMul", 13);  // [2,3] x [3] -> [2]
  mv.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  mv.input(make_filled<float>({3}, {1, 0, -1}));
  out = mv.run(1);
  ASSERT_EQ(out[0].view.rank, 1);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{-2, -2}));

  KernelHarness vv("MatMul", 13);  // [3] x [3] -> scalar
  vv.input(make_filled<float>({3}, {1, 2, 3}));
  vv.input(make_filled<float>({3}, {4, 5, 6}));
  out = vv.run(1);
  EXPECT_EQ(out[0].view.rank, 0);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{32}));
}

TEST(MatMulOp, IntegerTypes) {
  KernelHarness h("MatMul", 13);
  h.input(make_filled<int64_t>({2, 1, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({2, 2}, {1, -1, 2, 5}));
  auto out = h.run(1);
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{5, 9, 11, 17}));
}

TEST(MatMulOp, RejectsIncompatibleShapes) {
  KernelHarness inner("MatMul", 13);
  inner.input(make_filled<float>({2, 3}, std::vector<float>(6)));
  inner.input(make_filled<float>({2, 3}, std::vector<float>(6)));
  EXPECT_THROW(inner.run(1), sdk::Error);
  KernelHarness batch("MatMul", 13);
  batch.input(make_filled<float>({2, 2, 3}, std::vector<float>(12)));
  batch.input(make_filled<float>({3, 3, 2}, std::vector<float>(18)));
  EXPECT_THROW(batch.run(1), sdk::Error);
  KernelHarness dtype("MatMul", 13);
  dtype.input(make_filled<float>({2, 2}, std::vector<float>(4)));
  dtype.input(make_filled<double>({2, 2}, std::vector<double>(4)));
  EXPECT_THROW(dtype.run(1), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
