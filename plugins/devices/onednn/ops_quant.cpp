// Int8 ops (IrNode::quant, made by rewrite_quantized in quantized.cpp) as oneDNN int8
// convolution and matmul primitives, and the QuantizeLinear / DequantizeLinear nodes left
// between float ops as reorders with scales and zero points.
//
// An int8 primitive reads the quantized source with its zero point (oneDNN pads with it, so a
// padded border is real zero as ONNX's QLinearConv defines), int8 weights reordered once, a
// float bias added to the int32 accumulator before scaling (the bias is divided by the
// accumulator's scale here, x_scale * w_scale[c]), and scales the sum by
// x_scale * w_scale[c] / y_scale per output channel before adding y's zero point and
// saturating; with no QuantizeLinear after it the result is float (the scale without y's).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "builder.hpp"
#include "dynamic_quantize.hpp"
#include "quantize_image.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

// `md` with another data type (same dims and layout).
dnnl::memory::desc with_type(const dnnl::memory::desc& md, dt type) {
  dnnl::memory::desc out = md;
  out.data.data_type = static_cast<dnnl_data_type_t>(type);
  return out;
}

// The first element of an integer constant of any width (a zero point).
int32_t first_int(const IrGraph& g, int id) {
  const IrValue& v = g.value(id);
  if (v.dtype == LOOM_DTYPE_UINT8) return *static_cast<const uint8_t*>(v.data);
  if (v.dtype == LOOM_DTYPE_INT8) return *static_cast<const int8_t*>(v.data);
  return static_cast<int32_t>(constant_ints(g, id).at(0));
}

// A constant one-element int32 (a run-time zero point argument).
int zero_point_slot(Builder& b, int32_t zero) {
  return b.constant_slot(dnnl::memory::desc({1}, dt::s32, tag::a),
                         [zero](void* p) { *static_cast<int32_t*>(p) = zero; });
}

// Output scales per channel: x_scale * w_scale[c] (/ y_scale when the result is quantized).
std::vector<float> output_scales(const QuantizedOp& q, int64_t channels) {
  std::vector<float> s(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    double v = static_cast<double>(q.xq.scale[0]) *
               q.wq.scale[q.wq.per_tensor() ? 0 : static_cast<size_t>(c)];
    if (q.yq) v /= q.yq->scale[0];
    s[static_cast<size_t>(c)] = static_cast<float>(v);
  }
  return s;
}

// The bias in accumulator units (real bias / (x_scale * w_scale[c])): oneDNN adds it to the
// int32 sum before the output scale.
std::vector<float> accumulator_bias(const QuantizedOp& q, int64_t channels) {
  std::vector<float> b(static_cast<size_t>(channels), 0.f);
  for (int64_t c = 0; c < channels && !q.bias.empty(); ++c) {
    double scale = static_cast<double>(q.xq.scale[0]) *
                   q.wq.scale[q.wq.per_tensor() ? 0 : static_cast<size_t>(c)];
    b[static_cast<size_t>(c)] = static_cast<float>(q.bias[static_cast<size_t>(c)] / scale);
  }
  return b;
}

// Zero points and output scales of an int8 primitive; appends the zero points' arguments.
dnnl::primitive_attr int8_attr(Builder& b, const QuantizedOp& q, int channel_dim, int64_t channels,
                               std::vector<std::pair<int, int>>& args) {
  dnnl::primitive_attr attr;
  std::vector<float> scales = output_scales(q, channels);
  bool common = std::all_of(scales.begin(), scales.end(), [&](float s) { return s == scales[0]; });
  if (common) scales.resize(1);
  attr.set_output_scales(common ? 0 : 1 << channel_dim, scales);
  if (q.xq.zero[0] != 0) {
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zero_point_slot(b, q.xq.zero[0]));
  }
  // The destination's zero point: the sum's QuantizeLinear's with a residual.
  const QuantParams* dst_q = q.sum_q ? &*q.sum_q : q.yq ? &*q.yq : nullptr;
  if (dst_q && dst_q->zero[0] != 0) {
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, zero_point_slot(b, dst_q->zero[0]));
  }
  dnnl::post_ops ops;
  if (q.relu) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  // The clip runs on the scaled result before y's zero point is added: bounds minus it.
  if (q.clip)
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip,
                       static_cast<float>(q.clip->first - q.yq->zero[0]),
                       static_cast<float>(q.clip->second - q.yq->zero[0]));
  if (q.residual >= 0) {
    // The op's own QuantizeLinear as the graph has it, in y's units relative to its zero
    // point: rounded (half to even, as ONNX) and saturated to its type, then scaled to the
    // sum's units. Skipping it would be off by several steps when y's scale is coarser than
    // the sum's, and far off where y saturates.
    const bool s8 = q.yq->dtype == LOOM_DTYPE_INT8;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
    if (!q.clip)
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip,
                         static_cast<float>((s8 ? -128 : 0) - q.yq->zero[0]),
                         static_cast<float>((s8 ? 127 : 255) - q.yq->zero[0]));
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, q.yq->scale[0] / q.sum_q->scale[0],
                       0.f);
    // The destination holds the quantized residual: + r_scale / sum_scale * (r - r_zero).
    ops.append_sum(q.rq.scale[0] / q.sum_q->scale[0], q.rq.zero[0], memory_type(q.rq.dtype));
    if (q.relu_after_sum) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  }
  attr.set_post_ops(ops);
  return attr;
}

