// Gemm and MatMul on the packed NEON GEMM. Constant right-hand operands (the weights of fully
// connected layers) are packed once at compile time, with Gemm's alpha folded in; run-time
// operands are packed per call. Both in fp16 under precision=f16 (CompileOptions).
#include <arm_neon.h>

#include <algorithm>
#include <vector>

#include "ops/gemm_driver.hpp"

namespace loom::neon {
namespace {

// B (k x n, B(kk, j) = b[kk * rs + j * cs]) packed in the compile precision.
PackedWeights pack_constant_b(const float* b, size_t rs, size_t cs, size_t k, size_t n,
                              const CompileOptions& options) {
  PackedWeights p;
  p.half = options.fp16;
  if (p.half) {
    p.f16.resize(packed_b_floats(k, n));
    pack_b_as<uint16_t>(b, rs, cs, k, n, p.f16.data(), 0, gemm_panels(n, kGemmNR));
  } else {
    p.f32.resize(packed_b_floats(k, n));
    pack_b_as<float>(b, rs, cs, k, n, p.f32.data(), 0, gemm_panels(n, kGemmNR));
  }
  return p;
}

void multiply_packed_b(const Runtime& rt, size_t m, size_t n, size_t k, const float* a, size_t a_rs,
                       size_t a_cs, const PackedWeights& b, float* c, size_t ldc) {
  if (b.half)
    gemm_with_packed_b<uint16_t>(rt, m, n, k, a, a_rs, a_cs, b.f16.data(), c, ldc);
  else
    gemm_with_packed_b<float>(rt, m, n, k, a, a_rs, a_cs, b.f32.data(), c, ldc);
}

// ---- Gemm: Y = alpha * A' * B' + beta * C ------------------------------------------------

std::string gemm_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (input_rank(graph, node, 0) != 2) return "A must have rank 2";
  const loom_value_info_t* b = constant_input(graph, node, 1);
  if (!b || b->rank != 2) return "B must be a constant matrix (packed at compile time)";
  if (node.num_inputs > 2 && node.inputs[2] >= 0) {
    int32_t rank = input_rank(graph, node, 2);
    if (rank < 0 || rank > 2) return "C must have a known rank of at most 2";
  }
  return "";
}

class GemmOp final : public Op {
 public:
  GemmOp(const loom_graph_t& graph, const loom_node_t& node, const CompileOptions& options) {
    Attributes attrs(node);
    trans_a_ = attrs.get_int("transA", 0) != 0;
    const bool trans_b = attrs.get_int("transB", 0) != 0;
    const float alpha = attrs.get_float("alpha", 1.0f);
    beta_ = attrs.get_float("beta", 1.0f);
    const loom_value_info_t* b = constant_input(graph, node, 1);
    k_ = static_cast<size_t>(trans_b ? b->dims[1] : b->dims[0]);
    n_ = static_cast<size_t>(trans_b ? b->dims[0] : b->dims[1]);
    const auto* data = static_cast<const float*>(b->data);
    // alpha folds into the packed operand: B'(k, j) = alpha * (trans_b ? B[j][k] : B[k][j]).
    std::vector<float> scaled;
    if (alpha != 1.0f) {
      scaled.assign(data, data + k_ * n_);
      for (float& v : scaled) v *= alpha;
      data = scaled.data();
    }
    packed_b_ = pack_constant_b(data, trans_b ? 1 : n_, trans_b ? k_ : 1, k_, n_, options);
  }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& a = *in[0];
    if (a.rank() != 2)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "A of shape " + shape_text(a.dims) + " is not a matrix");
    const size_t m = static_cast<size_t>(trans_a_ ? a.dims[1] : a.dims[0]);
    const size_t k = static_cast<size_t>(trans_a_ ? a.dims[0] : a.dims[1]);
    if (k != k_)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "A of shape " + shape_text(a.dims) + " has inner extent " +
                                            std::to_string(k) + ", B has " + std::to_string(k_));
    out[0] = make_tensor({static_cast<int64_t>(m), static_cast<int64_t>(n_)});
    float* y = out[0].data;
    const size_t cols = static_cast<size_t>(a.dims[1]);
    multiply_packed_b(rt, m, n_, k_, a.data, trans_a_ ? 1 : cols, trans_a_ ? cols : 1, packed_b_, y,
                      n_);
    const Tensor* c = in.size() > 2 ? in[2] : nullptr;
    if (c && beta_ != 0.0f) add_scaled_c(*c, y, m, rt);
  }

 private:
  // y[i][j] += beta * C(i, j), C unidirectionally broadcast to [m, n].
  void add_scaled_c(const Tensor& c, float* y, size_t m, const Runtime& rt) const {
    if (c.rank() > 2)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "C of shape " + shape_text(c.dims) + " has rank above 2");
    const size_t rows = c.rank() == 2 ? static_cast<size_t>(c.dims[0]) : 1;
    const size_t cols = c.rank() >= 1 ? static_cast<size_t>(c.dims[c.rank() - 1]) : 1;
    if ((rows != 1 && rows != m) || (cols != 1 && cols != n_))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "C of shape " + shape_text(c.dims) +
                                            " does not broadcast to [" + std::to_string(m) + ", " +
                                            std::to_string(n_) + "]");
    const float32x4_t beta = vdupq_n_f32(beta_);
    rt.parallel_for(m, 16, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        const float* crow = c.data + (rows == 1 ? 0 : i * cols);
        float* yrow = y + i * n_;
        size_t j = 0;
        if (cols == n_) {
          for (; j + 4 <= n_; j += 4)
            vst1q_f32(yrow + j, vfmaq_f32(vld1q_f32(yrow + j), vld1q_f32(crow + j), beta));
          for (; j < n_; ++j) yrow[j] += beta_ * crow[j];
        } else {
          const float32x4_t v = vmulq_f32(vdupq_n_f32(crow[0]), beta);
          for (; j + 4 <= n_; j += 4) vst1q_f32(yrow + j, vaddq_f32(vld1q_f32(yrow + j), v));
          for (; j < n_; ++j) yrow[j] += beta_ * crow[0];
        }
      }
    });
  }

  bool trans_a_ = false;
  float beta_ = 1.0f;
  size_t k_ = 0, n_ = 0;
  PackedWeights packed_b_;
};

