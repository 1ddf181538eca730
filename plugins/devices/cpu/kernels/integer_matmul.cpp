// MatMulInteger (10) and QLinearMatMul (10): numpy-style batched matrix products of 8-bit
// integers with exact int32 accumulation of (a - a_zero_point)·(b - b_zero_point).
// QLinearMatMul then requantizes: y = saturate(round_half_even(acc * a_scale * b_scale /
// y_scale) + y_zero_point). Zero points and scales are per tensor, per row of a ([M] or
// [..., M, 1]) or per column of b ([N] or [..., 1, N]).
#include "quantize_common.hpp"

namespace loom::cpu {
namespace {

// Shapes of a numpy matmul after promoting 1-D operands, with the offsets of each output
// batch entry's matrices inside a and b.
struct MatMulPlan {
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> a_dims, b_dims;   // promoted to rank >= 2
  std::vector<int64_t> out_dims;         // what the op returns (promoted dims removed)
  std::vector<size_t> a_batch, b_batch;  // batch index into a / b for each output batch
};

// For every index of `out_batch` (a shape), the flat index into `in_batch` under numpy
// broadcasting (in_batch right-aligned, dims of 1 repeat).
std::vector<size_t> broadcast_index(const std::vector<int64_t>& in_batch,
                                    const std::vector<int64_t>& out_batch) {
  size_t total = 1;
  for (int64_t d : out_batch) total *= static_cast<size_t>(d);
  std::vector<size_t> result(total);
  const size_t off = out_batch.size() - in_batch.size();
  for (size_t i = 0; i < total; ++i) {
    size_t rem = i, idx = 0, stride = 1;
    for (size_t k = out_batch.size(); k-- > 0;) {
      const size_t coord = rem % static_cast<size_t>(out_batch[k]);
      rem /= static_cast<size_t>(out_batch[k]);
      if (k >= off) {
        const int64_t d = in_batch[k - off];
        idx += (d == 1 ? 0 : coord) * stride;
        stride *= static_cast<size_t>(d);
      }
    }
    result[i] = idx;
  }
  return result;
}

MatMulPlan plan_matmul(const loom_tensor_t& a, const loom_tensor_t& b, const std::string& where) {
  MatMulPlan p;
  p.a_dims = misc::dims_of(a);
  p.b_dims = misc::dims_of(b);
  if (p.a_dims.empty() || p.b_dims.empty())
    fail(LOOM_ERROR_INVALID_MODEL, where + ": matrix inputs must have rank >= 1");
  const bool a_vec = p.a_dims.size() == 1, b_vec = p.b_dims.size() == 1;
  if (a_vec) p.a_dims.insert(p.a_dims.begin(), 1);
  if (b_vec) p.b_dims.push_back(1);
  p.M = p.a_dims[p.a_dims.size() - 2];
  p.K = p.a_dims.back();
  p.N = p.b_dims.back();
  if (p.b_dims[p.b_dims.size() - 2] != p.K)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": inner dimensions differ (" + std::to_string(p.K) +
                                       " vs " + std::to_string(p.b_dims[p.b_dims.size() - 2]) +
                                       ")");
  std::vector<int64_t> ab(p.a_dims.begin(), p.a_dims.end() - 2);
  std::vector<int64_t> bb(p.b_dims.begin(), p.b_dims.end() - 2);
  std::vector<int64_t> batch(std::max(ab.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t da = i + ab.size() >= batch.size() ? ab[i + ab.size() - batch.size()] : 1;
    const int64_t db = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    if (da != db && da != 1 && db != 1)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": batch dimensions " + std::to_string(da) + " and " +
                                         std::to_string(db) + " do not broadcast");
    batch[i] = da == 1 ? db : da;
  }
  p.a_batch = broadcast_index(ab, batch);
  p.b_batch = broadcast_index(bb, batch);
  p.out_dims = batch;
  if (!a_vec) p.out_dims.push_back(p.M);
  if (!b_vec) p.out_dims.push_back(p.N);
  return p;
}

// A per-tensor / per-row / per-column parameter expanded to one value per (batch, row) of a
// (`rows` = true, target [..., M, 1]) or per (batch, column) of b (target [..., 1, N]).
template <typename V>
std::vector<V> expand_param(const loom_tensor_t* t, V fallback, const std::vector<int64_t>& mat,
                            bool rows, const std::string& where, const char* name) {
  std::vector<int64_t> target = mat;
  target[target.size() - (rows ? 1 : 2)] = 1;
  size_t total = 1;
  for (int64_t d : target) total *= static_cast<size_t>(d);
  if (!t) return std::vector<V>(total, fallback);
  std::vector<V> values = misc::read_as<V>(*t, where + " " + name);
  if (values.size() == 1) return std::vector<V>(total, values[0]);
  std::vector<int64_t> pdims = misc::dims_of(*t);
  if (rows && pdims.size() == 1) pdims.push_back(1);  // [M] means one value per row
  bool ok = pdims.size() <= target.size();
  for (size_t i = 0; ok && i < pdims.size(); ++i) {
    const int64_t want = target[target.size() - pdims.size() + i];
    ok = pdims[i] == want || pdims[i] == 1;
  }
  if (!ok)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name +
                                       " must be a scalar or hold one value per " +
                                       (rows ? "row of a" : "column of b"));
  std::vector<size_t> idx = broadcast_index(pdims, target);
  std::vector<V> out(total);
  for (size_t i = 0; i < total; ++i) out[i] = values[idx[i]];
  return out;
}