std::string node_label(const IrNode& n, const std::string& impl) {
  return n.op + " " + std::string(n.view->name) + " [int8, " + impl + "]";
}

dt result_type(const IrGraph& g, const QuantizedOp& q) {
  return q.yq ? memory_type(g.value(q.y).dtype) : dt::f32;
}

// A reorder of `from` into `to` with output scale `scale` and the zero point `zero` of its
// source (dequantize) or destination (quantize).
void add_requantize_step(Builder& b, int from, int to, float scale, int32_t zero, bool quantize,
                         const std::string& label) {
  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {scale});
  std::vector<std::pair<int, int>> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (zero != 0) {
    int arg = quantize ? DNNL_ARG_TO : DNNL_ARG_FROM;
    attr.set_zero_points(arg, 0, {DNNL_RUNTIME_S32_VAL});
    args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | arg, zero_point_slot(b, zero));
  }
  dnnl::reorder::primitive_desc pd(b.engine(), b.slot_md(from), b.engine(), b.slot_md(to), attr);
  b.add_step(dnnl::reorder(pd), args, label + " [" + pd.impl_info_str() + "]");
}

// x ^ 0x80 for every byte: int8 q as uint8 q + 128.
void flip_sign_bits(const void* from, void* to, size_t bytes) {
  const auto* in = static_cast<const unsigned char*>(from);
  auto* out = static_cast<unsigned char*>(to);
  constexpr uint64_t kSigns = 0x8080808080808080ull;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {  // eight words a pass: vectorized at -O2
    uint64_t w[8];
    std::memcpy(w, in + i, sizeof w);
    for (uint64_t& x : w) x ^= kSigns;
    std::memcpy(out + i, w, sizeof w);
  }
  for (; i < bytes; ++i) out[i] = static_cast<unsigned char>(in[i] ^ 0x80u);
}

// The slot of int8 `value` as uint8 + 128 in `u8_md`'s layout (a device step each run).
int as_unsigned(Builder& b, int value, const dnnl::memory::desc& u8_md, const char* node_name) {
  const int s8 = b.as(value, with_type(u8_md, dt::s8));
  const int u8 = b.define(-1, u8_md);
  const size_t bytes = u8_md.get_size();
  b.add_kernel_step(
      [bytes](const std::unordered_map<int, dnnl::memory>& mem) {
        flip_sign_bits(mem.at(DNNL_ARG_FROM).get_data_handle(),
                       mem.at(DNNL_ARG_TO).get_data_handle(), bytes);
      },
      {{DNNL_ARG_FROM, s8}, {DNNL_ARG_TO, u8}},
      std::string("QLinearConv ") + node_name + " source as uint8 [loom int8 to uint8]",
      "loom int8 to uint8");
  return u8;
}

