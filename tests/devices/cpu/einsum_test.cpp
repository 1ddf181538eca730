// Einsum forms: matmul, transpose, trace, diagonal, batch matmul, ellipsis broadcasting,
// implicit output and errors.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<Tensor> einsum(const std::string& eq, std::vector<Tensor> inputs) {
  KernelHarness h("Einsum", 12);
  h.attr_string("equation", eq);
  for (Tensor& t : inputs) h.input(std::move(t));
  return h.run(1);
}

TEST(EinsumKernel, MatMulExplicitAndImplicit) {
  auto a = [] { return make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}); };
  auto b = [] { return make_filled<float>({3, 2}, {1, 0, 0, 1, 1, 1}); };
  const std::vector<float> want{4, 5, 10, 11};
  EXPECT_EQ(values_of<float>(einsum("ij,jk->ik", {a(), b()})[0]), want);
  EXPECT_EQ(values_of<float>(einsum("ij,jk", {a(), b()})[0]), want);
}

TEST(EinsumKernel, TransposeTraceAndDiagonal) {
  auto m = [] { return make_filled<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); };
  EXPECT_EQ(values_of<float>(einsum("ij->ji", {m()})[0]),
            (std::vector<float>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  // Implicit output of "ji" is "ij": a transpose too.
  EXPECT_EQ(values_of<float>(einsum("ji", {m()})[0]),
            (std::vector<float>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  auto trace = einsum("ii", {m()});
  EXPECT_EQ(trace[0].view.rank, 0);
  EXPECT_EQ(values_of<float>(trace[0]), (std::vector<float>{15}));
  EXPECT_EQ(values_of<float>(einsum("ii->i", {m()})[0]), (std::vector<float>{1, 5, 9}));
}

TEST(EinsumKernel, BatchMatMulAndBatchDiagonal) {
  auto a = make_filled<int32_t>({2, 1, 2}, {1, 2, 3, 4});
  auto b = make_filled<int32_t>({2, 2, 1}, {5, 6, 7, 8});
  EXPECT_EQ(values_of<int32_t>(einsum("bij,bjk->bik", {std::move(a), std::move(b)})[0]),
            (std::vector<int32_t>{17, 53}));
  auto c = make_filled<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(values_of<float>(einsum("...ii->...i", {std::move(c)})[0]),
            (std::vector<float>{1, 4, 5, 8}));
}

TEST(EinsumKernel, EllipsisBroadcastsBatchDims) {
  auto a = make_filled<float>({2, 1, 2}, {1, 2, 3, 4});  // batch 2
  auto b = make_filled<float>({2, 2}, {1, 0, 0, 2});     // no batch: broadcast
  auto out = einsum("...ij,...jk->...ik", {std::move(a), std::move(b)});
  EXPECT_EQ(out[0].view.rank, 3);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 4, 3, 8}));
}

TEST(EinsumKernel, SumInnerAndOuterProducts) {
  EXPECT_EQ(values_of<float>(einsum("ij->i", {make_filled<float>({2, 2}, {1, 2, 3, 4})})[0]),
            (std::vector<float>{3, 7}));
  EXPECT_EQ(values_of<double>(einsum("i,i", {make_filled<double>({3}, {1, 2, 3}),
                                             make_filled<double>({3}, {4, 5, 6})})[0]),
            (std::vector<double>{32}));
  EXPECT_EQ(values_of<float>(einsum(
                "i,j->ij", {make_filled<float>({2}, {1, 2}), make_filled<float>({2}, {3, 4})})[0]),
            (std::vector<float>{3, 4, 6, 8}));
}

TEST(EinsumKernel, MismatchedLabelSizesAreAnError) {
  EXPECT_THROW(einsum("ij,jk->ik", {make_filled<float>({2, 3}, std::vector<float>(6, 1.f)),
                                    make_filled<float>({2, 2}, std::vector<float>(4, 1.f))}),
               sdk::Error);
  EXPECT_THROW(einsum("ij->k", {make_filled<float>({1, 1}, {1.f})}), sdk::Error);
}

TEST(EinsumKernel, OperandCountAndRankMismatchesAreErrors) {
  EXPECT_THROW(einsum("ij,jk->ik", {make_filled<float>({1, 1}, {1.f})}), sdk::Error);
  EXPECT_THROW(einsum("ijk->i", {make_filled<float>({1, 1}, {1.f})}), sdk::Error);
  EXPECT_THROW(einsum("i.j->i", {make_filled<float>({1, 1}, {1.f})}), sdk::Error);
}

}  // namespace
}  // namespace loom::cpu