// acc[batch][m][n] = sum_k (a - a_zp[batch_a][m]) * (b - b_zp[batch_b][n]) in int32 with the
// wrap-around the spec allows.
std::vector<int32_t> integer_matmul(const KernelContext& ctx, const loom_tensor_t& a,
                                    const loom_tensor_t& b, const MatMulPlan& p,
                                    const std::vector<int32_t>& a_zp,
                                    const std::vector<int32_t>& b_zp) {
  const std::string where = ctx.where();
  const std::vector<int64_t> av = misc::read_ints(a, where + " a");
  const std::vector<int64_t> bv = misc::read_ints(b, where + " b");
  const size_t M = p.M, K = p.K, N = p.N;
  std::vector<int32_t> out(p.a_batch.size() * M * N);
  // One work item per (batch, row).
  ctx.parallel_for(p.a_batch.size() * M, 1, [&](size_t begin, size_t end) {
    for (size_t item = begin; item < end; ++item) {
      const size_t batch = item / M, m = item % M;
      const int64_t* A = av.data() + (p.a_batch[batch] * M + m) * K;
      const int64_t* B = bv.data() + p.b_batch[batch] * K * N;
      const int64_t azp = a_zp[p.a_batch[batch] * M + m];
      const int32_t* bzp = b_zp.data() + p.b_batch[batch] * N;
      for (size_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (size_t k = 0; k < K; ++k) acc += (A[k] - azp) * (B[k * N + n] - bzp[n]);
        out[item * N + n] = static_cast<int32_t>(static_cast<uint32_t>(acc));
      }
    }
  });
  return out;
}

void matmul_integer(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(1);
  quant::require_quantized_type(a.dtype, where, "A");
  quant::require_quantized_type(b.dtype, where, "B");
  const MatMulPlan p = plan_matmul(a, b, where);
  auto a_zp = expand_param<int32_t>(ctx.input(2), 0, p.a_dims, true, where, "a_zero_point");
  auto b_zp = expand_param<int32_t>(ctx.input(3), 0, p.b_dims, false, where, "b_zero_point");
  std::vector<int32_t> acc = integer_matmul(ctx, a, b, p, a_zp, b_zp);
  loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_INT32, p.out_dims);
  std::copy(acc.begin(), acc.end(), sdk::data_of<int32_t>(y));
}

void qlinear_matmul(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& a = ctx.required_input(0);
  const loom_tensor_t& b = ctx.required_input(3);
  const loom_tensor_t& y_zp_t = ctx.required_input(7);
  quant::require_quantized_type(a.dtype, where, "a");
  quant::require_quantized_type(b.dtype, where, "b");
  quant::require_quantized_type(y_zp_t.dtype, where, "y_zero_point");
  const MatMulPlan p = plan_matmul(a, b, where);
  auto a_scale = expand_param<float>(&ctx.required_input(1), 0.f, p.a_dims, true, where, "a_scale");
  auto a_zp =
      expand_param<int32_t>(&ctx.required_input(2), 0, p.a_dims, true, where, "a_zero_point");
  auto b_scale =
      expand_param<float>(&ctx.required_input(4), 0.f, p.b_dims, false, where, "b_scale");
  auto b_zp =
      expand_param<int32_t>(&ctx.required_input(5), 0, p.b_dims, false, where, "b_zero_point");
  const float y_scale =
      static_cast<float>(misc::read_scalar_float(ctx.required_input(6), where + " y_scale"));
  const int32_t y_zp = quant::scalar_zero_point(&y_zp_t, where, "y_zero_point");
  std::vector<int32_t> acc = integer_matmul(ctx, a, b, p, a_zp, b_zp);
  loom_tensor_t& y = ctx.allocate_output(0, y_zp_t.dtype, p.out_dims);
  const size_t M = p.M, N = p.N;
  dispatch<kSignedInts | kUnsignedInts>(y_zp_t.dtype, where, [&]<typename Q>() {
    if constexpr (sizeof(Q) == 1) {
      Q* out = sdk::data_of<Q>(y);
      for (size_t batch = 0; batch < p.a_batch.size(); ++batch)
        for (size_t m = 0; m < M; ++m)
          for (size_t n = 0; n < N; ++n) {
            const float multiplier =
                a_scale[p.a_batch[batch] * M + m] * b_scale[p.b_batch[batch] * N + n] / y_scale;
            const size_t i = (batch * M + m) * N + n;
            out[i] = quant::saturate_round<Q>(
                static_cast<double>(std::nearbyint(static_cast<float>(acc[i]) * multiplier)) +
                y_zp);
          }
    }
  });
}

}  // namespace

LOOM_CPU_KERNEL("MatMulInteger", 10, matmul_integer, nullptr);
LOOM_CPU_KERNEL("QLinearMatMul", 10, qlinear_matmul, nullptr);

}  // namespace loom::cpu
