// ConvInteger (10) and QLinearConv (10): N-D grouped convolutions of 8-bit tensors with exact
// integer accumulation of (x - x_zero_point)·(w - w_zero_point[m]); padding contributes zero
// (the input is padded with its zero point). QLinearConv adds the int32 bias and requantizes:
//   y = saturate(round_half_even((acc + B[m]) * x_scale * w_scale[m] / y_scale) + y_zero_point)
#include <loom/op_semantics.hpp>

#include "quantize_common.hpp"

namespace loom::cpu {
namespace {

struct ConvPlan {
  int64_t N = 0, C = 0, M = 0, group = 1;
  std::vector<int64_t> in, kernel, out;  // spatial dims
  // For output position o and kernel position k: flat spatial input index, or -1 in padding.
  std::vector<int64_t> gather;
  int64_t in_size = 1, kernel_size = 1, out_size = 1;
};

std::vector<int64_t> ints_attr(const KernelContext& ctx, const char* name, size_t n,
                               int64_t fallback) {
  if (auto v = ctx.attrs().get_ints(name)) {
    if (v->size() != n)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": attribute '" + name + "' must have " + std::to_string(n) + " values");
    return std::vector<int64_t>(v->begin(), v->end());
  }
  return std::vector<int64_t>(n, fallback);
}

ConvPlan plan_conv(const KernelContext& ctx, const loom_tensor_t& x, const loom_tensor_t& w) {
  const std::string where = ctx.where();
  if (x.rank < 3 || w.rank != x.rank)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": x and w must have the same rank (>= 3)");
  ConvPlan p;
  const size_t S = static_cast<size_t>(x.rank - 2);
  p.N = x.dims[0];
  p.C = x.dims[1];
  p.M = w.dims[0];
  p.group = ctx.attrs().get_int("group", 1);
  if (p.group <= 0 || p.C % p.group != 0 || p.M % p.group != 0 || w.dims[1] * p.group != p.C)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": channels of x (" + std::to_string(p.C) +
                                       ") and w do not match group " + std::to_string(p.group));
  p.in.assign(x.dims + 2, x.dims + x.rank);
  p.kernel.assign(w.dims + 2, w.dims + w.rank);
  if (auto ks = ctx.attrs().get_ints("kernel_shape"))
    if (std::vector<int64_t>(ks->begin(), ks->end()) != p.kernel)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": kernel_shape does not match w");
  const auto strides = ints_attr(ctx, "strides", S, 1);
  const auto dilations = ints_attr(ctx, "dilations", S, 1);
  auto pads = ints_attr(ctx, "pads", 2 * S, 0);
  const sdk::AutoPad auto_pad = sdk::auto_pad_of(ctx.attrs(), where);
  p.out.resize(S);
  for (size_t i = 0; i < S; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || pads[i] < 0 || pads[i + S] < 0)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": strides and dilations must be positive, pads >= 0");
    const int64_t span = dilations[i] * (p.kernel[i] - 1) + 1;
    if (auto_pad == sdk::AutoPad::kSameUpper || auto_pad == sdk::AutoPad::kSameLower) {
      p.out[i] = (p.in[i] + strides[i] - 1) / strides[i];
      const sdk::AxisPads a =
          sdk::resolve_pads(auto_pad, p.in[i], p.out[i], p.kernel[i], strides[i], dilations[i], {});
      pads[i] = a.begin;
      pads[i + S] = a.end;
    } else {
      if (auto_pad == sdk::AutoPad::kValid) pads[i] = pads[i + S] = 0;
      const int64_t padded = p.in[i] + pads[i] + pads[i + S];
      if (padded < span)
        fail(LOOM_ERROR_INVALID_MODEL, where + ": the kernel is larger than the padded input");
      p.out[i] = (padded - span) / strides[i] + 1;
    }
    p.in_size *= p.in[i];
    p.kernel_size *= p.kernel[i];
    p.out_size *= p.out[i];
  }
  misc::check_output_size(p.out_size * p.kernel_size, where);
  p.gather.resize(static_cast<size_t>(p.out_size * p.kernel_size));
  std::vector<int64_t> oc(S), kc(S);
  for (int64_t o = 0; o < p.out_size; ++o) {
    for (int64_t rem = o, i = static_cast<int64_t>(S) - 1; i >= 0; --i) {
      oc[i] = rem % p.out[i];
      rem /= p.out[i];
    }
    for (int64_t k = 0; k < p.kernel_size; ++k) {
      for (int64_t rem = k, i = static_cast<int64_t>(S) - 1; i >= 0; --i) {
        kc[i] = rem % p.kernel[i];
        rem /= p.kernel[i];
      }
      int64_t flat = 0;
      for (size_t i = 0; i < S && flat >= 0; ++i) {
        const int64_t c = oc[i] * strides[i] - pads[i] + kc[i] * dilations[i];
        flat = (c < 0 || c >= p.in[i]) ? -1 : flat * p.in[i] + c;
      }
      p.gather[o * p.kernel_size + k] = flat;
    }
  }
  return p;
}