// QuantizedOp::float_form: x dequantized into the float convolution's source layout, the
// convolution with the dequantized weights and the real bias (and its Relu), the result
// quantized by a reorder. The same arithmetic as the QDQ graph the cpu device computes.
void emit_float_form_conv(Builder& b, int node, const std::vector<int64_t>& wdims,
                          const dnnl::memory::dims& st, const dnnl::memory::dims& dil,
                          const dnnl::memory::dims& pl, const dnnl::memory::dims& pr) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const QuantizedOp& q = *n.quant;
  const std::vector<int64_t>& xd = g.value(q.x).dims;
  const std::vector<int64_t>& yd = g.value(q.y).dims;
  const IrValue& w = g.value(q.w);
  const int64_t m = w.dims[0], per_channel = w.elements() / m;
  std::vector<float> real(static_cast<size_t>(w.elements()));
  const auto* wq = static_cast<const int8_t*>(w.data);
  for (int64_t i = 0; i < w.elements(); ++i)
    real[static_cast<size_t>(i)] =
        static_cast<float>(wq[i]) *
        q.wq.scale[q.wq.per_tensor() ? 0 : static_cast<size_t>(i / per_channel)];
  std::vector<float> bias =
      q.bias.empty() ? std::vector<float>(static_cast<size_t>(m), 0.f) : q.bias;
  dnnl::memory::desc bias_md({m}, dt::f32, tag::a);
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  if (q.relu) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  if (q.clip)  // the quantized bounds as real values
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip,
                       static_cast<float>(q.clip->first - q.yq->zero[0]) * q.yq->scale[0],
                       static_cast<float>(q.clip->second - q.yq->zero[0]) * q.yq->scale[0]);
  attr.set_post_ops(ops);
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          dnnl::memory::desc(xd, dt::f32, tag::any), dnnl::memory::desc(wdims, dt::f32, tag::any),
          bias_md, dnnl::memory::desc(yd, dt::f32, tag::any), st, dil, pl, pr),
      attr, b.engine());
  const std::string name = n.view->name;
  int src = b.define(-1, pd.src_desc());
  add_requantize_step(b, b.slot_of(q.x), src, q.xq.scale[0], q.xq.zero[0], false,
                      n.op + " " + name + " dequantize x");
  int dst = b.define(-1, pd.dst_desc());
  b.add_step(dnnl::convolution_forward(pd),
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_WEIGHTS, b.constant_slot(real, wdims, pd.weights_desc())},
              {DNNL_ARG_BIAS, b.constant_slot(bias, {m}, bias_md)},
              {DNNL_ARG_DST, dst}},
             n.op + " " + name + " [float form, " + pd.impl_info_str() + "]");
  int out = b.define(q.y, with_type(pd.dst_desc(), memory_type(g.value(q.y).dtype)));
  add_requantize_step(b, dst, out, 1.f / q.yq->scale[0], q.yq->zero[0], true,
                      n.op + " " + name + " quantize y");
}

