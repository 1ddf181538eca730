// The depthwise post-op: a 3x3 depthwise convolution that reads a 1x1 convolution (through the
// 1x1's activations) computed inside the 1x1's primitive (dnnl::post_ops::append_dw). In
// MobileNet-style inverted residual blocks (1x1 expand -> depthwise 3x3 -> 1x1 project) the
// expanded tensor, the largest of the block, then never makes a round trip through memory.
// oneDNN 2.6 has a JIT kernel for the pair only for some shapes (on AVX-512: the 1x1 source
// is narrow); for the others it runs the two primitives behind one ("ref_fused_convolution"),
// which gains nothing, so those pairs stay separate.
#include "builder.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;

namespace {

// The stride of depthwise Conv `n` when the post-op can express it, else 0: 2D, one group per
// channel, constant 3x3 weights, no dilation, equal strides 1 or 2, padding 1 on every side
// (oneDNN derives the right padding so that the output is ceil(input / stride), which is
// what ONNX's pads of 1 give for a 3x3 kernel).
int64_t depthwise_stride(const IrGraph& g, const IrNode& n) {
  if (n.op != "Conv" || n.absorbed || n.inputs.size() < 2 || n.outputs.empty() || n.outputs[0] < 0)
    return 0;
  const IrValue& x = g.value(n.inputs[0]);
  const IrValue& w = g.value(n.inputs[1]);
  if (x.dims.size() != 4 || w.dims.size() != 4 || !w.constant()) return 0;
  int64_t channels = x.dims[1];
  if (w.dims != std::vector<int64_t>{channels, 1, 3, 3}) return 0;
  int bias = g.in(n, 2);
  if (bias >= 0 && !g.value(bias).constant()) return 0;
  sdk::Attributes attrs(*n.view);
  if (attrs.get_int("group", 1) != channels) return 0;
  if (sdk::parse_auto_pad(attrs.get_string("auto_pad", "NOTSET")) != sdk::AutoPad::kNotSet)
    return 0;
  if (auto d = attrs.get_ints("dilations"))
    for (int64_t v : *d)
      if (v != 1) return 0;
  auto pads = attrs.get_ints("pads");
  if (!pads || pads->size() != 4) return 0;
  for (int64_t p : *pads)
    if (p != 1) return 0;
  auto strides = attrs.get_ints("strides");
  int64_t s = strides && strides->size() == 2 ? (*strides)[0] : 1;
  if (strides && strides->size() == 2 && (*strides)[1] != s) return 0;
  return s == 1 || s == 2 ? s : 0;
}

// True for the channel-blocked layout nChw16c, the one oneDNN 2.6's fused kernel is right in.
bool is_blocked_by_16(const dnnl::memory::desc& md) {
  const dnnl::memory::dims& d = md.dims();
  return d.size() == 4 &&
         md == dnnl::memory::desc(d, md.data_type(), dnnl::memory::format_tag::nChw16c);
}

}  // namespace

std::optional<DepthwiseFusion> fuse_depthwise(
    Builder& b, const std::vector<FusionCandidate>& cands, size_t fused, int conv_out,
    const std::function<dnnl::convolution_forward::primitive_desc(const dnnl::primitive_attr&)>&
        make) {
  IrGraph& g = b.ir();
  if (!b.options().dw_fusion || b.compute_type() != dt::f32) return std::nullopt;
  for (size_t i = 0; i < fused; ++i)
    if (cands[i].kind != FusionCandidate::Kind::kEltwise) return std::nullopt;
  int chain_end = fused ? cands[fused - 1].out_value : conv_out;
  int node = g.sole_consumer(chain_end);
  if (node < 0) return std::nullopt;
  const IrNode& n = g.nodes[node];
  if (n.inputs[0] != chain_end) return std::nullopt;
  int64_t stride = depthwise_stride(g, n);
  if (stride == 0) return std::nullopt;

  DepthwiseFusion f;
  f.node = node;
  f.out_value = n.outputs[0];
  f.channels = g.value(chain_end).dims[1];
  f.post = b.fusion_candidates(node, f.out_value);
  size_t eltwise = 0;
  while (eltwise < f.post.size() && f.post[eltwise].kind == FusionCandidate::Kind::kEltwise)
    ++eltwise;
  const std::vector<int64_t>& out_dims = g.value(f.out_value).dims;
  // oneDNN chooses the layouts: its JIT pair computes wrong results with an nhwc source and
  // destination in 2.6 (checked against the two separate primitives), not in nChw16c.
  bool found = false;
  for (size_t count = eltwise + 1; count-- > 0 && !found;) {
    dnnl::post_ops ops;
    b.append_post_ops(cands, fused, ops, 4);
    ops.append_dw(dt::f32, dt::f32, dt::f32, 3, stride, 1, 0, {});
    for (size_t i = 0; i < count; ++i) append_eltwise_post_ops(f.post[i], ops);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    try {
      dnnl::convolution_forward::primitive_desc pd = make(attr);
      dnnl::memory::dims dims = pd.dst_desc().dims();
      // A reference (the two primitives behind one) stays one with fewer post-ops.
      if (is_reference(pd) || dims != dnnl::memory::dims(out_dims.begin(), out_dims.end()) ||
          !is_blocked_by_16(pd.src_desc()) || !is_blocked_by_16(pd.dst_desc()))
        return std::nullopt;
      f.pd = pd;
      f.post_count = count;
      found = true;
    } catch (const dnnl::error&) {
      // Not with these post-ops: try fewer.
    }
  }
  if (!found) return std::nullopt;
  f.weights = n.folded_weights.empty() ? constant_floats(g, n.inputs[1]) : n.folded_weights;
  int bias = g.in(n, 2);
  if (!n.folded_bias.empty())
    f.bias = n.folded_bias;
  else if (bias >= 0)
    f.bias = constant_floats(g, bias);
  else
    f.bias.assign(static_cast<size_t>(f.channels), 0.f);
  return f;
}

}  // namespace loom::onednn
