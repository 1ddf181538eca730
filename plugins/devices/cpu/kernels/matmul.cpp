// MatMul (opsets 1, 9, 13): numpy.matmul semantics. 1-D operands are promoted ([K] -> [1,K] for
// A, [K] -> [K,1] for B) and the promoted axis is dropped from the result; leading (batch)
// dimensions broadcast. Floats use the blocked gemm(); integer types a plain loop.
#include <algorithm>

#include "gemm.hpp"
#include "nn_common.hpp"

namespace loom::cpu {
namespace {

struct MatMulShape {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> batch;             // broadcast batch dims
  std::vector<int64_t> a_batch, b_batch;  // each operand's batch dims, left-padded with 1
  std::vector<int64_t> out;               // output dims
};

MatMulShape plan(const KernelContext& ctx, const loom_tensor_t& a, const loom_tensor_t& b) {
  if (a.rank == 0 || b.rank == 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": operands must have rank >= 1, got " +
                                          nn::shape_string(a) + " and " + nn::shape_string(b));
  MatMulShape s;
  std::vector<int64_t> ad = nn::dims_of(a), bd = nn::dims_of(b);
  const bool a_vec = a.rank == 1, b_vec = b.rank == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  s.m = ad[ad.size() - 2];
  s.k = ad.back();
  s.n = bd.back();
  if (bd[bd.size() - 2] != s.k)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": inner dimensions differ for shapes " +
                                          nn::shape_string(a) + " and " + nn::shape_string(b));
  const size_t rank = std::max(ad.size(), bd.size()) - 2;
  s.a_batch.assign(rank, 1);
  s.b_batch.assign(rank, 1);
  std::copy(ad.begin(), ad.end() - 2, s.a_batch.end() - (ad.size() - 2));
  std::copy(bd.begin(), bd.end() - 2, s.b_batch.end() - (bd.size() - 2));
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = s.a_batch[i], y = s.b_batch[i];
    if (x != y && x != 1 && y != 1)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": batch dimensions of " +
                                            nn::shape_string(a) + " and " + nn::shape_string(b) +
                                            " do not broadcast");
    s.batch.push_back(x == 1 ? y : x);
  }
  s.out = s.batch;
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  return s;
}

// Offset (in matrices) of the operand for output batch index `flat`.
size_t operand_batch_offset(size_t flat, const std::vector<int64_t>& out_batch,
                            const std::vector<int64_t>& op_batch) {
  size_t offset = 0, stride = 1;
  for (size_t d = out_batch.size(); d-- > 0;) {
    const size_t coord = flat % static_cast<size_t>(out_batch[d]);
    flat /= static_cast<size_t>(out_batch[d]);
    if (op_batch[d] != 1) offset += coord * stride;
    stride *= static_cast<size_t>(op_batch[d]);
  }
  return offset;
}

template <typename C>
void int_matmul(const C* a, const C* b, C* y, size_t m, size_t n, size_t k) {
  for (size_t i = 0; i < m; ++i) {
    C* row = y + i * n;
    for (size_t p = 0; p < k; ++p) {
      const C av = a[i * k + p];
      const C* brow = b + p * n;
      for (size_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
  }
}

void matmul_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  nn::require_same_dtype(ctx, {1});
  const MatMulShape s = plan(ctx, a, b);
  loom_tensor_t& y = ctx.allocate_output(0, a.dtype, s.out);
  size_t batches = 1;
  for (int64_t d : s.batch) batches *= static_cast<size_t>(d);
  const size_t M = s.m, N = s.n, K = s.k;
  if (batches == 0 || M == 0 || N == 0) return;

  dispatch<kFloats | kSignedInts | kUnsignedInts>(a.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> av(a), bv(b);
    nn::ComputeOutput<T> out(y);
    C* yp = out.data();
    auto a_mat = [&](size_t batch) {
      return av.data() + operand_batch_offset(batch, s.batch, s.a_batch) * M * K;
    };
    auto b_mat = [&](size_t batch) {
      return bv.data() + operand_batch_offset(batch, s.batch, s.b_batch) * K * N;
    };
    bool b_shared = true;  // the same B for every batch: fold the batches into M
    for (int64_t d : s.b_batch) b_shared = b_shared && d == 1;
    bool a_full = true;  // A holds every batch (no broadcasting of A)
    for (size_t i = 0; i < s.batch.size(); ++i) a_full = a_full && s.a_batch[i] == s.batch[i];

    if constexpr (std::is_floating_point_v<C>) {
      if (b_shared && a_full) {
        gemm(false, false, batches * M, N, K, C(1), av.data(), K, bv.data(), N, C(0), yp, N,
             parallel_for_of(ctx));
      } else if (batches >= 2 * static_cast<size_t>(ctx.threads()) &&
                 M * N * K < (size_t{1} << 20)) {
        // Many small products (attention scores): one thread per product.
        nn::parallel_range(ctx, batches, 1, [&](size_t b0, size_t b1) {
          for (size_t i = b0; i < b1; ++i)
            gemm(false, false, M, N, K, C(1), a_mat(i), K, b_mat(i), N, C(0), yp + i * M * N, N);
        });
      } else {
        const ParallelFor pf = parallel_for_of(ctx);
        for (size_t i = 0; i < batches; ++i)
          gemm(false, false, M, N, K, C(1), a_mat(i), K, b_mat(i), N, C(0), yp + i * M * N, N, pf);
      }
    } else {
      nn::parallel_range(ctx, batches, 1, [&](size_t b0, size_t b1) {
        for (size_t i = b0; i < b1; ++i) int_matmul<C>(a_mat(i), b_mat(i), yp + i * M * N, M, N, K);
      });
    }
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("MatMul", 1, matmul_kernel, nullptr);

}  // namespace loom::cpu