void emit_quantized_conv(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const QuantizedOp& q = *n.quant;
  const std::vector<int64_t>& xd = g.value(q.x).dims;
  const std::vector<int64_t>& wd = g.value(q.w).dims;
  const std::vector<int64_t>& yd = g.value(q.y).dims;
  sdk::Attributes attrs(*n.view);
  size_t sr = xd.size() - 2;
  int64_t group = attrs.get_int("group", 1), m = wd[0];
  auto strides = attrs.get_ints("strides");
  auto dilations = attrs.get_ints("dilations");
  auto pads = attrs.get_ints("pads");
  const sdk::AutoPad auto_pad = sdk::auto_pad_of(attrs, n.op);
  dnnl::memory::dims st, dil, pl, pr;
  for (size_t i = 0; i < sr; ++i) {
    int64_t s = strides && strides->size() == sr ? (*strides)[i] : 1;
    int64_t d = dilations && dilations->size() == sr ? (*dilations)[i] : 1;
    int64_t l = pads && pads->size() == 2 * sr ? (*pads)[i] : 0;
    int64_t r = pads && pads->size() == 2 * sr ? (*pads)[sr + i] : 0;
    const sdk::AxisPads p =
        sdk::resolve_pads(auto_pad, xd[2 + i], yd[2 + i], wd[2 + i], s, d, {l, r});
    st.push_back(s);
    dil.push_back(d - 1);
    pl.push_back(p.begin);
    pr.push_back(p.end);
  }
  std::vector<int64_t> wdims = wd;
  if (group > 1) {
    wdims = {group, m / group};
    wdims.insert(wdims.end(), wd.begin() + 1, wd.end());
  }
  if (q.float_form) return emit_float_form_conv(b, node, wdims, st, dil, pl, pr);
  dt src_type = memory_type(g.value(q.x).dtype);
  // An int8 source with zero point -128 (TFLite's int8 activations after a ReLU) holds the
  // numbers a uint8 source x + 128 with zero point 0 holds: oneDNN's fast int8 form. With the
  // zero point (and int8's compensation) its depthwise kernel took 3x its float time (blazeface
  // int8: 73 us for a 5x5 over 64x64x24, 25 us in float); the flip of the sign bits is one
  // pass over the source.
  QuantizedOp unsigned_q;
  const bool to_unsigned = src_type == dt::s8 && q.xq.zero[0] == -128;
  if (to_unsigned) {
    unsigned_q = q;
    unsigned_q.xq.zero[0] = 0;
    src_type = dt::u8;
  }
  const QuantizedOp& qa = to_unsigned ? unsigned_q : q;
  dnnl::memory::desc src_any(xd, src_type, tag::any), w_any(wdims, dt::s8, tag::any),
      bias_md({m}, dt::f32, tag::a), dst_any(yd, result_type(g, q), tag::any);
  std::vector<std::pair<int, int>> args;
  dnnl::primitive_attr attr = int8_attr(b, qa, 1, m, args);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src_any, w_any, bias_md,
                                    dst_any, st, dil, pl, pr);
  dnnl::convolution_forward::primitive_desc pd(d, attr, b.engine());
  if (to_unsigned)
    args.emplace_back(DNNL_ARG_SRC, as_unsigned(b, q.x, pd.src_desc(), n.view->name));
  else
    args.emplace_back(DNNL_ARG_SRC, b.as(q.x, pd.src_desc()));
  const IrValue& w = g.value(q.w);
  args.emplace_back(DNNL_ARG_WEIGHTS,
                    b.constant_slot(w.data, plain_md(wdims, dt::s8), pd.weights_desc()));
  args.emplace_back(DNNL_ARG_BIAS, b.constant_slot(accumulator_bias(q, m), {m}, bias_md));
  int dst = -1;
  if (q.residual >= 0) {
    // The sum accumulates into the residual's buffer where nothing reads it after this node
    // and it has the result's layout, else into a copy of it.
    int r = b.slot_of(q.residual);
    if (b.slot_md(r) == pd.dst_desc() && b.residual_is_dead_after(q.residual, node, node)) {
      dst = r;
      b.bind(q.y, dst);
    } else {
      dst = b.define(q.y, pd.dst_desc());
      dnnl::reorder::primitive_desc copy(b.engine(), b.slot_md(r), b.engine(), pd.dst_desc());
      b.add_device_step(dnnl::reorder(copy), {{DNNL_ARG_FROM, r}, {DNNL_ARG_TO, dst}},
                        "residual copy for " + std::string(n.view->name));
    }
  } else {
    dst = b.define(q.y, pd.dst_desc());
  }
  args.emplace_back(DNNL_ARG_DST, dst);
  b.add_step(dnnl::convolution_forward(pd), args, node_label(n, pd.impl_info_str()));
}

