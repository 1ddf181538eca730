// NegativeLogLikelihoodLoss (12, 13) and SoftmaxCrossEntropyLoss (12, 13): inference-capable
// losses over class dimension 1 of [N, C, d1..dk] inputs with [N, d1..dk] integer targets,
// optional per-class weights, ignore_index and reduction none / sum / mean (weighted mean
// divides by the sum of the applied weights). Computed in double.
#include <cmath>
#include <optional>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

struct LossResult {
  std::vector<int64_t> dims;  // dims of the output
  std::vector<double> values;
};

// log_probs: [N, C, D] flattened (D = d1*...*dk). Returns the reduced loss.
LossResult nll(const KernelContext& ctx, const std::vector<double>& log_probs,
               const loom_tensor_t& input, const loom_tensor_t& target,
               const loom_tensor_t* weight) {
  const std::string where = ctx.where();
  if (input.rank < 2) fail(LOOM_ERROR_INVALID_MODEL, where + ": input must be [N, C, d1..dk]");
  const int64_t N = input.dims[0], C = input.dims[1];
  int64_t D = 1;
  std::vector<int64_t> target_dims{N};
  for (int32_t i = 2; i < input.rank; ++i) {
    D *= input.dims[i];
    target_dims.push_back(input.dims[i]);
  }
  if (misc::dims_of(target) != target_dims)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": target must have the shape of input without dim 1");
  const std::vector<int64_t> labels = misc::read_ints(target, where + " target");
  std::vector<double> w;
  if (weight) {
    if (weight->rank != 1 || weight->dims[0] != C)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": weight must be a 1-D tensor of C elements");
    w = misc::read_as<double>(*weight, where + " weight");
  }
  std::optional<int64_t> ignore;
  if (ctx.attrs().has("ignore_index")) ignore = ctx.attrs().get_int("ignore_index", 0);
  const std::string reduction = ctx.attrs().get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    fail(LOOM_ERROR_INVALID_MODEL, where + ": reduction must be none, sum or mean");

  std::vector<double> loss(labels.size());
  double weight_sum = 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t c = labels[n * D + d];
      if (ignore && c == *ignore) continue;
      if (c < 0 || c >= C)
        fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": target value " + std::to_string(c) +
                                              " is outside [0, " + std::to_string(C) + ")");
      const double wc = w.empty() ? 1.0 : w[c];
      loss[n * D + d] = -log_probs[(n * C + c) * D + d] * wc;
      weight_sum += wc;
    }
  if (reduction == "none") return {target_dims, loss};
  double sum = 0.0;
  for (double v : loss) sum += v;
  return {{}, {reduction == "sum" ? sum : sum / weight_sum}};
}

void nll_loss(KernelContext& ctx) {
  const loom_tensor_t& input = ctx.required_input(0);
  dispatch<kFloats>(input.dtype, ctx, []<typename T>() {});
  const auto log_probs = misc::read_as<double>(input, ctx.where() + " input");
  LossResult r = nll(ctx, log_probs, input, ctx.required_input(1), ctx.input(2));
  misc::write_as<double>(ctx.allocate_output(0, input.dtype, r.dims), r.values, ctx.where());
}

void softmax_cross_entropy(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& scores = ctx.required_input(0);
  dispatch<kFloats>(scores.dtype, where, []<typename T>() {});
  if (scores.rank < 2) fail(LOOM_ERROR_INVALID_MODEL, where + ": scores must be [N, C, d1..dk]");
  const int64_t N = scores.dims[0], C = scores.dims[1];
  const int64_t D = sdk::element_count(scores) / std::max<int64_t>(1, N * C);
  std::vector<double> x = misc::read_as<double>(scores, where + " scores");
  // log_softmax over dim 1, in place.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      double max = -INFINITY;
      for (int64_t c = 0; c < C; ++c) max = std::max(max, x[(n * C + c) * D + d]);
      double sum = 0.0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(x[(n * C + c) * D + d] - max);
      const double log_sum = std::log(sum) + max;
      for (int64_t c = 0; c < C; ++c) x[(n * C + c) * D + d] -= log_sum;
    }
  LossResult r = nll(ctx, x, scores, ctx.required_input(1), ctx.input(2));
  misc::write_as<double>(ctx.allocate_output(0, scores.dtype, r.dims), r.values, where);
  if (ctx.output_requested(1))
    misc::write_as<double>(ctx.allocate_output(1, scores.dtype, misc::dims_of(scores)), x, where);
}

}  // namespace

LOOM_CPU_KERNEL("NegativeLogLikelihoodLoss", 12, nll_loss, nullptr);
LOOM_CPU_KERNEL("NegativeLogLikelihoodLoss", 13, nll_loss, nullptr);
LOOM_CPU_KERNEL("SoftmaxCrossEntropyLoss", 12, softmax_cross_entropy, nullptr);
LOOM_CPU_KERNEL("SoftmaxCrossEntropyLoss", 13, softmax_cross_entropy, nullptr);

}  // namespace loom::cpu
