// Transpose of the cpu device against a naive index computation, for 2-D to 5-D shapes
// (including size-1 axes that the kernel collapses) and several element sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

// out[o] = in[perm-mapped coordinate], computed the slow way.
template <typename T>
std::vector<T> naive_transpose(const std::vector<T>& in, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& perm) {
  const size_t rank = dims.size();
  std::vector<int64_t> out_dims(rank), in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * dims[i];
  for (size_t i = 0; i < rank; ++i) out_dims[i] = dims[perm[i]];
  std::vector<T> out(in.size());
  std::vector<int64_t> c(rank, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src += c[i] * in_strides[perm[i]];
    out[o] = in[src];
    for (size_t i = rank; i-- > 0;) {
      if (++c[i] < out_dims[i]) break;
      c[i] = 0;
    }
  }
  return out;
}

template <typename T>
void check_transpose(std::vector<int64_t> dims, std::vector<int64_t> perm) {
  const size_t n = static_cast<size_t>(
      std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>()));
  std::vector<T> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<T>(i % 120);
  KernelHarness h("Transpose", 13);
  h.input(make_filled<T>(dims, in));
  h.attr_ints("perm", perm);
  auto out = h.run(1);
  for (size_t i = 0; i < dims.size(); ++i) EXPECT_EQ(out[0].view.dims[i], dims[perm[i]]);
  EXPECT_EQ(values_of<T>(out[0]), naive_transpose(in, dims, perm))
      << "perm " << ::testing::PrintToString(perm);
}

TEST(Transpose, DefaultPermReversesAxes) {
  KernelHarness h("Transpose", 13);
  h.input(make_filled<float>({2, 3}, {0, 1, 2, 3, 4, 5}));
  auto out = h.run(1);
  EXPECT_EQ(out[0].view.dims[0], 3);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Transpose, TwoDimensionalBlocksLargerThanOneTile) {
  check_transpose<float>({70, 45}, {1, 0});
  check_transpose<uint8_t>({33, 65}, {1, 0});
}

TEST(Transpose, FourDimensionalNchwToNhwcAndBack) {
  check_transpose<float>({2, 3, 4, 5}, {0, 2, 3, 1});
  check_transpose<float>({2, 4, 5, 3}, {0, 3, 1, 2});
  check_transpose<int64_t>({3, 1, 4, 2}, {3, 1, 0, 2});
}

TEST(Transpose, FiveDimensionalAllPermutationsOfSomeAxes) {
  std::vector<int64_t> perm = {0, 1, 2, 3, 4};
  int checked = 0;
  do {
    check_transpose<int32_t>({2, 3, 1, 4, 2}, perm);
    ++checked;
  } while (std::next_permutation(perm.begin(), perm.end()) && checked < 120);
  EXPECT_EQ(checked, 120);
}

TEST(Transpose, RejectsInvalidPerm) {
  KernelHarness h("Transpose", 13);
  h.input(make_filled<float>({2, 3}, {0, 1, 2, 3, 4, 5}));
  h.attr_ints("perm", {0, 0});
  EXPECT_THROW(h.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