// MatMul [..., M, K] x [K, N], Gemm [M, K] x [K, N] or [N, K] (transB), QLinearMatMul.
void emit_quantized_matmul(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const QuantizedOp& q = *n.quant;
  std::vector<int64_t> xd = g.value(q.x).dims;
  const std::vector<int64_t>& wd = g.value(q.w).dims;
  std::vector<int64_t> yd = g.value(q.y).dims;
  bool trans_b = n.op == "Gemm" && sdk::Attributes(*n.view).get_int("transB", 0) != 0;
  int64_t k = trans_b ? wd[1] : wd[0], cols = trans_b ? wd[0] : wd[1];
  size_t rank = xd.size();
  // Weights [1..., K, N] of the source's rank; a transposed B is a strided view of its bytes.
  std::vector<int64_t> wdims(rank, 1);
  wdims[rank - 2] = k;
  wdims[rank - 1] = cols;
  dnnl::memory::dims wstrides(rank, k * cols);
  wstrides[rank - 2] = trans_b ? 1 : cols;
  wstrides[rank - 1] = trans_b ? k : 1;
  std::vector<int64_t> bdims(rank, 1);
  bdims[rank - 1] = cols;
  dt src_type = memory_type(g.value(q.x).dtype);
  std::vector<std::pair<int, int>> args;
  if (rank == 2 && xd[0] == 1) {
    // One row (a classifier after pooling): as a 1x1 convolution over [1, K, 1, 1], whose
    // jit kernel keeps the weights packed: 14 us for 1280 -> 1000 where the matmul's gemm
    // took 72 us standalone (AVX2, 2 threads; equal from 4 rows on). nhwc, the layout of the
    // int8 jit kernels (nchw sends it to the reference one), is the same bytes at 1x1.
    dnnl::memory::desc src4({1, k, 1, 1}, src_type, tag::nhwc),
        w4({cols, k, 1, 1}, dt::s8, tag::any), b4({cols}, dt::f32, tag::a),
        y4({1, cols, 1, 1}, result_type(g, q), tag::nhwc);
    dnnl::primitive_attr attr = int8_attr(b, q, 1, cols, args);
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, src4, w4, b4, y4,
                                        {1, 1}, {0, 0}, {0, 0}),
        attr, b.engine());
    // ONNX's [K, N] (or [N, K] with transB) bytes seen as [N, K, 1, 1].
    dnnl::memory::desc w_view({cols, k, 1, 1}, dt::s8,
                              dnnl::memory::dims{trans_b ? k : 1, trans_b ? 1 : cols, 1, 1});
    args.emplace_back(DNNL_ARG_SRC, b.view(b.as_plain(q.x), src4));
    args.emplace_back(DNNL_ARG_WEIGHTS,
                      b.constant_slot(g.value(q.w).data, w_view, pd.weights_desc()));
    args.emplace_back(DNNL_ARG_BIAS, b.constant_slot(accumulator_bias(q, cols), {cols}, b4));
    int out = b.define(-1, y4);
    args.emplace_back(DNNL_ARG_DST, out);
    b.alias(q.y, out, plain_md(yd, result_type(g, q)));
    b.add_step(dnnl::convolution_forward(pd), args, node_label(n, pd.impl_info_str()));
    return;
  }
  dnnl::memory::desc src_md = plain_md(xd, src_type), w_any(wdims, dt::s8, tag::any),
                     bias_md = plain_md(bdims, dt::f32), dst_md = plain_md(yd, result_type(g, q));
  dnnl::primitive_attr attr = int8_attr(b, q, static_cast<int>(rank) - 1, cols, args);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_any, bias_md, dst_md), attr,
                                  b.engine());
  args.emplace_back(DNNL_ARG_SRC, b.as(q.x, pd.src_desc()));
  args.emplace_back(DNNL_ARG_WEIGHTS,
                    b.constant_slot(g.value(q.w).data, dnnl::memory::desc(wdims, dt::s8, wstrides),
                                    pd.weights_desc()));
  args.emplace_back(DNNL_ARG_BIAS, b.constant_slot(accumulator_bias(q, cols), bdims, bias_md));
  args.emplace_back(DNNL_ARG_DST, b.define(q.y, pd.dst_desc()));
  b.add_step(dnnl::matmul(pd), args, node_label(n, pd.impl_info_str()));
}

// DequantizeLinear whose only reader is a GlobalAveragePool (a quantized CNN's last feature map
// before its classifier): both in one pass over the int8 tensor, mean(x) = scale * (sum(q) /
// pixels - zero), the int32 sum exact. The two as oneDNN primitives took 19 + 6 us of
// MobileNetV2's 0.71 ms int8 run (a reorder of 1x1280x7x7 to f32, then the pool over it).
// False, with nothing emitted, where that is not the shape of things.
bool emit_dequantize_global_pool(Builder& b, int node, float scale, int32_t zero) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const int x = n.inputs[0], y = n.outputs[0];
  const int pool = g.sole_consumer(y);
  if (pool < 0 || g.nodes[pool].op != "GlobalAveragePool" || g.nodes[pool].outputs.empty() ||
      g.nodes[pool].outputs[0] < 0)
    return false;
  const std::vector<int64_t>& xd = g.value(x).dims;
  const dt type = b.md_of(x).data_type();
  if (xd.size() != 4 || (type != dt::u8 && type != dt::s8)) return false;
  const int64_t images = xd[0], channels = xd[1], pixels = xd[2] * xd[3];
  if (pixels == 0 || pixels > (int64_t{1} << 23)) return false;  // NaN; int32 sums stay exact
  // Plain (each channel's pixels contiguous) as it is, else channels-last (each pixel's
  // channels contiguous, as oneDNN's int8 convolutions write), reordered to it if need be.
  const bool plain = is_plain(b.md_of(x));
  const int src = plain ? b.slot_of(x) : b.as(x, dnnl::memory::desc(xd, type, tag::nhwc));
  const int pool_out = g.nodes[pool].outputs[0];
  const int dst = b.define(pool_out, plain_md(g.value(pool_out).dims, dt::f32));
  g.nodes[pool].absorbed = true;
  auto mean = [scale, zero, pixels](int64_t sum) {
    return static_cast<float>(scale * (static_cast<double>(sum) / static_cast<double>(pixels) -
                                       static_cast<double>(zero)));
  };
  b.add_kernel_step(
      [images, channels, pixels, plain, is_signed = type == dt::s8,
       mean](const std::unordered_map<int, dnnl::memory>& mem) {
        const void* in = mem.at(DNNL_ARG_SRC).get_data_handle();
        auto* out = static_cast<float*>(mem.at(DNNL_ARG_DST).get_data_handle());
        std::vector<int32_t> sums(plain ? 0 : static_cast<size_t>(channels));
        auto sum_image = [&](auto* q, int64_t i) {
          if (plain) {
            for (int64_t c = 0; c < channels; ++c) {
              int32_t sum = 0;
              const auto* row = q + (i * channels + c) * pixels;
#pragma omp simd reduction(+ : sum)
              for (int64_t p = 0; p < pixels; ++p) sum += row[p];
              out[i * channels + c] = mean(sum);
            }
            return;
          }
          std::fill(sums.begin(), sums.end(), 0);
          for (int64_t p = 0; p < pixels; ++p) {
            const auto* row = q + (i * pixels + p) * channels;
#pragma omp simd
            for (int64_t c = 0; c < channels; ++c) sums[static_cast<size_t>(c)] += row[c];
          }
          for (int64_t c = 0; c < channels; ++c)
            out[i * channels + c] = mean(sums[static_cast<size_t>(c)]);
        };
        for (int64_t i = 0; i < images; ++i) {
          if (is_signed)
            sum_image(static_cast<const int8_t*>(in), i);
          else
            sum_image(static_cast<const uint8_t*>(in), i);
        }
      },
      {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
      n.op + " " + std::string(n.view->name) + " + GlobalAveragePool [loom]",
      "loom dequantize mean");
  return true;
}

