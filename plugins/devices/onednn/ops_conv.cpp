// Conv and ConvTranspose (1D/2D/3D, grouped, depthwise, dilated, asymmetric pads) through
// oneDNN convolution/deconvolution primitives. Source, weights and destination use
// format_tag::any so oneDNN picks its blocked layouts; weights (BatchNormalization folded in by
// rewrite_patterns) are reordered once here. Following activations, a bias-like Add and the
// residual Add become post-ops; the residual Add writes into the residual's buffer (sum).
#include <chrono>
#include <cstring>
#include <optional>

#include "builder.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

ConvGeometry conv_geometry(const IrNode& n, const std::vector<int64_t>& x,
                           const std::vector<int64_t>& kernel, const std::vector<int64_t>& y,
                           bool transposed) {
  sdk::Attributes attrs(*n.view);
  size_t sr = x.size() - 2;
  ConvGeometry geo;
  geo.group = attrs.get_int("group", 1);
  auto strides = attrs.get_ints("strides");
  auto dilations = attrs.get_ints("dilations");
  auto pads = attrs.get_ints("pads");
  sdk::AutoPad auto_pad = sdk::auto_pad_of(attrs, n.op);
  // ConvTranspose with SAME is refused (why_unsupported): its pads are not a forward window's.
  if (transposed && auto_pad != sdk::AutoPad::kValid) auto_pad = sdk::AutoPad::kNotSet;
  for (size_t i = 0; i < sr; ++i) {
    int64_t s = strides && strides->size() == sr ? (*strides)[i] : 1;
    int64_t d = dilations && dilations->size() == sr ? (*dilations)[i] : 1;
    int64_t pl = pads && pads->size() == 2 * sr ? (*pads)[i] : 0;
    int64_t pr = pads && pads->size() == 2 * sr ? (*pads)[sr + i] : 0;
    const sdk::AxisPads p =
        sdk::resolve_pads(auto_pad, x[2 + i], y[2 + i], kernel[i], s, d, {pl, pr});
    pl = p.begin;
    pr = p.end;
    if (transposed) {
      // The output extent (with output_padding) fixes the right padding.
      pr = (x[2 + i] - 1) * s + (kernel[i] - 1) * d + 1 - pl - y[2 + i];
    }
    if (pl < 0 || pr < 0)
      sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: " + n.op + " needs a negative padding");
    geo.strides.push_back(s);
    geo.dilations.push_back(d - 1);
    geo.pad_l.push_back(pl);
    geo.pad_r.push_back(pr);
  }
  return geo;
}

// True when a blocked 2D convolution should use nChw8c rather than nChw16c. nChw16c pads the
// channels to a multiple of 16, so a 24-channel layer (MobileNetV2's 56x56 stage) computes and
// moves a third more than it needs; in nChw8c oneDNN runs its AVX2 kernels, which on CPUs
// that issue 512-bit ops as two 256-bit halves (Builder::narrow_blocks_pay(): AMD Zen 4, the
// machine these were measured on) are as fast per channel as the AVX-512 ones: 144->24 1x1 at 56x56
// 0.204 vs 0.263 ms, 96->24 0.129 vs 0.173 ms (thread CPU time); for multiples of 16 the two
// layouts are within 2-5% of each other, 16c ahead.
// Where the width changes, the narrow side of the layer pays the reorder: a projection (as
// many or more channels in than out, depthwise included) keeps the blocks its wide input
// already has, padding a 24-channel output to 32 in nChw16c or running 144->32 on AVX2
// kernels, and the next expansion reorders the narrow tensor (MobileNetV2: the 96- and
// 144-channel tensors were reordered before, 0.09 and 0.03 ms of a 3.5 ms run).
bool blocks_of_8(Builder& b, int x, const std::vector<int64_t>& xd,
                 const std::vector<int64_t>& yd) {
  if (!b.narrow_blocks_pay() || xd[1] % 8 != 0 || yd[1] % 8 != 0) return false;
  const dnnl::memory::desc& md = b.md_of(x);
  bool in_8c = md == dnnl::memory::desc(md.dims(), md.data_type(), tag::nChw8c);
  bool in_16c = md == dnnl::memory::desc(md.dims(), md.data_type(), tag::nChw16c);
  if (xd[1] >= yd[1] && (in_8c || in_16c)) return in_8c;
  return xd[1] % 16 != 0 || yd[1] % 16 != 0;
}