// Integer accumulators [N, M, out...] of the convolution.
std::vector<int32_t> integer_conv(const KernelContext& ctx, const ConvPlan& p,
                                  const loom_tensor_t& x, const loom_tensor_t& w, int32_t x_zp,
                                  const std::vector<int32_t>& w_zp) {
  const std::string where = ctx.where();
  const std::vector<int64_t> xv = misc::read_ints(x, where + " x");
  const std::vector<int64_t> wv = misc::read_ints(w, where + " w");
  const int64_t Cg = p.C / p.group, Mg = p.M / p.group;
  std::vector<int32_t> out(static_cast<size_t>(p.N * p.M * p.out_size));
  // One work item per (image, output channel).
  ctx.parallel_for(static_cast<size_t>(p.N * p.M), 1, [&](size_t begin, size_t end) {
    for (size_t item = begin; item < end; ++item) {
      const int64_t n = static_cast<int64_t>(item) / p.M, m = static_cast<int64_t>(item) % p.M;
      const int64_t g = m / Mg;
      const int64_t wzp = w_zp.size() == 1 ? w_zp[0] : w_zp[m];
      for (int64_t o = 0; o < p.out_size; ++o) {
        int64_t acc = 0;
        const int64_t* gather = p.gather.data() + o * p.kernel_size;
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t* xc = xv.data() + (n * p.C + g * Cg + c) * p.in_size;
          const int64_t* wc = wv.data() + (m * Cg + c) * p.kernel_size;
          for (int64_t k = 0; k < p.kernel_size; ++k)
            if (gather[k] >= 0) acc += (xc[gather[k]] - x_zp) * (wc[k] - wzp);
        }
        out[(n * p.M + m) * p.out_size + o] = static_cast<int32_t>(static_cast<uint32_t>(acc));
      }
    }
  });
  return out;
}

std::vector<int64_t> output_dims(const ConvPlan& p) {
  std::vector<int64_t> dims{p.N, p.M};
  dims.insert(dims.end(), p.out.begin(), p.out.end());
  return dims;
}

// Per-output-channel parameter: one value, or M values.
template <typename V>
std::vector<V> per_channel(const loom_tensor_t* t, V fallback, int64_t M, const std::string& where,
                           const char* name) {
  if (!t) return {fallback};
  std::vector<V> v = misc::read_as<V>(*t, where + " " + name);
  if (v.size() != 1 && (t->rank != 1 || static_cast<int64_t>(v.size()) != M))
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name +
                                       " must be a scalar or hold one value per "
                                       "output channel (" +
                                       std::to_string(M) + ")");
  return v;
}

void conv_integer(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(1);
  quant::require_quantized_type(x.dtype, where, "x");
  quant::require_quantized_type(w.dtype, where, "w");
  const ConvPlan p = plan_conv(ctx, x, w);
  const int32_t x_zp = quant::scalar_zero_point(ctx.input(2), where, "x_zero_point");
  const auto w_zp = per_channel<int32_t>(ctx.input(3), 0, p.M, where, "w_zero_point");
  const auto acc = integer_conv(ctx, p, x, w, x_zp, w_zp);
  loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_INT32, output_dims(p));
  std::copy(acc.begin(), acc.end(), sdk::data_of<int32_t>(y));
}

void qlinear_conv(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(3);
  const loom_tensor_t& y_zp_t = ctx.required_input(7);
  quant::require_quantized_type(x.dtype, where, "x");
  quant::require_quantized_type(w.dtype, where, "w");
  quant::require_quantized_type(y_zp_t.dtype, where, "y_zero_point");
  const ConvPlan p = plan_conv(ctx, x, w);
  const float x_scale =
      static_cast<float>(misc::read_scalar_float(ctx.required_input(1), where + " x_scale"));
  const int32_t x_zp = quant::scalar_zero_point(&ctx.required_input(2), where, "x_zero_point");
  const auto w_scale = per_channel<float>(&ctx.required_input(4), 0.f, p.M, where, "w_scale");
  const auto w_zp = per_channel<int32_t>(&ctx.required_input(5), 0, p.M, where, "w_zero_point");
  const float y_scale =
      static_cast<float>(misc::read_scalar_float(ctx.required_input(6), where + " y_scale"));
  const int32_t y_zp = quant::scalar_zero_point(&y_zp_t, where, "y_zero_point");
  std::vector<int64_t> bias(static_cast<size_t>(p.M), 0);
  if (const loom_tensor_t* b = ctx.input(8)) {
    if (b->dtype != LOOM_DTYPE_INT32 || misc::count_of(*b) != static_cast<size_t>(p.M))
      fail(LOOM_ERROR_INVALID_MODEL,
           where + ": B must be an int32 tensor of M = " + std::to_string(p.M) + " elements");
    bias = misc::read_ints(*b, where + " B");
  }
  const auto acc = integer_conv(ctx, p, x, w, x_zp, w_zp);
  loom_tensor_t& y = ctx.allocate_output(0, y_zp_t.dtype, output_dims(p));
  dispatch<kSignedInts | kUnsignedInts>(y_zp_t.dtype, where, [&]<typename Q>() {
    if constexpr (sizeof(Q) == 1) {
      Q* out = sdk::data_of<Q>(y);
      for (int64_t n = 0; n < p.N; ++n)
        for (int64_t m = 0; m < p.M; ++m) {
          const float multiplier =
              x_scale * (w_scale.size() == 1 ? w_scale[0] : w_scale[m]) / y_scale;
          for (int64_t o = 0; o < p.out_size; ++o) {
            const size_t i = static_cast<size_t>((n * p.M + m) * p.out_size + o);
            const int32_t total = static_cast<int32_t>(static_cast<uint32_t>(acc[i] + bias[m]));
            out[i] = quant::saturate_round<Q>(
                static_cast<double>(std::nearbyint(static_cast<float>(total) * multiplier)) + y_zp);
          }
        }
    }
  });
}

}  // namespace

LOOM_CPU_KERNEL("ConvInteger", 10, conv_integer, nullptr);
LOOM_CPU_KERNEL("QLinearConv", 10, qlinear_conv, nullptr);

}  // namespace loom::cpu