// DequantizeLinear of a tensor (per tensor: constants were folded by rewrite_quantized) and
// QuantizeLinear: a reorder with scale and zero point, keeping the source's layout.
void emit_requantize(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  bool quantize = n.op == "QuantizeLinear";
  int x = n.inputs[0], y = n.outputs[0];
  float scale = constant_floats(g, n.inputs[1]).at(0);
  int zero_value = g.in(n, 2);
  int32_t zero = zero_value >= 0 ? first_int(g, zero_value) : 0;
  dt out_type = quantize ? memory_type(g.value(y).dtype) : dt::f32;
  if (!quantize && emit_dequantize_global_pool(b, node, scale, zero)) return;
  const dnnl::memory::desc md = b.md_of(x);  // a copy: new slots move the slot table
  dnnl::memory::desc out_md = with_type(md, out_type);
  // A quantized 2-D image that int8 convolutions read goes straight to channels-last, the
  // layout of oneDNN's int8 kernels: one reorder instead of this one and a transposing one
  // before the first convolution (MobileNetV2's 1x3x224x224 input, warm: 0.08-0.11 ms against
  // 0.10-0.19 ms for the two).
  const std::vector<int64_t>& yd = g.value(y).dims;
  if (quantize && yd.size() == 4 && is_plain(md)) {
    bool conv_readers = false;
    for (int c : g.value(y).consumers) {
      if (g.nodes[c].absorbed) continue;  // a DequantizeLinear folded into a convolution
      conv_readers = g.nodes[c].quant && !g.nodes[c].quant->float_form &&
                     (g.nodes[c].op == "Conv" || g.nodes[c].op == "QLinearConv");
      if (!conv_readers) break;
    }
    const bool to_nhwc = conv_readers && !g.value(y).graph_output;
    if (to_nhwc) out_md = dnnl::memory::desc(yd, out_type, tag::nhwc);
    // A three-channel float image: the device's own kernel (ResNet-50's 1x3x224x224 input:
    // 0.087 ms as oneDNN's reorder, which transposes element by element).
    if (to_nhwc && md.data_type() == dt::f32 && quantize_image_supported(yd[1])) {
      const int from = b.slot_of(x), out = b.define(y, out_md);
      const int64_t images = yd[0], pixels = yd[2] * yd[3];
      const bool is_signed = out_type == dt::s8;
      b.add_kernel_step(
          [images, pixels, scale, zero, is_signed](const std::unordered_map<int, dnnl::memory>& a) {
            quantize_image(static_cast<const float*>(a.at(DNNL_ARG_FROM).get_data_handle()),
                           a.at(DNNL_ARG_TO).get_data_handle(), images, pixels, scale, zero,
                           is_signed);
          },
          {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, out}},
          n.op + " " + std::string(n.view->name) + " [loom quantize image]", "loom quantize image");
      return;
    }
  }
  int from = b.slot_of(x);
  add_requantize_step(b, from, b.define(y, out_md), quantize ? 1.f / scale : scale, zero, quantize,
                      n.op + " " + std::string(n.view->name));
}