// Milliseconds of one run of a convolution (zeroed scratch tensors), the best of three.
double time_conv(dnnl::engine& engine, const dnnl::convolution_forward::primitive_desc& pd) {
  dnnl::stream stream(engine);
  std::unordered_map<int, dnnl::memory> args;
  for (int arg : {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST}) {
    dnnl::memory::desc md = pd.query_md(dnnl::query::exec_arg_md, arg);
    if (md.get_size() == 0) continue;
    dnnl::memory m(md, engine);
    std::memset(m.get_data_handle(), 0, md.get_size());
    args.emplace(arg, m);
  }
  dnnl::convolution_forward prim(pd);
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    auto start = std::chrono::steady_clock::now();
    prim.execute(stream, args);
    stream.wait();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) best = std::min(best, ms);
  }
  return best;
}

// Binds the depthwise post-op's weights, bias and destination (the depthwise output, or the
// last activation after it), and marks the nodes the primitive now computes absorbed: the
// 1x1's activations, whose values are never materialized, and the depthwise convolution.
void bind_depthwise(Builder& b, const DepthwiseFusion& dw,
                    const std::vector<FusionCandidate>& cands, size_t fused,
                    std::vector<std::pair<int, int>>& args) {
  const dnnl::convolution_forward::primitive_desc& pd = dw.pd;
  constexpr int kDwWeights = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
  constexpr int kDwBias = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
  args.emplace_back(kDwWeights, b.constant_slot(dw.weights, {dw.channels, 1, 1, 3, 3},
                                                pd.query_md(dnnl::query::exec_arg_md, kDwWeights)));
  args.emplace_back(kDwBias, b.constant_slot(dw.bias, {dw.channels},
                                             pd.query_md(dnnl::query::exec_arg_md, kDwBias)));
  for (size_t i = 0; i < fused; ++i) {
    b.ir().nodes[cands[i].node].absorbed = true;
    for (int merged : cands[i].merged_nodes) b.ir().nodes[merged].absorbed = true;
  }
  b.ir().nodes[dw.node].absorbed = true;
  int dst = b.define(dw.out_value, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  b.absorb(dw.post, dw.post_count, dst);
}

void emit_convolution(Builder& b, int node) {
  IrGraph& g = b.ir();
  IrNode& n = g.nodes[node];
  int x = n.inputs[0], w = n.inputs[1], bias = g.in(n, 2), y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const std::vector<int64_t>& wd = g.value(w).dims;
  const std::vector<int64_t>& yd = g.value(y).dims;
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  ConvGeometry geo = conv_geometry(n, xd, kernel, yd, false);
  int64_t m = wd[0];
  dt ct = b.compute_type();

  std::vector<int64_t> wdims = wd;
  if (geo.group > 1) {
    wdims = {geo.group, m / geo.group};
    wdims.insert(wdims.end(), wd.begin() + 1, wd.end());
  }
  dnnl::memory::desc src_any(xd, ct, tag::any), w_any(wdims, ct, tag::any);
  tag dst_tag = tag::any;
  if (b.blocked_convolutions() && xd.size() == 4) {
    bool by_8 = b.block_width() == 8 || (ct == dt::f32 && blocks_of_8(b, x, xd, yd));
    tag block = by_8 ? tag::nChw8c : tag::nChw16c;
    int64_t width = by_8 ? 8 : 16;
    // Channel counts that are not a multiple of the block (MNASNet's 24, 40, 72, 120) are
    // padded too, where oneDNN's JIT kernels take padded blocks (ungrouped or depthwise
    // layers, at least a block wide): left to itself, oneDNN puts such a layer in nhwc, and
    // its neighbours reorder to it and back (MNASNet: 0.16 ms for each 72-channel 56x56
    // depthwise output; -9.5% end to end, 10 alternating pairs).
    bool padded_ok = geo.group == 1 || (geo.group == xd[1] && geo.group == m);
    auto blocked = [&](int64_t channels) {
      return channels % width == 0 || (padded_ok && channels > width);
    };
    if (blocked(xd[1])) src_any = dnnl::memory::desc(xd, ct, block);
    if (blocked(yd[1])) dst_tag = block;
  }
  dnnl::memory::desc bias_md({m}, dt::f32, tag::a);
  bool has_bias = bias >= 0 || !n.folded_bias.empty();

  std::vector<FusionCandidate> cands = b.fusion_candidates(node, y);
  // A result read outside the subgraph stays f32 under bf16 (no second rounding), as does one
  // the bf16 plan keeps in f32 (precision.hpp).
  dt dst_type = ct;
  for (const FusionCandidate& c : cands)
    if (c.out_value >= 0 && b.keeps_f32(c.out_value)) dst_type = dt::f32;
  if (b.keeps_f32(y)) dst_type = dt::f32;
  // The buffer a residual Add (sum post-op) accumulates into: the residual's own, or, when
  // this convolution computes in another channel-blocked layout and an earlier reader of the
  // residual (the block's first convolution) already reordered it to that layout, the copy:
  // nothing reads either after this node (fusion_candidates checked), and the result needs
  // no reorder.
  auto sum_slot = [&](int residual) {
    if (dst_tag != tag::any) {
      int copy = b.converted_copy(residual, dnnl::memory::desc(yd, dst_type, dst_tag));
      if (copy >= 0) return copy;
    }
    return b.slot_of(residual);
  };
  auto make = [&](const dnnl::primitive_attr& attr, size_t count, dnnl::algorithm a) {
    dnnl::memory::desc dst(yd, dst_type, dst_tag);
    for (size_t i = 0; i < count; ++i)
      if (cands[i].kind == FusionCandidate::Kind::kSum) dst = b.slot_md(sum_slot(cands[i].operand));
    auto d = has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, a,
                                                        src_any, w_any, bias_md, dst, geo.strides,
                                                        geo.dilations, geo.pad_l, geo.pad_r)
                      : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, a,
                                                        src_any, w_any, dst, geo.strides,
                                                        geo.dilations, geo.pad_l, geo.pad_r);
    return dnnl::convolution_forward::primitive_desc(d, attr, b.engine());
  };
  std::vector<std::pair<int, int>> post_args;
  auto [pd, fused] = create_with_post_ops<dnnl::convolution_forward::primitive_desc>(
      b, cands, static_cast<int>(yd.size()),
      [&](const dnnl::primitive_attr& attr, size_t count) {
        return make(attr, count, dnnl::algorithm::convolution_direct);
      },
      post_args);

  if (post_args.empty() && emit_depthwise3x3(b, node, pd, cands, fused, geo)) return;

  // Winograd for wide 3x3/stride 1 layers (see DeviceOptions::winograd), with the same
  // post-ops and layouts.
  auto mode = b.options().winograd;
  bool wide = wd[0] >= 64 && wd[1] >= 64;
  bool winograd_shape = (mode == DeviceOptions::Winograd::kTune ||
                         (mode == DeviceOptions::Winograd::kAuto && wide)) &&
                        kernel.size() == 2 && kernel[0] == 3 && kernel[1] == 3 && geo.group == 1 &&
                        geo.strides == dnnl::memory::dims{1, 1} &&
                        geo.dilations == dnnl::memory::dims{0, 0} && ct == dt::f32 &&
                        post_args.empty();
  if (winograd_shape) {
    try {
      dnnl::post_ops ops;
      std::vector<std::pair<int, int>> a = b.append_post_ops(cands, fused, ops, 4);
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      auto wpd = make(attr, fused, dnnl::algorithm::convolution_winograd);
      // Only with the layouts the direct one has: a reorder around it would eat the gain.
      bool same_layouts = wpd.src_desc() == pd.src_desc() && wpd.dst_desc() == pd.dst_desc();
      bool faster = mode != DeviceOptions::Winograd::kTune ||
                    time_conv(b.engine(), wpd) < 0.9 * time_conv(b.engine(), pd);
      if (!is_reference(wpd) && same_layouts && faster) pd = wpd;
    } catch (const dnnl::error&) {
      // No Winograd implementation for this shape or ISA: keep the direct one.
    }
  }

  // A 1x1 convolution may take the depthwise convolution after it into its primitive.
  std::optional<DepthwiseFusion> dw;
  bool pointwise = xd.size() == 4 && kernel == std::vector<int64_t>{1, 1} && geo.group == 1 &&
                   geo.strides == dnnl::memory::dims{1, 1} &&
                   geo.pad_l == dnnl::memory::dims{0, 0} && geo.pad_r == dnnl::memory::dims{0, 0};
  if (pointwise)
    dw = fuse_depthwise(b, cands, fused, y, [&](const dnnl::primitive_attr& attr) {
      return make(attr, fused, dnnl::algorithm::convolution_direct);
    });
  if (dw) pd = dw->pd;

  int src = b.as(x, pd.src_desc());
  int weights;
  if (!n.folded_weights.empty())
    weights = b.constant_slot(n.folded_weights, wdims, pd.weights_desc());
  else
    weights = b.value_constant_slot(w, plain_md(wdims, dt::f32), pd.weights_desc());
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (has_bias) {
    std::vector<float> bv = n.folded_bias.empty() ? constant_floats(g, bias) : n.folded_bias;
    args.emplace_back(DNNL_ARG_BIAS, b.constant_slot(bv, {m}, pd.bias_desc()));
  }
  if (dw) {
    bind_depthwise(b, *dw, cands, fused, args);
    b.add_step(dnnl::convolution_forward(pd), args,
               "Conv " + std::string(n.view->name) + " + depthwise " +
                   std::string(g.nodes[dw->node].view->name) + " [" + pd.impl_info_str() + ", " +
                   std::to_string(fused + 1 + dw->post_count) + " post-ops]");
    return;
  }
  int dst = -1;
  for (size_t i = 0; i < fused; ++i)
    if (cands[i].kind == FusionCandidate::Kind::kSum) dst = sum_slot(cands[i].operand);
  if (dst < 0) dst = b.define(y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  args.insert(args.end(), post_args.begin(), post_args.end());
  b.absorb(cands, fused, dst);
  b.add_step(dnnl::convolution_forward(pd), args,
             "Conv " + std::string(n.view->name) + " [" + pd.impl_info_str() + ", " +
                 std::to_string(fused) + " post-ops]");
}

