// CausalConvWithState (opset 27): a causal depthwise 1-D convolution that carries its left
// context from one call to the next (Mamba / Gated DeltaNet decode).
//
//   input [B, C, L], weight [C, 1, K], bias [C] (optional), past_state [B, C, K-1] (optional,
//   zeros when omitted). Each channel's row is left-padded with its past_state to L + K - 1
//   positions and convolved with its own K taps (valid padding, stride 1):
//     output[b, c, t] = bias[c] + sum_j weight[c, 0, j] * padded[b, c, t + j]
//   present_state is the last K - 1 positions of the padded row (for L < K - 1 part of it is
//   still past_state). activation "silu" (alias "swish") applies x * sigmoid(x).
//
// The arithmetic follows the ONNX reference: the taps are summed in the compute type (float for
// float16/bfloat16, as numpy's float16 matmul accumulates) and rounded to the storage type, the
// bias is then added in the storage type, and SiLU is evaluated in float on that rounded value
// and rounded again.
#include <cmath>
#include <string>
#include <vector>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

struct Shape {
  size_t batch = 0, channels = 0, length = 0, taps = 0;
};

// Checks every input against input 0 and the others; returns the extents.
Shape shape_of(const KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(1);
  const loom_tensor_t* bias = ctx.input(2);
  const loom_tensor_t* past = ctx.input(3);
  nn::require_same_dtype(ctx, {1, 2, 3});
  if (x.rank != 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input " + sdk::shape_text(sdk::shape_of(x)) +
                                          " must be 3-D [batch, channels, length]");
  const int64_t B = x.dims[0], C = x.dims[1], L = x.dims[2];
  if (w.rank != 3 || w.dims[0] != C || w.dims[1] != 1 || w.dims[2] < 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": weight " + sdk::shape_text(sdk::shape_of(w)) + " must be [" +
             std::to_string(C) + ", 1, k] with k >= 1 (the input has " + std::to_string(C) +
             " channels)");
  const int64_t K = w.dims[2];
  if (bias && (bias->rank != 1 || bias->dims[0] != C))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": bias " +
                                          sdk::shape_text(sdk::shape_of(*bias)) + " must be [" +
                                          std::to_string(C) + "]");
  if (past &&
      (past->rank != 3 || past->dims[0] != B || past->dims[1] != C || past->dims[2] != K - 1))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": past_state " + sdk::shape_text(sdk::shape_of(*past)) + " must be [" +
             std::to_string(B) + ", " + std::to_string(C) + ", " + std::to_string(K - 1) +
             "] (batch, channels, kernel size - 1)");
  return Shape{static_cast<size_t>(B), static_cast<size_t>(C), static_cast<size_t>(L),
               static_cast<size_t>(K)};
}

template <typename T>
void causal_conv(KernelContext& ctx, const Shape& s, bool silu) {
  using C = nn::compute_t<T>;
  const T* x = sdk::data_of<const T>(ctx.required_input(0));
  const T* w = sdk::data_of<const T>(ctx.required_input(1));
  const loom_tensor_t* bias_t = ctx.input(2);
  const loom_tensor_t* past_t = ctx.input(3);
  const T* bias = bias_t ? sdk::data_of<const T>(*bias_t) : nullptr;
  const T* past = past_t ? sdk::data_of<const T>(*past_t) : nullptr;

  const size_t carry = s.taps - 1;  // positions of state per row
  const int64_t out_dims[3] = {static_cast<int64_t>(s.batch), static_cast<int64_t>(s.channels),
                               static_cast<int64_t>(s.length)};
  const int64_t state_dims[3] = {static_cast<int64_t>(s.batch), static_cast<int64_t>(s.channels),
                                 static_cast<int64_t>(carry)};
  T* y = sdk::data_of<T>(ctx.allocate_output(0, ctx.required_input(0).dtype, out_dims));
  T* present =
      ctx.output_requested(1)
          ? sdk::data_of<T>(ctx.allocate_output(1, ctx.required_input(0).dtype, state_dims))
          : nullptr;
  // No rows: nothing to compute, and the row buffer below is sized by inputs that exist.
  if (s.batch == 0 || s.channels == 0) return;

  nn::parallel_range(ctx, s.batch * s.channels, 1, [&](size_t r0, size_t r1) {
    // One padded row in storage type; its size is bounded by the input row plus the weights.
    std::vector<T> padded(s.length + carry);
    for (size_t row = r0; row < r1; ++row) {
      const size_t c = row % s.channels;
      for (size_t j = 0; j < carry; ++j)
        padded[j] = past ? past[row * carry + j] : convert<T>(C(0));
      for (size_t t = 0; t < s.length; ++t) padded[carry + t] = x[row * s.length + t];
      const T* taps = w + c * s.taps;
      T* out = y + row * s.length;
      for (size_t t = 0; t < s.length; ++t) {
        C acc = 0;
        for (size_t j = 0; j < s.taps; ++j) acc += convert<C>(taps[j]) * convert<C>(padded[t + j]);
        // Rounded to T before the bias, then the sum rounded again: the reference's matmul in T
        // followed by `+ B` in T.
        T v = convert<T>(acc);
        if (bias) v = convert<T>(convert<C>(v) + convert<C>(bias[c]));
        if (silu) {
          const C z = convert<C>(v);
          v = convert<T>(z * (C(1) / (C(1) + std::exp(-z))));
        }
        out[t] = v;
      }
      if (present)
        for (size_t j = 0; j < carry; ++j) present[row * carry + j] = padded[s.length + j];
    }
  });
}

void causal_conv_kernel(KernelContext& ctx) {
  const std::string activation = ctx.attrs().get_string("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": activation '" + activation + "' is not 'none', 'silu' or 'swish'");
  const Shape s = shape_of(ctx);
  const bool silu = activation != "none";
  dispatch<kFloats>(ctx.required_input(0).dtype, ctx,
                    [&]<typename T>() { causal_conv<T>(ctx, s, silu); });
}

}  // namespace

LOOM_CPU_KERNEL("CausalConvWithState", 27, causal_conv_kernel, nullptr);

}  // namespace loom::cpu