// DynamicQuantizeLinear: x (float) -> uint8 xq, scale, zero point, computed as the cpu device
// does (kernels/quantize.cpp) so both give the same bytes: the range [min(0, x), max(0, x)]
// over 255 steps, NaN skipped.
void emit_dynamic_quantize(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  int x = n.inputs[0];
  const int64_t count = g.value(x).elements();
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, b.as_plain(x, dt::f32)}};
  const int out_args[3] = {DNNL_ARG_DST, DNNL_ARG_DST_1, DNNL_ARG_DST_2};
  const dt out_types[3] = {dt::u8, dt::f32, dt::u8};
  for (size_t i = 0; i < 3; ++i) {
    int v = i < n.outputs.size() ? n.outputs[i] : -1;
    std::vector<int64_t> dims = v >= 0 ? g.value(v).dims : std::vector<int64_t>{};
    if (i == 0 && v < 0) dims = g.value(x).dims;
    args.emplace_back(out_args[i], b.define(v, plain_md(dims, out_types[i])));
  }
  b.add_kernel_step(
      [count](const std::unordered_map<int, dnnl::memory>& mem) {
        const float* xs = static_cast<const float*>(mem.at(DNNL_ARG_SRC).get_data_handle());
        auto* q = static_cast<uint8_t*>(mem.at(DNNL_ARG_DST).get_data_handle());
        float scale = 0.f;
        uint8_t zero = 0;
        dynamic_quantize(xs, count, q, scale, zero);
        *static_cast<float*>(mem.at(DNNL_ARG_DST_1).get_data_handle()) = scale;
        *static_cast<uint8_t*>(mem.at(DNNL_ARG_DST_2).get_data_handle()) = zero;
      },
      args, "DynamicQuantizeLinear " + std::string(n.view->name) + " [loom]", "loom quantize");
}