// A 2-D ConvTranspose whose kernel equals its stride, without pads, dilation or groups, writes
// each output pixel from exactly one input pixel: it is a 1x1 convolution to C_out x kh x kw
// channels followed by a depth-to-space permutation, which a strided reorder does. Upsampling
// heads export it (DBNet: 2x2 stride 2); oneDNN's deconvolution ran its 16 -> 1 channel head at
// 320x320 in 25 ms on AVX2 (8.5 ms in its gemm form), the 1x1 convolution in well under 1 ms.
bool emit_deconvolution_as_conv1x1(Builder& b, int node, const ConvGeometry& geo) {
  IrGraph& g = b.ir();
  IrNode& n = g.nodes[node];
  int x = n.inputs[0], w = n.inputs[1], bias = g.in(n, 2), y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const std::vector<int64_t>& wd = g.value(w).dims;  // [C, M, kh, kw]
  const std::vector<int64_t>& yd = g.value(y).dims;
  if (xd.size() != 4 || geo.group != 1 || b.compute_type() != dt::f32) return false;
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], M = wd[1], kh = wd[2], kw = wd[3];
  for (size_t i = 0; i < 2; ++i)
    if (geo.strides[i] != wd[2 + i] || geo.dilations[i] != 0 || geo.pad_l[i] != 0 ||
        geo.pad_r[i] != 0)
      return false;
  if (yd != std::vector<int64_t>{N, M, H * kh, W * kw}) return false;  // no output_padding
  const int64_t K = M * kh * kw;
  // Conv weights [K, C, 1, 1], K = (m, i, j): ONNX's [C, M, kh, kw] bytes with strides (1, K).
  dnnl::memory::desc w_view({K, C, 1, 1}, dt::f32, dnnl::memory::dims{1, K, 1, 1});
  dnnl::memory::desc src_md = plain_md(xd, dt::f32), tmp_md = plain_md({N, K, H, W}, dt::f32);
  dnnl::memory::desc w_any({K, C, 1, 1}, dt::f32, tag::any), bias_md({K}, dt::f32, tag::a);
  const dnnl::memory::dims one{1, 1}, zero{0, 0};
  auto d = bias >= 0 ? dnnl::convolution_forward::desc(
                           dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                           src_md, w_any, bias_md, tmp_md, one, zero, zero, zero)
                     : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, src_md,
                                                       w_any, tmp_md, one, zero, zero, zero);
  dnnl::convolution_forward::primitive_desc pd(d, b.engine());
  if (is_reference(pd)) return false;
  std::vector<std::pair<int, int>> args{
      {DNNL_ARG_SRC, b.as(x, src_md)},
      {DNNL_ARG_WEIGHTS, b.value_constant_slot(w, w_view, pd.weights_desc())}};
  if (bias >= 0) {
    // The bias of output channel m for each of its kh x kw positions.
    std::vector<float> bv = constant_floats(g, bias), repeated(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k)
      repeated[static_cast<size_t>(k)] = bv[static_cast<size_t>(k / (kh * kw))];
    args.emplace_back(DNNL_ARG_BIAS, b.constant_slot(repeated, {K}, bias_md));
  }
  int tmp = b.define(-1, tmp_md);
  args.emplace_back(DNNL_ARG_DST, tmp);
  const std::string name = n.view->name ? n.view->name : "";
  b.add_step(dnnl::convolution_forward(pd), args,
             "ConvTranspose " + name + " as 1x1 Conv [" + pd.impl_info_str() + "]");
  // Depth to space: tmp [N, (m, i, j), H, W] -> y [N, m, H * kh + i, W * kw + j], both seen as
  // [N, M, kh, kw, H, W].
  const dnnl::memory::dims perm{N, M, kh, kw, H, W};
  dnnl::memory::desc from_md(
      perm, dt::f32, dnnl::memory::dims{K * H * W, kh * kw * H * W, kw * H * W, H * W, W, 1});
  dnnl::memory::desc to_md(
      perm, dt::f32,
      dnnl::memory::dims{M * H * kh * W * kw, H * kh * W * kw, W * kw, 1, kh * W * kw, kw});
  int out = b.define(y, plain_md(yd, dt::f32));
  b.add_step(dnnl::reorder(dnnl::reorder::primitive_desc(b.engine(), from_md, b.engine(), to_md)),
             {{DNNL_ARG_FROM, b.view(tmp, from_md)}, {DNNL_ARG_TO, b.view(out, to_md)}},
             "ConvTranspose " + name + " depth to space");
  return true;
}

