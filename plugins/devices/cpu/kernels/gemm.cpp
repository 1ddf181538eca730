// Gemm (opsets 1, 6, 7, 9, 11, 13): Y = alpha * op(A) * op(B) + beta * C, C unidirectionally
// broadcast to (M, N) (scalar, row, column or full), optional since opset 11.
// Floats go through the blocked gemm(); integer types (opset 9+) through a plain loop.
#include "gemm.hpp"

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

// C's dims as (rows, cols) after right-aligning to (M, N); each must be 1 or the full extent.
struct BroadcastC {
  int64_t rows = 1, cols = 1;
};

BroadcastC check_c(const KernelContext& ctx, const loom_tensor_t& c, int64_t m, int64_t n) {
  if (c.rank > 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": C must have rank <= 2, got shape " + nn::shape_string(c));
  BroadcastC b;
  if (c.rank == 2) b.rows = c.dims[0];
  if (c.rank >= 1) b.cols = c.dims[c.rank - 1];
  if ((b.rows != 1 && b.rows != m) || (b.cols != 1 && b.cols != n))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": C of shape " + nn::shape_string(c) +
                                          " cannot be broadcast to [" + std::to_string(m) + "," +
                                          std::to_string(n) + "]");
  return b;
}

void gemm_kernel(KernelContext& ctx) {
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  const loom_tensor_t* c = ctx.input(2);
  if (!c && ctx.opset() < 11)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": input C is required before opset 11");
  nn::require_same_dtype(ctx, {1, 2});
  nn::require_rank(ctx, a, 2, "A");
  nn::require_rank(ctx, b, 2, "B");
  const bool trans_a = ctx.attrs().get_int("transA", 0) != 0;
  const bool trans_b = ctx.attrs().get_int("transB", 0) != 0;
  const float alpha = ctx.attrs().get_float("alpha", 1.0f);
  const float beta = ctx.attrs().get_float("beta", 1.0f);
  const int64_t m = trans_a ? a.dims[1] : a.dims[0];
  const int64_t k = trans_a ? a.dims[0] : a.dims[1];
  const int64_t kb = trans_b ? b.dims[1] : b.dims[0];
  const int64_t n = trans_b ? b.dims[0] : b.dims[1];
  if (k != kb)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": inner dimensions differ: op(A) is " + std::to_string(m) + "x" +
             std::to_string(k) + ", op(B) is " + std::to_string(kb) + "x" + std::to_string(n));
  BroadcastC bc;
  if (c) bc = check_c(ctx, *c, m, n);
  // Before opset 7, C broadcasts only when the node says so.
  if (c && ctx.opset() < 7 && ctx.attrs().get_int("broadcast", 0) == 0 &&
      (c->rank != 2 || bc.rows != m || bc.cols != n))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": C " + nn::shape_string(*c) +
                                       " must be [M, N] when broadcast = 0 (opset < 7)");
  const int64_t out_dims[2] = {m, n};
  loom_tensor_t& y = ctx.allocate_output(0, a.dtype, out_dims);

  dispatch<kFloats | kSignedInts | kUnsignedInts>(a.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> av(a), bv(b);
    nn::ComputeOutput<T> out(y);
    C* yp = out.data();
    const size_t M = static_cast<size_t>(m), N = static_cast<size_t>(n), K = static_cast<size_t>(k);
    // Y starts as C broadcast; the multiply then accumulates with beta.
    C beta_eff = C(0);
    if (c && beta != 0.0f) {
      nn::ComputeInput<T> cv(*c);
      for (size_t i = 0; i < M; ++i)
        for (size_t j = 0; j < N; ++j)
          yp[i * N + j] =
              cv[(bc.rows == 1 ? 0 : i) * static_cast<size_t>(bc.cols) + (bc.cols == 1 ? 0 : j)];
      beta_eff = static_cast<C>(beta);
    }
    if constexpr (std::is_floating_point_v<C>) {
      gemm(trans_a, trans_b, M, N, K, static_cast<C>(alpha), av.data(), a.dims[1], bv.data(),
           b.dims[1], beta_eff, yp, N, parallel_for_of(ctx));
    } else {
      // Integer Gemm: alpha/beta are floats in the spec; apply them in double and truncate
      // back, as the reference implementation's numpy arithmetic does for integral results.
      const size_t lda = a.dims[1], ldb = b.dims[1];
      const double beta_int = (c && beta != 0.0f) ? static_cast<double>(beta) : 0.0;
      nn::parallel_range(ctx, M, 1, [&](size_t i0, size_t i1) {
        std::vector<C> acc(N);
        for (size_t i = i0; i < i1; ++i) {
          std::fill(acc.begin(), acc.end(), C(0));
          for (size_t p = 0; p < K; ++p) {
            const C av_ip = trans_a ? av[p * lda + i] : av[i * lda + p];
            for (size_t j = 0; j < N; ++j)
              acc[j] += av_ip * (trans_b ? bv[j * ldb + p] : bv[p * ldb + j]);
          }
          for (size_t j = 0; j < N; ++j)
            yp[i * N + j] =
                static_cast<C>(static_cast<double>(alpha) * static_cast<double>(acc[j]) +
                               beta_int * static_cast<double>(yp[i * N + j]));
        }
      });
    }
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("Gemm", 1, gemm_kernel, nullptr);

}  // namespace loom::cpu