// MatMulInteger with its dynamic scales (match_dynamic): x uint8 [..., K] x int8 [K, N] ->
// float, as one inner product over [M, K] (M: x's leading extents together; row-major x and
// the result are the same bytes in 2-D), whose output scales x_scale * w_scale[c] and bias
// -x_zero * (column sums) a small step sets at run time; the bias Add, residual Add and
// activation after it are post-ops. The inner product (oneDNN's gemm_s8u8s32) ran BERT's
// 768x3072 product at M = 32 in 628 us against 724 us for the matmul primitive (AVX2, 2
// threads); x's zero point as a bias instead of oneDNN's source zero point saves 15% more.
void emit_dynamic_matmul(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const QuantizedOp& q = *n.quant;
  const std::vector<int64_t>& xd = g.value(q.x).dims;
  const std::vector<int64_t>& wd = g.value(q.w).dims;
  const std::vector<int64_t>& yd = g.value(q.y).dims;
  const int64_t k = wd[0], cols = wd[1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < xd.size(); ++i) rows *= xd[i];
  const int64_t scale_count = static_cast<int64_t>(q.wq.scale.size());
  int scales = b.define(-1, plain_md({scale_count}, dt::f32));
  int bias = b.define(-1, plain_md({cols}, dt::f32));
  std::vector<int32_t> column_sums(static_cast<size_t>(cols), 0);
  const auto* wv = static_cast<const int8_t*>(g.value(q.w).data);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < cols; ++c) column_sums[static_cast<size_t>(c)] += wv[r * cols + c];
  std::vector<float> wscale = q.wq.scale;
  b.add_kernel_step(
      [wscale, column_sums](const std::unordered_map<int, dnnl::memory>& mem) {
        float xs = *static_cast<const float*>(mem.at(DNNL_ARG_SRC).get_data_handle());
        uint8_t xz = *static_cast<const uint8_t*>(mem.at(DNNL_ARG_SRC_1).get_data_handle());
        auto* s = static_cast<float*>(mem.at(DNNL_ARG_DST).get_data_handle());
        for (size_t c = 0; c < wscale.size(); ++c) s[c] = xs * wscale[c];
        auto* bias = static_cast<float*>(mem.at(DNNL_ARG_DST_1).get_data_handle());
        for (size_t c = 0; c < column_sums.size(); ++c)
          bias[c] = -static_cast<float>(static_cast<int64_t>(xz) * column_sums[c]);
      },
      {{DNNL_ARG_SRC, b.slot_of(q.dynamic_scale)},
       {DNNL_ARG_SRC_1, b.slot_of(q.dynamic_zero)},
       {DNNL_ARG_DST, scales},
       {DNNL_ARG_DST_1, bias}},
      "MatMulInteger " + std::string(n.view->name) + " scales [loom]", "loom quantize scales");

  dnnl::memory::desc src_md = plain_md({rows, k}, dt::u8), w_any({cols, k}, dt::s8, tag::any),
                     dst_md = plain_md({rows, cols}, dt::f32);
  std::vector<FusionCandidate> cands = b.fusion_candidates(node, q.y);
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].kind == FusionCandidate::Kind::kSum) cands.resize(i);
  std::vector<std::pair<int, int>> post_args;
  auto [pd, fused] = create_with_post_ops<dnnl::inner_product_forward::primitive_desc>(
      b, cands, 2,
      [&](const dnnl::primitive_attr& attr, size_t) {
        dnnl::primitive_attr a = attr;  // the same attribute object, completed here
        a.set_output_scales(scale_count == 1 ? 0 : 1 << 1, {DNNL_RUNTIME_F32_VAL});
        return dnnl::inner_product_forward::primitive_desc(
            dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, src_md, w_any,
                                              plain_md({cols}, dt::f32), dst_md),
            a, b.engine());
      },
      post_args);
  // ONNX's [K, N] weight bytes seen as the inner product's [N, K].
  dnnl::memory::desc w_view({cols, k}, dt::s8, dnnl::memory::dims{1, cols});
  std::vector<std::pair<int, int>> args{
      {DNNL_ARG_SRC, b.view(b.as_plain(q.x), src_md)},
      {DNNL_ARG_WEIGHTS, b.constant_slot(g.value(q.w).data, w_view, pd.weights_desc())},
      {DNNL_ARG_BIAS, bias},
      {DNNL_ARG_ATTR_OUTPUT_SCALES, scales}};
  int dst = b.define(-1, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  args.insert(args.end(), post_args.begin(), post_args.end());
  b.absorb(cands, fused, dst);
  // The result (or the last fused follower's) in its own shape, over the same bytes.
  int result = fused ? cands[fused - 1].out_value : q.y;
  b.alias(result, dst, plain_md(fused ? g.value(result).dims : yd, dt::f32));
  b.add_step(
      dnnl::inner_product_forward(pd), args,
      node_label(n, std::string(pd.impl_info_str()) + ", " + std::to_string(fused) + " post-ops"));
}

}  // namespace

void emit_quantized(Builder& b, int node) {
  const IrNode& n = b.ir().nodes[node];
  if (n.op == "QuantizeLinear" || n.op == "DequantizeLinear") return emit_requantize(b, node);
  if (n.op == "DynamicQuantizeLinear") return emit_dynamic_quantize(b, node);
  if (n.quant && n.quant->dynamic_scale >= 0) return emit_dynamic_matmul(b, node);
  if (!n.quant)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: " + n.op + " node '" + n.view->name +
                                          "' has parameters its int8 primitives cannot take");
  if (n.op == "Conv" || n.op == "QLinearConv") return emit_quantized_conv(b, node);
  emit_quantized_matmul(b, node);
}

namespace {

std::string check_quantized(const loom_graph_t& graph, const loom_node_t& node) {
  return why_quantized_unsupported(graph, node).value_or("");
}

}  // namespace

LOOM_ONEDNN_OP("QuantizeLinear", check_quantized, emit_quantized);
LOOM_ONEDNN_OP("DequantizeLinear", check_quantized, emit_quantized);
LOOM_ONEDNN_OP("QLinearConv", check_quantized, emit_quantized);
LOOM_ONEDNN_OP("QLinearMatMul", check_quantized, emit_quantized);
LOOM_ONEDNN_OP("DynamicQuantizeLinear", check_quantized, emit_quantized);
LOOM_ONEDNN_OP("MatMulInteger", check_quantized, emit_quantized);
LOOM_ONEDNN_OP("Cast", check_quantized, emit_quantized);

}  // namespace loom::onednn