void emit_deconvolution(Builder& b, int node) {
  IrGraph& g = b.ir();
  IrNode& n = g.nodes[node];
  int x = n.inputs[0], w = n.inputs[1], bias = g.in(n, 2), y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const std::vector<int64_t>& wd = g.value(w).dims;  // [C, M/group, k...]
  const std::vector<int64_t>& yd = g.value(y).dims;
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  ConvGeometry geo = conv_geometry(n, xd, kernel, yd, true);
  if (emit_deconvolution_as_conv1x1(b, node, geo)) return;
  dt ct = b.compute_type();
  int64_t c = wd[0], mg = wd[1], G = geo.group, cg = c / G;
  int64_t k = 1;
  for (int64_t e : kernel) k *= e;
  // oneDNN's logical weights are (G,) OC, IC, k...; ONNX stores (G x IC), OC, k...: a
  // permuted view of the same bytes.
  std::vector<int64_t> wdims{G, mg, cg};
  dnnl::memory::dims wstrides{cg * mg * k, k, mg * k};
  dnnl::memory::dims kstrides = row_major_strides(kernel);
  wdims.insert(wdims.end(), kernel.begin(), kernel.end());
  wstrides.insert(wstrides.end(), kstrides.begin(), kstrides.end());
  if (G == 1) {
    wdims.erase(wdims.begin());
    wstrides.erase(wstrides.begin());
  }
  // A result kept in f32 (a graph output, or the bf16 plan's) is written in f32.
  const dt dst_type = b.keeps_f32(y) ? dt::f32 : ct;
  dnnl::memory::desc src_any(xd, ct, tag::any), w_any(wdims, ct, tag::any),
      dst_any(yd, dst_type, tag::any);
  // Fewer output channels than one channel block: oneDNN 2.6's blocked jit deconvolution pads
  // them to a block and ran DBNet's last ConvTranspose (16 -> 1 channel, 2x2 stride 2, 320x320
  // -> 640x640) in 25 ms; on plain tensors it takes its gemm implementation, 8.5 ms (AVX2).
  if (mg * G < 8) {
    src_any = dnnl::memory::desc(xd, ct, dnnl::memory::dims(row_major_strides(xd)));
    dst_any = dnnl::memory::desc(yd, dst_type, dnnl::memory::dims(row_major_strides(yd)));
  }
  dnnl::memory::desc bias_md({mg * G}, dt::f32, tag::a);
  std::vector<FusionCandidate> cands = b.fusion_candidates(node, y);
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].kind == FusionCandidate::Kind::kSum) cands.resize(i);  // keep it simple: no sum
  std::vector<std::pair<int, int>> post_args;
  auto [pd, fused] = create_with_post_ops<dnnl::deconvolution_forward::primitive_desc>(
      b, cands, static_cast<int>(yd.size()),
      [&](const dnnl::primitive_attr& attr, size_t) {
        auto d = bias >= 0 ? dnnl::deconvolution_forward::desc(
                                 dnnl::prop_kind::forward_inference,
                                 dnnl::algorithm::deconvolution_direct, src_any, w_any, bias_md,
                                 dst_any, geo.strides, geo.dilations, geo.pad_l, geo.pad_r)
                           : dnnl::deconvolution_forward::desc(
                                 dnnl::prop_kind::forward_inference,
                                 dnnl::algorithm::deconvolution_direct, src_any, w_any, dst_any,
                                 geo.strides, geo.dilations, geo.pad_l, geo.pad_r);
        return dnnl::deconvolution_forward::primitive_desc(d, attr, b.engine());
      },
      post_args);
  int weights =
      b.value_constant_slot(w, dnnl::memory::desc(wdims, dt::f32, wstrides), pd.weights_desc());
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, b.as(x, pd.src_desc())},
                                        {DNNL_ARG_WEIGHTS, weights}};
  if (bias >= 0) args.emplace_back(DNNL_ARG_BIAS, b.constant_slot(bias, pd.bias_desc()));
  int dst = b.define(y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  args.insert(args.end(), post_args.begin(), post_args.end());
  b.absorb(cands, fused, dst);
  b.add_step(dnnl::deconvolution_forward(pd), args,
             "ConvTranspose " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
}

}  // namespace

