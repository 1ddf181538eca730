// FlexAttention (ai.onnx.preview 1): scaled dot-product attention over 4-D Q [B, Hq, L, E],
// K [B, Hkv, S, E], V [B, Hkv, S, Ev] with two optional subgraphs, run on this device:
//   scores = (Q * sqrt(scale)) (K * sqrt(scale))^T      in the inputs' type
//   scores = score_mod(scores)                          [B, Hq, L, S], softmax precision
//   probs  = softmax(scores, last axis); probs = prob_mod(probs)
//   Y      = probs @ V                                  then cast to V's type
// Query head h reads K/V head h / (Hq / Hkv). The softmax precision is softmax_precision, else
// float32 (float64 for double inputs); as in the ONNX reference, Q and K are scaled in their own
// type and the scores rounded to it before the cast, so 16-bit inputs round where it does.
// Arithmetic runs in double and stores at those roundings; the subgraphs see and return
// tensors of the softmax precision, whose shape the kernel checks.
#include <cmath>
#include <limits>

#include "data_movement.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

// `v` rounded to `type` (a float type), back in double.
double round_to(loom_dtype_t type, double v) {
  return dispatch<kFloats>(type, "FlexAttention",
                           [&]<typename T>() { return convert<double>(convert<T>(v)); });
}

// Runs a modifier subgraph on `values` ([B, Hq, L, S] in `type`) and returns its output,
// which must have the same shape; nullptr graph: unchanged.
std::vector<double> modify(KernelContext& ctx, const char* name, loom_dtype_t type,
                           std::span<const int64_t> dims, std::vector<double> values) {
  const loom_graph_t* graph = ctx.attrs().get_graph(name);
  if (!graph) return values;
  Tensor in = make_tensor(type, dims);
  misc::write_as<double>(in.view, values, ctx.where());
  const Tensor* inputs[] = {&in};
  std::vector<Tensor> outs = ctx.run_subgraph(*graph, inputs);
  if (outs.size() != 1)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": " + name + " produced " +
                                       std::to_string(outs.size()) + " outputs, expected 1");
  const loom_tensor_t& out = outs[0].view;
  if (misc::dims_of(out) != std::vector<int64_t>(dims.begin(), dims.end()))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": " + name + " returned " +
                                       shape_string(misc::dims_of(out)) + ", expected " +
                                       shape_string(dims) + " (its input's shape)");
  std::vector<double> result = misc::read_as<double>(out, ctx.where() + " " + name);
  for (double& v : result) v = round_to(type, v);
  return result;
}

void flex_attention(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& q = ctx.required_input(0);
  const loom_tensor_t& k = ctx.required_input(1);
  const loom_tensor_t& v = ctx.required_input(2);
  dispatch<kFloats>(q.dtype, where, []<typename T>() {});
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": Q, K and V must share a type, got " +
                                       sdk::dtype_name(q.dtype) + ", " + sdk::dtype_name(k.dtype) +
                                       ", " + sdk::dtype_name(v.dtype));
  if (q.rank != 4 || k.rank != 4 || v.rank != 4)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": Q, K and V must be 4-D, got " + shape_string(misc::dims_of(q)) + ", " +
             shape_string(misc::dims_of(k)) + ", " + shape_string(misc::dims_of(v)));
  const int64_t B = q.dims[0], Hq = q.dims[1], L = q.dims[2], E = q.dims[3];
  const int64_t Hkv = k.dims[1], S = k.dims[2], Ev = v.dims[3];
  if (k.dims[0] != B || v.dims[0] != B || v.dims[1] != Hkv || v.dims[2] != S || k.dims[3] != E ||
      Hkv <= 0 || Hq % Hkv != 0)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": K " + shape_string(misc::dims_of(k)) + " and V " +
             shape_string(misc::dims_of(v)) + " do not fit Q " + shape_string(misc::dims_of(q)) +
             " (same batch, K and V the same heads and length, K Q's head size, Q's heads a "
             "multiple of K's)");
  loom_dtype_t precision = q.dtype == LOOM_DTYPE_FLOAT64 ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
  if (ctx.attrs().has("softmax_precision")) {
    precision = static_cast<loom_dtype_t>(ctx.attrs().get_int("softmax_precision", 0));
    if (precision != LOOM_DTYPE_FLOAT32 && precision != LOOM_DTYPE_FLOAT64 &&
        precision != LOOM_DTYPE_FLOAT16 && precision != LOOM_DTYPE_BFLOAT16)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": softmax_precision " +
                                         std::to_string(static_cast<int>(precision)) +
                                         " is not a floating-point type");
  }
  // sqrt(scale) in float32, then in the inputs' type (the reference's order).
  const double scale = ctx.attrs().has("scale")
                           ? static_cast<double>(ctx.attrs().get_float("scale", 1.f))
                           : 1.0 / std::sqrt(static_cast<double>(E));
  const double root = round_to(q.dtype, std::sqrt(static_cast<float>(scale)));

  const std::vector<int64_t> out_dims{B, Hq, L, Ev};
  loom_tensor_t& y = ctx.allocate_output(0, v.dtype, out_dims);
  if (sdk::element_count(y) == 0) return;
  std::vector<double> qs = misc::read_as<double>(q, where + " Q");
  std::vector<double> ks = misc::read_as<double>(k, where + " K");
  // V in the softmax precision, as the reference casts it before probs @ V.
  std::vector<double> vs = misc::read_as<double>(v, where + " V");
  for (double& x : vs) x = round_to(precision, x);
  for (double& x : qs) x = round_to(q.dtype, x * root);
  for (double& x : ks) x = round_to(q.dtype, x * root);

  const std::vector<int64_t> score_dims{B, Hq, L, S};
  std::vector<double> scores(static_cast<size_t>(B * Hq * L * S));
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const double* qh = &qs[static_cast<size_t>(((b * Hq + h) * L) * E)];
      const double* kh = &ks[static_cast<size_t>(((b * Hkv + h / group) * S) * E)];
      double* sh = &scores[static_cast<size_t>(((b * Hq + h) * L) * S)];
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < E; ++e) acc += qh[i * E + e] * kh[j * E + e];
          sh[i * S + j] = round_to(precision, round_to(q.dtype, acc));
        }
    }
  scores = modify(ctx, "score_mod", precision, score_dims, std::move(scores));
  // Softmax over the last axis; a row of -inf everywhere gives NaN, as the reference does.
  for (int64_t r = 0; r < B * Hq * L; ++r) {
    double* row = &scores[static_cast<size_t>(r * S)];
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < S; ++j) top = std::max(top, row[j]);
    double sum = 0;
    for (int64_t j = 0; j < S; ++j) sum += row[j] = round_to(precision, std::exp(row[j] - top));
    for (int64_t j = 0; j < S; ++j) row[j] = round_to(precision, row[j] / sum);
  }
  scores = modify(ctx, "prob_mod", precision, score_dims, std::move(scores));
  std::vector<double> out(static_cast<size_t>(sdk::element_count(y)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const double* ph = &scores[static_cast<size_t>(((b * Hq + h) * L) * S)];
      const double* vh = &vs[static_cast<size_t>(((b * Hkv + h / group) * S) * Ev)];
      double* yh = &out[static_cast<size_t>(((b * Hq + h) * L) * Ev)];
      for (int64_t i = 0; i < L; ++i)
        for (int64_t d = 0; d < Ev; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += ph[i * S + j] * vh[j * Ev + d];
          yh[i * Ev + d] = round_to(precision, acc);
        }
    }
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL_DOMAIN("ai.onnx.preview", "FlexAttention", 1, flex_attention, nullptr);

}  // namespace loom::cpu