// ---- MatMul ------------------------------------------------------------------------------
// A [..., M, K] x B [K, N] (B constant: packed once; otherwise per run), or A and B of the same
// rank >= 3 with equal batch extents (batched, packed per run).

std::string matmul_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  const int32_t ra = input_rank(graph, node, 0), rb = input_rank(graph, node, 1);
  if (ra < 2 || rb < 2) return "both operands need a known rank of at least 2";
  if (rb != 2 && ra != rb) return "batched MatMul needs operands of equal rank (no broadcasting)";
  if (rb > 2) {
    const loom_value_info_t* a = sdk::node_input(graph, node, 0);
    const loom_value_info_t* b = sdk::node_input(graph, node, 1);
    for (int32_t d = 0; d < ra - 2; ++d)
      if (a->dims[d] < 0 || a->dims[d] != b->dims[d])
        return "batched MatMul needs equal, known batch extents (no broadcasting)";
  }
  return "";
}

class MatMulOp final : public Op {
 public:
  MatMulOp(const loom_graph_t& graph, const loom_node_t& node, const CompileOptions& options)
      : options_(options) {
    if (const loom_value_info_t* b = constant_input(graph, node, 1); b && b->rank == 2) {
      k_ = static_cast<size_t>(b->dims[0]);
      n_ = static_cast<size_t>(b->dims[1]);
      packed_b_ = pack_constant_b(static_cast<const float*>(b->data), n_, 1, k_, n_, options);
      prepacked_ = true;
    }
  }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    if (a.rank() < 2 || b.rank() < 2 || (b.rank() > 2 && b.rank() != a.rank()))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "operands " + shape_text(a.dims) + " and " +
                                            shape_text(b.dims) + " are not supported by neon");
    const size_t k = static_cast<size_t>(a.dims[a.rank() - 1]);
    const size_t kb = static_cast<size_t>(b.dims[b.rank() - 2]);
    const size_t n = static_cast<size_t>(b.dims[b.rank() - 1]);
    if (k != kb)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "inner extents differ: " + shape_text(a.dims) + " x " + shape_text(b.dims));
    std::vector<int64_t> dims(a.dims.begin(), a.dims.end() - 1);
    dims.push_back(static_cast<int64_t>(n));
    out[0] = make_tensor(dims);
    float* y = out[0].data;
    if (b.rank() == 2) {
      // Every leading dimension of A folds into M.
      const size_t m = a.size() / std::max<size_t>(k, 1);
      if (k == 0) {
        std::fill(y, y + out[0].size(), 0.0f);
        return;
      }
      if (prepacked_) {
        multiply_packed_b(rt, m, n, k, a.data, k, 1, packed_b_, y, n);
      } else {
        multiply_packed_b(rt, m, n, k, a.data, k, 1, pack_constant_b(b.data, n, 1, k, n, options_),
                          y, n);
      }
      return;
    }
    for (int d = 0; d < a.rank() - 2; ++d)
      if (a.dims[d] != b.dims[d])
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "batch extents differ: " + shape_text(a.dims) + " x " + shape_text(b.dims));
    const size_t m = static_cast<size_t>(a.dims[a.rank() - 2]);
    const size_t batches = (m != 0 && k != 0) ? a.size() / (m * k) : 0;
    if (k == 0) {
      std::fill(y, y + out[0].size(), 0.0f);
      return;
    }
    for (size_t i = 0; i < batches; ++i)
      multiply_packed_b(rt, m, n, k, a.data + i * m * k, k, 1,
                        pack_constant_b(b.data + i * k * n, n, 1, k, n, options_), y + i * m * n,
                        n);
  }

 private:
  CompileOptions options_;
  bool prepacked_ = false;
  size_t k_ = 0, n_ = 0;
  PackedWeights packed_b_;
};

std::unique_ptr<Op> gemm_create(const loom_graph_t& g, const loom_node_t& n,
                                const CompileOptions& options) {
  return std::make_unique<GemmOp>(g, n, options);
}
std::unique_ptr<Op> matmul_create(const loom_graph_t& g, const loom_node_t& n,
                                  const CompileOptions& options) {
  return std::make_unique<MatMulOp>(g, n, options);
}

}  // namespace

LOOM_NEON_OP("Gemm", 7, gemm_supports, gemm_create);
LOOM_NEON_OP("MatMul", 1, matmul_supports, matmul_create);

}  // namespace loom::neon
