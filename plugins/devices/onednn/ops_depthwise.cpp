// A 3x3 depthwise Conv through the device's own kernel (depthwise3x3.hpp) instead of oneDNN's
// jit_dw, where the layer's layouts are already nChw16c (MobileNet-style subgraphs, see
// Builder::blocked_convolutions; channels padded to a multiple of 16 where the clamp keeps the
// padding 0) and what follows it is at most one clamp (Relu, Relu6/Clip).
// Anything else (other activations, a residual sum, bf16, no AVX-512) keeps oneDNN's
// primitive.
#include <limits>

#include "builder.hpp"
#include "depthwise3x3.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

struct Clamp {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

// The clamp an activation post-op computes, or nullopt for any other function.
std::optional<Clamp> clamp_of(const FusionCandidate& c) {
  if (c.kind != FusionCandidate::Kind::kEltwise || c.then) return std::nullopt;
  Clamp k;
  switch (c.alg) {
    case dnnl::algorithm::eltwise_relu:
      if (c.alpha != 0.f) return std::nullopt;  // leaky
      k.lo = 0.f;
      return k;
    case dnnl::algorithm::eltwise_clip:
    case dnnl::algorithm::eltwise_clip_v2:
      k.lo = c.alpha;
      k.hi = c.beta;
      return k;
    case dnnl::algorithm::eltwise_bounded_relu:
      k.lo = 0.f;
      k.hi = c.alpha;
      return k;
    default:
      return std::nullopt;
  }
}

bool blocked_by_16(const dnnl::memory::desc& md, const std::vector<int64_t>& dims) {
  return md == dnnl::memory::desc(dims, dt::f32, tag::nChw16c);
}

}  // namespace

bool emit_depthwise3x3(Builder& b, int node, const dnnl::convolution_forward::primitive_desc& pd,
                       const std::vector<FusionCandidate>& cands, size_t fused,
                       const ConvGeometry& geo) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  if (!b.options().loom_depthwise || b.compute_type() != dt::f32 ||
      !depthwise3x3_kernel_runs_here(Depthwise3x3Kernel::kAvx512))
    return false;
  int x = n.inputs[0], w = n.inputs[1], bias = g.in(n, 2), y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const std::vector<int64_t>& wd = g.value(w).dims;
  const std::vector<int64_t>& yd = g.value(y).dims;
  if (xd.size() != 4 || yd.size() != 4) return false;
  const int64_t channels = xd[1];
  if (channels < kDepthwiseBlock || wd != std::vector<int64_t>{channels, 1, 3, 3} ||
      yd[1] != channels || yd[0] != xd[0])
    return false;
  if (geo.group != channels) return false;
  const int64_t stride = geo.strides[0];
  if ((stride != 1 && stride != 2) || geo.strides[1] != stride ||
      geo.dilations != dnnl::memory::dims{0, 0})
    return false;
  for (size_t i = 0; i < 2; ++i) {
    if (geo.pad_l[i] > 1 || geo.pad_r[i] > 1) return false;
    // The kernel reads at most one column/row past the input, the one padding of 1 adds.
    if (yd[2 + i] < 1 || (yd[2 + i] - 1) * stride - geo.pad_l[i] + 2 > xd[2 + i] + geo.pad_r[i])
      return false;
  }
  if (!blocked_by_16(pd.src_desc(), xd) || !blocked_by_16(pd.dst_desc(), yd)) return false;
  if (fused > 1) return false;
  Clamp clamp;
  if (fused == 1) {
    auto k = clamp_of(cands[0]);
    if (!k) return false;
    clamp = *k;
  }
  // The channels that pad the last block (zero taps, zero bias) must come out 0, as oneDNN
  // keeps them: only a clamp that keeps 0.
  const int64_t blocks = (channels + kDepthwiseBlock - 1) / kDepthwiseBlock;
  if (channels % kDepthwiseBlock != 0 && !(clamp.lo <= 0.f && 0.f <= clamp.hi)) return false;

  int src = b.as(x, pd.src_desc());
  std::vector<float> weights = n.folded_weights.empty() ? constant_floats(g, w) : n.folded_weights;
  int packed = b.constant_slot(plain_md({blocks * kDepthwiseBlock * 9}, dt::f32), [&](void* block) {
    pack_depthwise3x3_weights(weights.data(), channels, static_cast<float*>(block));
  });
  std::vector<float> bias_values = !n.folded_bias.empty() ? n.folded_bias
                                   : bias >= 0            ? constant_floats(g, bias)
                                                          : std::vector<float>(channels, 0.f);
  bias_values.resize(blocks * kDepthwiseBlock, 0.f);
  const int64_t padded = blocks * kDepthwiseBlock;
  int bias_slot = b.constant_slot(bias_values, {padded}, plain_md({padded}, dt::f32));
  int dst = b.define(y, pd.dst_desc());
  b.absorb(cands, fused, dst);

  Depthwise3x3Shape shape;
  shape.batch = xd[0];
  shape.blocks = blocks;
  shape.height = xd[2];
  shape.width = xd[3];
  shape.out_height = yd[2];
  shape.out_width = yd[3];
  shape.stride = static_cast<int>(stride);
  shape.pad_top = static_cast<int>(geo.pad_l[0]);
  shape.pad_left = static_cast<int>(geo.pad_l[1]);
  b.add_kernel_step(
      [shape, clamp](const std::unordered_map<int, dnnl::memory>& mem) {
        auto data = [&](int arg) { return static_cast<float*>(mem.at(arg).get_data_handle()); };
        depthwise3x3(shape, data(DNNL_ARG_SRC), data(DNNL_ARG_WEIGHTS), data(DNNL_ARG_BIAS),
                     clamp.lo, clamp.hi, data(DNNL_ARG_DST));
      },
      {{DNNL_ARG_SRC, src},
       {DNNL_ARG_WEIGHTS, packed},
       {DNNL_ARG_BIAS, bias_slot},
       {DNNL_ARG_DST, dst}},
      "Conv " + std::string(n.view->name) + " [loom depthwise3x3, " + std::to_string(fused) +
          " post-ops]",
      "loom depthwise3x3");
  return true;
}

}  // namespace loom::onednn