void emit_conv(Builder& b, int node) {
  if (b.ir().nodes[node].op == "ConvTranspose") return emit_deconvolution(b, node);
  emit_convolution(b, node);
}

namespace {

std::string check_conv(const loom_graph_t& graph, const loom_node_t& node) {
  const std::string op = node.op_type;
  sdk::Attributes attrs(node);
  Info x = sdk::node_input(graph, node, 0), w = sdk::node_input(graph, node, 1),
       b = sdk::node_input(graph, node, 2);
  // Weights and bias may come through a DequantizeLinear of a constant (QDQ models).
  if (!is_constant(w) && !dequantized_constant(graph, node.inputs[1]))
    return "the weights are not a constant";
  if (b && !is_constant(b) && !dequantized_constant(graph, node.inputs[2]))
    return "the bias is not a constant";
  if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) return "only 1D, 2D and 3D " + op;
  int64_t group = attrs.get_int("group", 1);
  if (group < 1 || w->dims[0] % (op == "Conv" ? group : 1) != 0) return "bad group count";
  std::optional<sdk::AutoPad> auto_pad =
      sdk::parse_auto_pad(attrs.get_string("auto_pad", "NOTSET"));
  if (!auto_pad) return "unknown auto_pad";
  if (op == "ConvTranspose" &&
      ((*auto_pad != sdk::AutoPad::kNotSet && *auto_pad != sdk::AutoPad::kValid) ||
       attrs.has("output_shape")))
    return "ConvTranspose with auto_pad SAME or output_shape";
  if (op == "ConvTranspose") {
    // oneDNN has no negative padding: output_padding must fit in the end pads.
    auto pads = attrs.get_ints("pads");
    auto extra = attrs.get_ints("output_padding");
    size_t sr = static_cast<size_t>(x->rank - 2);
    for (size_t i = 0; extra && i < extra->size() && i < sr; ++i) {
      int64_t end = pads && pads->size() == 2 * sr ? (*pads)[sr + i] : 0;
      if ((*extra)[i] > end) return "ConvTranspose output_padding beyond the end padding";
    }
  }
  return "";
}

}  // namespace

LOOM_ONEDNN_OP("Conv", check_conv, emit_conv);
LOOM_ONEDNN_OP("ConvTranspose", check_conv, emit_conv);

}  // namespace loom::onednn
