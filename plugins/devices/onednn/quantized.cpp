// Quantized models on the onednn device: which quantization nodes it claims, and the rewrite
// that turns quantized patterns into int8 primitives (ops_quant.cpp emits them).
//
// Two encodings reach it. QDQ models (onnxruntime's quantize_static with QuantFormat.QDQ,
// most exporters) keep float ops between DequantizeLinear and QuantizeLinear nodes:
//   x_q -> DequantizeLinear -> Conv(w = DequantizeLinear(w_q)) -> [Relu] -> QuantizeLinear -> y_q
// QOperator models use QLinearConv / QLinearMatMul. Both become one int8 primitive: the source
// keeps its uint8/int8 bytes and zero point, the weights are reordered once as int8, the bias
// is added in the accumulator's scale and the requantization (x_scale * w_scale / y_scale per
// output channel, y's zero point) is the primitive's output scaling. What stays float (an Add
// of two dequantized tensors, pooling) runs on float tensors that DequantizeLinear and
// QuantizeLinear reorders make, as the graph says.
//
// Numerics: oneDNN rounds the scaled accumulator after adding y's zero point (ONNX rounds
// before), so an exact tie can land one step apart; without VNNI (AVX2, AVX-512 before
// Cascade Lake) oneDNN sums pairs of uint8 x int8 products in 16 bits with saturation
// (VPMADDUBSW), as onnxruntime's own kernels do on those CPUs (docs/onednn-device.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "ir.hpp"

namespace loom::onednn {

namespace {

// True where oneDNN multiplies int8 (signed) sources exactly: with VNNI or AMX. Without them
// its int8-source kernels halve the weights (convolution: odd weights lose their low bit) or
// shift the source by 128 into VPMADDUBSW's saturating pair sums (gemm), tens of steps off
// (tests/devices/onednn/quantized_test.cpp measured both on AVX2). There, a QDQ graph with
// int8 activations runs in float on this device, a QLinearConv with int8 inputs (TFLite's
// int8 models) in its float form (QuantizedOp::float_form), and a QLinearMatMul with int8
// inputs is left to the cpu device.
bool exact_signed_source() {
  static const bool exact = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx2_vnni:
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx:
        return true;
      default:
        return false;
    }
  }();
  return exact;
}

int64_t elements(Info v) {
  return v->rank < 0 ? -1 : sdk::element_count(v->rank, v->dims);
}

bool int8_type(loom_dtype_t t) {
  return t == LOOM_DTYPE_UINT8 || t == LOOM_DTYPE_INT8;
}

const loom_node_t* producer(const loom_graph_t& graph, int32_t value) {
  if (value < 0) return nullptr;
  for (size_t k = 0; k < graph.num_nodes; ++k)
    for (size_t i = 0; i < graph.nodes[k]->num_outputs; ++i)
      if (graph.nodes[k]->outputs[i] == value) return graph.nodes[k];
  return nullptr;
}

// "" when a scale/zero-point pair is constant, float scales positive and finite, per tensor or
// (when `per_axis_ok`) one per slice of input `data_input` along `axis` (< 0: the node's axis
// attribute, default 1).
std::string check_params(const loom_graph_t& graph, const loom_node_t& node, size_t scale_input,
                         bool per_axis_ok, size_t data_input = 0, int64_t axis = -1) {
  Info scale = sdk::node_input(graph, node, scale_input);
  Info zero = sdk::node_input(graph, node, scale_input + 1);
  if (!is_constant(scale) || scale->dtype != LOOM_DTYPE_FLOAT32)
    return "the scale is not a float32 constant";
  if (zero && !is_constant(zero)) return "the zero point is not a constant";
  int64_t count = elements(scale);
  if (count != 1 && !per_axis_ok) return "a scale per channel on an activation";
  if (zero && elements(zero) != count) return "zero points and scales differ in count";
  if (static_cast<int64_t>(scale->data_size) < count * 4) return "a scale tensor short of data";
  if (count != 1) {
    Info x = sdk::node_input(graph, node, data_input);
    if (axis < 0) axis = sdk::Attributes(node).get_int("axis", 1);
    if (x && x->rank >= 0 && axis < 0) axis += x->rank;
    if (!x || axis < 0 || axis >= x->rank || x->dims[axis] != count)
      return "scales that do not match the extent of their axis";
  }
  const auto* s = static_cast<const float*>(scale->data);
  for (int64_t i = 0; i < count; ++i)
    if (!(s[i] > 0.f) || !std::isfinite(s[i])) return "a scale that is not positive and finite";
  return "";
}

bool zero_points_zero(Info zero) {
  if (!zero) return true;
  const auto* bytes = static_cast<const unsigned char*>(zero->data);
  return std::all_of(bytes, bytes + zero->data_size, [](unsigned char b) { return b == 0; });
}

QuantParams read_params(const IrGraph& g, int scale, int zero, int64_t axis, loom_dtype_t dtype) {
  QuantParams p;
  p.scale = constant_floats(g, scale);
  p.dtype = dtype;
  p.axis = axis;
  if (zero >= 0) {
    const IrValue& z = g.value(zero);
    p.dtype = z.dtype;
    for (int64_t i = 0; i < z.elements(); ++i) {
      if (z.dtype == LOOM_DTYPE_UINT8)
        p.zero.push_back(static_cast<const uint8_t*>(z.data)[i]);
      else if (z.dtype == LOOM_DTYPE_INT8)
        p.zero.push_back(static_cast<const int8_t*>(z.data)[i]);
      else if (z.dtype == LOOM_DTYPE_INT32)
        p.zero.push_back(static_cast<const int32_t*>(z.data)[i]);
      else
        sdk::fail(LOOM_ERROR_UNSUPPORTED,
                  "onednn: zero point of type " + std::string(sdk::dtype_name(z.dtype)));
    }
  }
  p.zero.resize(p.scale.size(), 0);
  return p;
}

// The parameters of DequantizeLinear/QuantizeLinear node `n` (inputs x, scale, zero point).
QuantParams node_params(const IrGraph& g, const IrNode& n, loom_dtype_t dtype) {
  int64_t axis = n.view ? sdk::Attributes(*n.view).get_int("axis", 1) : 1;
  int rank = static_cast<int>(g.value(n.inputs[0]).dims.size());
  if (axis < 0) axis += rank;
  return read_params(g, n.inputs[1], g.in(n, 2), axis, dtype);
}

bool constant_params(const IrGraph& g, const IrNode& n) {
  int scale = g.in(n, 1), zero = g.in(n, 2);
  return scale >= 0 && g.value(scale).constant() && (zero < 0 || g.value(zero).constant());
}

// The DequantizeLinear node making `value`, or -1.
int dequantizer(const IrGraph& g, int value) {
  if (value < 0) return -1;
  int p = g.value(value).producer;
  if (p < 0 || g.nodes[p].absorbed || g.nodes[p].op != "DequantizeLinear") return -1;
  return constant_params(g, g.nodes[p]) ? p : -1;
}

// The real values of a constant quantized tensor (int8, uint8 or int32 data).
std::vector<float> dequantize_constant(const IrGraph& g, int value, const QuantParams& p) {
  const IrValue& v = g.value(value);
  const std::vector<int64_t>& d = v.dims;
  int64_t n = v.elements(), inner = 1, channels = 1;
  if (!p.per_tensor()) {
    if (p.axis < 0 || p.axis >= static_cast<int64_t>(d.size()) ||
        d[static_cast<size_t>(p.axis)] != static_cast<int64_t>(p.scale.size()))
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                "onednn: the scales of '" + v.name + "' do not match the extent of their axis");
    channels = d[static_cast<size_t>(p.axis)];
    for (size_t i = static_cast<size_t>(p.axis) + 1; i < d.size(); ++i) inner *= d[i];
  }
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    size_t c = p.per_tensor() ? 0 : static_cast<size_t>((i / inner) % channels);
    double q = v.dtype == LOOM_DTYPE_UINT8  ? static_cast<const uint8_t*>(v.data)[i]
               : v.dtype == LOOM_DTYPE_INT8 ? static_cast<const int8_t*>(v.data)[i]
                                            : static_cast<const int32_t*>(v.data)[i];
    out[static_cast<size_t>(i)] = static_cast<float>((q - p.zero[c]) * p.scale[c]);
  }
  return out;
}

// Weights `w` of an op whose output channels lie along `channel_axis` of w: constant int8 with
// zero points 0, per tensor or per output channel. Fills `op.w`/`op.wq` from a DequantizeLinear
// (`dq` >= 0) or from QLinear inputs (scale and zero point values).
bool take_weights(const IrGraph& g, int w, int scale, int zero, int64_t axis, int64_t channel_axis,
                  QuantizedOp& op) {
  const IrValue& wv = g.value(w);
  if (!wv.constant() || wv.dtype != LOOM_DTYPE_INT8) return false;
  if (scale < 0 || !g.value(scale).constant() || (zero >= 0 && !g.value(zero).constant()))
    return false;
  int rank = static_cast<int>(wv.dims.size());
  if (axis < 0) axis += rank;
  op.wq = read_params(g, scale, zero, axis, LOOM_DTYPE_INT8);
  if (!std::all_of(op.wq.zero.begin(), op.wq.zero.end(), [](int32_t z) { return z == 0; }))
    return false;  // oneDNN's int8 primitives take no weight zero point
  if (!op.wq.per_tensor() && (axis != channel_axis || static_cast<int64_t>(op.wq.scale.size()) !=
                                                          wv.dims.at(static_cast<size_t>(axis))))
    return false;
  op.w = w;
  return true;
}

bool activation_params_ok(const QuantParams& p) {
  return p.per_tensor() && int8_type(p.dtype);
}

// The QuantizeLinear reading `value` alone, after an optional Relu: (relu, quantize) node
// indices, quantize -1 when there is none with per-tensor constant parameters.
std::pair<int, int> quantizer_after(const IrGraph& g, int value) {
  int next = g.sole_consumer(value), relu = -1;
  if (next >= 0 && g.nodes[next].op == "Relu") {
    relu = next;
    next = g.sole_consumer(g.nodes[relu].outputs[0]);
  }
  if (next < 0 || g.nodes[next].op != "QuantizeLinear" || !constant_params(g, g.nodes[next]) ||
      g.nodes[next].outputs.empty() || g.nodes[next].outputs[0] < 0)
    return {relu, -1};
  if (!activation_params_ok(node_params(g, g.nodes[next], LOOM_DTYPE_UINT8))) return {relu, -1};
  return {relu, next};
}

void fold(IrGraph& g, int into, std::initializer_list<int> nodes) {
  for (int k : nodes)
    if (k >= 0) {
      g.nodes[k].absorbed = true;
      g.nodes[into].folded.push_back(k);
    }
}

// After take_output (QDQ) or match_qlinear (QLinearConv, TFLite's int8 residual ADD): y_q ->
// DequantizeLinear -> Add(., DequantizeLinear(r)) -> [Relu] -> QuantizeLinear, with r of y's
// type and shape, becomes a sum into the conv's result (blazeface int8: 11 of 16 residual ADDs
// had r made after the conv; see below).
void take_residual(IrGraph& g, int node, QuantizedOp& op) {
  int d3 = sole_reader(g, op.y, "DequantizeLinear");
  if (d3 < 0 || !constant_params(g, g.nodes[d3])) return;
  // It must undo the conv's own QuantizeLinear (which stays, as post-ops before the sum).
  QuantParams back = node_params(g, g.nodes[d3], g.value(op.y).dtype);
  if (back.scale != op.yq->scale || back.zero != op.yq->zero) return;
  int add = sole_reader(g, g.nodes[d3].outputs[0], "Add");
  if (add < 0) return;
  int other = other_input(g.nodes[add], g.nodes[d3].outputs[0]);
  int dr = dequantizer(g, other);
  if (dr < 0) return;
  int r = g.nodes[dr].inputs[0];
  const IrValue& rv = g.value(r);
  // A residual made after this node (TFLite puts a block's shortcut Pad after its last
  // convolution; ResNet's other branch may come later) defers the node to the residual's
  // producer, which changes no result: nothing but d3 reads y, and the node's inputs are older.
  if (rv.constant() || rv.dtype != g.value(op.y).dtype || rv.dims != g.value(op.y).dims ||
      g.value(g.nodes[add].outputs[0]).dims != rv.dims)
    return;
  QuantParams rq = node_params(g, g.nodes[dr], rv.dtype);
  if (!activation_params_ok(rq)) return;
  auto [relu, q] = quantizer_after(g, g.nodes[add].outputs[0]);
  if (q < 0 || g.value(g.nodes[q].outputs[0]).dtype != g.value(op.y).dtype) return;
  op.residual = r;
  op.rq = rq;
  op.relu_after_sum = relu >= 0;
  op.sum_q = node_params(g, g.nodes[q], g.value(op.y).dtype);
  op.yq->dtype = g.value(op.y).dtype;
  if (rv.producer > node) g.nodes[node].emit_after = rv.producer;
  op.y = g.nodes[q].outputs[0];
  fold(g, node, {d3, add, relu, q});
  // The residual's DequantizeLinear stays for its other readers.
  auto& readers = g.value(g.nodes[dr].outputs[0]).consumers;
  readers.erase(std::find(readers.begin(), readers.end(), add));
  if (readers.empty() && !g.value(g.nodes[dr].outputs[0]).graph_output) fold(g, node, {dr});
  g.value(r).consumers.push_back(node);
  g.value(op.y).producer = node;
}

// Folds a QuantizeLinear (after an optional Relu) reading `node`'s float output into it.
void take_output(IrGraph& g, int node, QuantizedOp& op) {
  op.y = g.nodes[node].outputs[0];
  auto [relu, q] = quantizer_after(g, op.y);
  if (q < 0) return;
  op.yq = node_params(g, g.nodes[q], LOOM_DTYPE_UINT8);
  op.relu = relu >= 0;
  op.y = g.nodes[q].outputs[0];
  fold(g, node, {relu, q});
  g.value(op.y).producer = node;
  if (g.nodes[node].op == "Conv") take_residual(g, node, op);
}

// Conv/MatMul/Gemm `k` between DequantizeLinear nodes: its int8 form, or nullopt.
std::optional<QuantizedOp> match_qdq(IrGraph& g, int k, std::vector<int>& dequantizers) {
  IrNode& n = g.nodes[k];
  if (n.inputs.size() < 2 || n.outputs.empty() || n.outputs[0] < 0) return std::nullopt;
  if (g.value(n.outputs[0]).dtype != LOOM_DTYPE_FLOAT32) return std::nullopt;
  int dx = dequantizer(g, n.inputs[0]), dw = dequantizer(g, n.inputs[1]);
  if (dx < 0 || dw < 0) return std::nullopt;
  QuantizedOp op;
  const IrNode& xn = g.nodes[dx];
  op.x = xn.inputs[0];
  if (g.value(op.x).constant()) return std::nullopt;
  op.xq = node_params(g, xn, g.value(op.x).dtype);
  if (!activation_params_ok(op.xq) || op.xq.dtype != g.value(op.x).dtype) return std::nullopt;
  if (op.xq.dtype == LOOM_DTYPE_INT8 && !exact_signed_source()) return std::nullopt;
  const IrNode& wn = g.nodes[dw];
  sdk::Attributes attrs(*n.view);
  int64_t channel_axis = 0;  // Conv [M, C/group, k...], Gemm with transB [N, K]
  if (n.op == "MatMul") {
    if (g.value(wn.inputs[0]).dims.size() != 2) return std::nullopt;
    channel_axis = 1;  // [K, N]
  } else if (n.op == "Gemm") {
    if (attrs.get_int("transA", 0) != 0 || attrs.get_float("alpha", 1.f) != 1.f ||
        attrs.get_float("beta", 1.f) != 1.f)
      return std::nullopt;
    channel_axis = attrs.get_int("transB", 0) ? 0 : 1;
  }
  int64_t waxis = sdk::Attributes(*wn.view).get_int("axis", 1);
  if (!take_weights(g, wn.inputs[0], wn.inputs[1], g.in(wn, 2), waxis, channel_axis, op))
    return std::nullopt;
  dequantizers = {dx, dw};
  int bias = g.in(n, 2);
  if (bias >= 0) {
    int db = dequantizer(g, bias);
    if (db >= 0 && g.value(g.nodes[db].inputs[0]).constant() &&
        g.value(g.nodes[db].inputs[0]).dims.size() == 1) {
      const IrNode& bn = g.nodes[db];
      QuantParams bq = node_params(g, bn, g.value(bn.inputs[0]).dtype);
      bq.axis = 0;
      op.bias = dequantize_constant(g, bn.inputs[0], bq);
      dequantizers.push_back(db);
    } else if (g.value(bias).constant() && g.value(bias).dtype == LOOM_DTYPE_FLOAT32) {
      op.bias = constant_floats(g, bias);
    } else {
      return std::nullopt;
    }
    // One per output channel (a broadcast bias of another shape stays a float op).
    const std::vector<int64_t>& wd = g.value(op.w).dims;
    int64_t channels = n.op == "Conv" ? wd[0] : wd[static_cast<size_t>(channel_axis)];
    if (static_cast<int64_t>(op.bias.size()) != channels) return std::nullopt;
  }
  return op;
}

// The one integer of a constant int8/uint8 scalar `id`, or nullopt.
std::optional<int32_t> int8_scalar(const IrGraph& g, int id) {
  if (id < 0 || !g.value(id).constant() || g.value(id).elements() != 1) return std::nullopt;
  const IrValue& v = g.value(id);
  if (v.dtype == LOOM_DTYPE_UINT8) return *static_cast<const uint8_t*>(v.data);
  if (v.dtype == LOOM_DTYPE_INT8) return *static_cast<const int8_t*>(v.data);
  return std::nullopt;
}

// A Clip of a QLinear op's quantized result by constant bounds of its type, folded into the op.
void take_quantized_clip(IrGraph& g, int node, QuantizedOp& op) {
  int clip = sole_reader(g, op.y, "Clip");
  if (clip < 0) return;
  const IrNode& c = g.nodes[clip];
  if (c.outputs.empty() || c.outputs[0] < 0) return;
  auto lo = int8_scalar(g, g.in(c, 1)), hi = int8_scalar(g, g.in(c, 2));
  const bool u8 = g.value(op.y).dtype == LOOM_DTYPE_UINT8;
  op.clip = std::make_pair(lo.value_or(u8 ? 0 : -128), hi.value_or(u8 ? 255 : 127));
  if ((g.in(c, 1) >= 0 && !lo) || (g.in(c, 2) >= 0 && !hi)) {
    op.clip.reset();
    return;
  }
  op.y = c.outputs[0];
  fold(g, node, {clip});
  g.value(op.y).producer = node;
}

// QLinearConv (x, xs, xz, w, ws, wz, ys, yz, B) and QLinearMatMul (a, as, az, b, bs, bz, ys,
// yz): their int8 form, or nullopt.
std::optional<QuantizedOp> match_qlinear(const IrGraph& g, const IrNode& n) {
  if (n.inputs.size() < 8 || n.outputs.empty() || n.outputs[0] < 0) return std::nullopt;
  for (int i : {1, 2, 6, 7})
    if (n.inputs[static_cast<size_t>(i)] >= 0 &&
        !g.value(n.inputs[static_cast<size_t>(i)]).constant())
      return std::nullopt;
  QuantizedOp op;
  op.x = n.inputs[0];
  op.xq = read_params(g, n.inputs[1], n.inputs[2], 1, g.value(op.x).dtype);
  bool conv = n.op == "QLinearConv";
  if (conv && g.value(n.inputs[3]).dims.size() < 3) return std::nullopt;
  if (!conv && g.value(n.inputs[3]).dims.size() != 2) return std::nullopt;
  if (!take_weights(g, n.inputs[3], n.inputs[4], n.inputs[5], conv ? 0 : 1, conv ? 0 : 1, op))
    return std::nullopt;
  op.y = n.outputs[0];
  op.yq = read_params(g, n.inputs[6], n.inputs[7], 1, g.value(op.y).dtype);
  op.float_form = op.xq.dtype == LOOM_DTYPE_INT8 && !exact_signed_source();
  if (op.float_form && !conv) return std::nullopt;
  if (!activation_params_ok(op.xq) || !activation_params_ok(*op.yq)) return std::nullopt;
  int bias = g.in(n, 8);
  if (bias >= 0) {
    if (!g.value(bias).constant() || g.value(bias).dtype != LOOM_DTYPE_INT32) return std::nullopt;
    // B is int32 in the accumulator's scale, x_scale * w_scale.
    std::vector<int64_t> b = constant_ints(g, bias);
    size_t channels = b.size();
    if (static_cast<int64_t>(channels) != g.value(op.w).dims[0]) return std::nullopt;
    for (size_t c = 0; c < channels; ++c)
      op.bias.push_back(static_cast<float>(static_cast<double>(b[c]) * op.xq.scale[0] *
                                           op.wq.scale[op.wq.per_tensor() ? 0 : c]));
  }
  return op;
}

// MatMulInteger `k` in onnxruntime's dynamic quantization:
//   DynamicQuantizeLinear(x) -> (xq, xs, xz); MatMulInteger(xq, w, xz, [0]) -> Cast(float)
//   -> Mul(., Mul(xs, w_scale))
// becomes one int8 matmul with run-time output scales xs * w_scale and source zero point xz.
// The Cast and both Mul nodes are folded into it.
std::optional<QuantizedOp> match_dynamic(IrGraph& g, int k) {
  const IrNode& n = g.nodes[k];
  if (n.inputs.size() < 2 || n.outputs.empty() || n.outputs[0] < 0) return std::nullopt;
  int d = g.value(n.inputs[0]).producer;
  if (d < 0 || g.nodes[d].op != "DynamicQuantizeLinear" || g.nodes[d].outputs.size() < 3)
    return std::nullopt;
  const IrNode& dq = g.nodes[d];
  int xs = dq.outputs[1], xz = dq.outputs[2];
  if (g.in(n, 2) != xz || xz < 0 || xs < 0) return std::nullopt;
  QuantizedOp op;
  op.x = n.inputs[0];
  op.xq.scale = {1.f};
  op.xq.zero = {0};
  const IrValue& w = g.value(n.inputs[1]);
  int wz = g.in(n, 3);
  if (!w.constant() || w.dtype != LOOM_DTYPE_INT8 || w.dims.size() != 2) return std::nullopt;
  if (wz >= 0) {
    const IrValue& z = g.value(wz);
    if (!z.constant()) return std::nullopt;
    const auto* bytes = static_cast<const unsigned char*>(z.data);
    if (!std::all_of(bytes, bytes + z.data_size, [](unsigned char b) { return b == 0; }))
      return std::nullopt;
  }
  int cast = sole_reader(g, n.outputs[0], "Cast");
  if (cast < 0 || sdk::Attributes(*g.nodes[cast].view).get_int("to", 0) != LOOM_DTYPE_FLOAT32)
    return std::nullopt;
  int mul = sole_reader(g, g.nodes[cast].outputs[0], "Mul");
  if (mul < 0) return std::nullopt;
  int scales = other_input(g.nodes[mul], g.nodes[cast].outputs[0]);
  if (scales < 0 || g.sole_consumer(scales) != mul) return std::nullopt;
  int product = g.value(scales).producer;
  if (product < 0 || g.nodes[product].op != "Mul" || g.nodes[product].absorbed) return std::nullopt;
  int wscale = other_input(g.nodes[product], xs);
  if (wscale < 0 || !g.value(wscale).constant()) return std::nullopt;
  op.wq.scale = constant_floats(g, wscale);
  op.wq.zero.assign(op.wq.scale.size(), 0);
  op.wq.axis = 1;
  if (op.wq.scale.size() != 1 && static_cast<int64_t>(op.wq.scale.size()) != w.dims[1])
    return std::nullopt;
  op.w = n.inputs[1];
  op.y = g.nodes[mul].outputs[0];
  op.dynamic_scale = xs;
  op.dynamic_zero = xz;
  for (int f : {cast, mul, product}) {
    g.nodes[f].absorbed = true;
    g.nodes[k].folded.push_back(f);
  }
  g.value(op.y).producer = k;
  return op;
}

// DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale and zero point: the
// maximum commutes with the (monotonic) quantization, so the pool runs on the quantized tensor
// and the result is the same bytes.
void quantized_max_pool(IrGraph& g, int k) {
  IrNode& n = g.nodes[k];
  if (n.outputs.size() != 1 || n.outputs[0] < 0) return;
  int d = dequantizer(g, n.inputs[0]);
  if (d < 0) return;
  int r = g.nodes[d].inputs[0];
  if (g.value(r).constant()) return;
  auto [relu, q] = quantizer_after(g, n.outputs[0]);
  if (q < 0 || relu >= 0) return;
  QuantParams in = node_params(g, g.nodes[d], g.value(r).dtype);
  QuantParams out = node_params(g, g.nodes[q], g.value(g.nodes[q].outputs[0]).dtype);
  if (!activation_params_ok(in) || in.scale != out.scale || in.zero != out.zero ||
      in.dtype != out.dtype || g.value(r).dtype != in.dtype)
    return;
  int y = g.nodes[q].outputs[0];
  fold(g, k, {q});
  auto& readers = g.value(g.nodes[d].outputs[0]).consumers;
  readers.erase(std::find(readers.begin(), readers.end(), k));
  if (readers.empty() && !g.value(g.nodes[d].outputs[0]).graph_output) fold(g, k, {d});
  n.inputs[0] = r;
  g.value(r).consumers.push_back(k);
  n.outputs[0] = y;
  g.value(y).producer = k;
}

}  // namespace

// "" when MatMulInteger `node` reads a DynamicQuantizeLinear and constant int8 weights with
// zero points 0, and a Cast to float then a Mul by the scales' product follow it alone: what
// match_dynamic fuses (the Cast and Mul are claimed with it).
static std::string in_dynamic_pattern(const loom_graph_t& graph, const loom_node_t& node) {
  auto in = [&](size_t i) { return sdk::node_input(graph, node, i); };
  const loom_node_t* d = producer(graph, node.inputs[0]);
  if (!d || std::string(d->op_type) != "DynamicQuantizeLinear" || d->num_outputs < 3 ||
      node.num_inputs < 3 || node.inputs[2] != d->outputs[2])
    return "MatMulInteger not reading a DynamicQuantizeLinear with its zero point";
  Info w = in(1);
  if (!is_constant(w) || w->dtype != LOOM_DTYPE_INT8 || w->rank != 2)
    return "MatMulInteger without constant 2-D int8 weights";
  if (node.num_inputs > 3 && in(3) && (!is_constant(in(3)) || !zero_points_zero(in(3))))
    return "weights with a zero point";
  auto readers = [&](int32_t value) {
    std::vector<const loom_node_t*> r;
    for (size_t k = 0; k < graph.num_nodes; ++k)
      for (size_t i = 0; i < graph.nodes[k]->num_inputs; ++i)
        if (graph.nodes[k]->inputs[i] == value) r.push_back(graph.nodes[k]);
    return r;
  };
  auto cast = readers(node.outputs[0]);
  if (cast.size() != 1 || std::string(cast[0]->op_type) != "Cast" ||
      sdk::Attributes(*cast[0]).get_int("to", 0) != LOOM_DTYPE_FLOAT32)
    return "MatMulInteger not followed by a Cast to float alone";
  auto mul = readers(cast[0]->outputs[0]);
  if (mul.size() != 1 || std::string(mul[0]->op_type) != "Mul" || mul[0]->num_inputs != 2)
    return "MatMulInteger's Cast not followed by a Mul alone";
  int32_t scales = mul[0]->inputs[0] == cast[0]->outputs[0] ? mul[0]->inputs[1] : mul[0]->inputs[0];
  const loom_node_t* product = producer(graph, scales);
  if (!product || std::string(product->op_type) != "Mul" || product->num_inputs != 2 ||
      (product->inputs[0] != d->outputs[1] && product->inputs[1] != d->outputs[1]))
    return "MatMulInteger's result not scaled by the product of the scales";
  int32_t wscale = product->inputs[0] == d->outputs[1] ? product->inputs[1] : product->inputs[0];
  Info ws = wscale >= 0 ? graph.values[wscale] : nullptr;
  if (!is_constant(ws) || ws->dtype != LOOM_DTYPE_FLOAT32 ||
      (elements(ws) != 1 && elements(ws) != w->dims[1]))
    return "the weights' scale is not a float constant per tensor or per column";
  return "";
}

bool dequantized_constant(const loom_graph_t& graph, int32_t value) {
  const loom_node_t* p = producer(graph, value);
  if (!p || std::string(p->op_type) != "DequantizeLinear") return false;
  return is_constant(sdk::node_input(graph, *p, 0)) && check_params(graph, *p, 1, true).empty();
}

std::optional<std::string> why_quantized_unsupported(const loom_graph_t& graph,
                                                     const loom_node_t& node) {
  const std::string op = node.op_type;
  auto in = [&](size_t i) { return sdk::node_input(graph, node, i); };
  auto out = [&](size_t i) { return sdk::node_output(graph, node, i); };
  if (op == "DequantizeLinear") {
    Info x = in(0);
    if (!x || (!int8_type(x->dtype) && x->dtype != LOOM_DTYPE_INT32))
      return "DequantizeLinear of a type other than int8, uint8 or int32";
    if (sdk::Attributes(node).get_int("block_size", 0) != 0) return "blocked quantization";
    // Opset 23's output_dtype: the reorders write float32 only (the cpu device does the rest).
    int64_t output_dtype = sdk::Attributes(node).get_int("output_dtype", 0);
    if (output_dtype != 0 && output_dtype != LOOM_DTYPE_FLOAT32)
      return "DequantizeLinear to a type other than float32";
    std::string why = check_params(graph, node, 1, is_constant(x));
    if (!why.empty()) return why;
    if (!out(0) || out(0)->dtype != LOOM_DTYPE_FLOAT32) return "a result other than float32";
    return "";
  }
  if (op == "QuantizeLinear") {
    Info x = in(0), y = out(0);
    if (!x || x->dtype != LOOM_DTYPE_FLOAT32) return "QuantizeLinear of a type other than float32";
    if (!y || !int8_type(y->dtype)) return "QuantizeLinear to a type other than int8 or uint8";
    const sdk::Attributes attrs(node);
    // Opset 21's output_dtype (when y's type is not known yet) and opset 23's precision: the
    // reorders quantize to 8 bits dividing in float32; the cpu device does the rest.
    int64_t output_dtype = attrs.get_int("output_dtype", 0);
    if (output_dtype != 0 && !int8_type(static_cast<loom_dtype_t>(output_dtype)))
      return "QuantizeLinear to a type other than int8 or uint8";
    int64_t precision = attrs.get_int("precision", 0);
    if (precision != 0 && precision != LOOM_DTYPE_FLOAT32)
      return "QuantizeLinear computed in a precision other than float32";
    if (attrs.get_int("block_size", 0) != 0) return "blocked quantization";
    return check_params(graph, node, 1, false);
  }
  if (op == "QLinearConv" || op == "QLinearMatMul") {
    Info x = in(0), w = in(3), y = out(0);
    if (!x || !int8_type(x->dtype) || !y || !int8_type(y->dtype))
      return op + " of a type other than int8 or uint8";
    if (x->dtype == LOOM_DTYPE_INT8 && !exact_signed_source() && op != "QLinearConv")
      return "int8 activations without VNNI (oneDNN's kernels round or saturate them here)";
    if (!is_constant(w) || w->dtype != LOOM_DTYPE_INT8) return "the weights are not int8 constants";
    for (size_t i : {size_t{1}, size_t{6}}) {
      std::string why = check_params(graph, node, i, false);
      if (!why.empty()) return why;
    }
    std::string why = check_params(graph, node, 4, true, 3, op == "QLinearConv" ? 0 : 1);
    if (!why.empty()) return why;
    if (!zero_points_zero(in(5))) return "weights with a zero point";
    if (op == "QLinearConv") {
      if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) return "only 1D, 2D and 3D QLinearConv";
      Info b = in(8);
      if (b && (!is_constant(b) || b->dtype != LOOM_DTYPE_INT32 || elements(b) != w->dims[0]))
        return "the bias is not an int32 constant per output channel";
      int64_t group = sdk::Attributes(node).get_int("group", 1);
      if (group < 1 || w->dims[0] % group != 0) return "bad group count";
      if (elements(in(4)) != 1 && elements(in(4)) != w->dims[0]) return "a weight scale per what?";
    } else {
      if (x->rank < 2 || w->rank != 2) return "QLinearMatMul of a vector or of batched weights";
      if (elements(in(4)) != 1 && elements(in(4)) != w->dims[1]) return "a weight scale per row";
    }
    return "";
  }
  if (op == "DynamicQuantizeLinear") {
    Info x = in(0);
    if (!x || x->dtype != LOOM_DTYPE_FLOAT32)
      return "DynamicQuantizeLinear of a type other than float32";
    return "";
  }
  if (op == "MatMulInteger") return in_dynamic_pattern(graph, node);
  if (op == "Clip") {
    Info x = in(0);
    if (!x || !int8_type(x->dtype)) return std::nullopt;  // a float Clip: support.cpp
    const loom_node_t* p = producer(graph, node.inputs[0]);
    std::string from = p ? p->op_type : "";
    if (from != "QLinearConv" && from != "QLinearMatMul")
      return "Clip of an int8 tensor that no QLinearConv/QLinearMatMul made";
    if (why_quantized_unsupported(graph, *p) != std::optional<std::string>(""))
      return "Clip of an int8 tensor whose QLinear op runs elsewhere";
    for (size_t i = 1; i < 3; ++i)
      if (in(i) && (!is_constant(in(i)) || in(i)->dtype != x->dtype || elements(in(i)) != 1))
        return "Clip of an int8 tensor by bounds that are not constants of its type";
    return "";
  }
  if (op == "Cast") {
    const loom_node_t* p = producer(graph, node.inputs[0]);
    if (p && std::string(p->op_type) == "MatMulInteger" && in_dynamic_pattern(graph, *p).empty())
      return "";
    return "Cast outside a dynamically quantized MatMulInteger";
  }
  return std::nullopt;
}

void rewrite_quantized(IrGraph& g) {
  // Int8 ops, in order; the DequantizeLinear nodes they read through, per node.
  std::vector<std::vector<int>> read_through(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    IrNode& n = g.nodes[k];
    if (n.absorbed) continue;
    std::optional<QuantizedOp> op;
    std::vector<int> dequantizers;
    if (n.op == "Conv" || n.op == "MatMul" || n.op == "Gemm") {
      op = match_qdq(g, static_cast<int>(k), dequantizers);
      if (op) take_output(g, static_cast<int>(k), *op);
    } else if (n.op == "QLinearConv" || n.op == "QLinearMatMul") {
      op = match_qlinear(g, n);
      if (op) take_quantized_clip(g, static_cast<int>(k), *op);
      if (op && !op->float_form && n.op == "QLinearConv")
        take_residual(g, static_cast<int>(k), *op);
    } else if (n.op == "MaxPool" || n.op == "GlobalMaxPool") {
      quantized_max_pool(g, static_cast<int>(k));
    } else if (n.op == "MatMulInteger") {
      op = match_dynamic(g, static_cast<int>(k));
      if (op) {
        g.value(op->dynamic_scale).consumers.push_back(static_cast<int>(k));
        n.quant = std::move(op);
        continue;
      }
    }
    if (!op) continue;
    // The node now reads the quantized tensors, not the DequantizeLinear outputs.
    for (int d : dequantizers) drop_consumer(g, g.nodes[d].outputs[0], static_cast<int>(k));
    g.value(op->x).consumers.push_back(static_cast<int>(k));
    read_through[k] = dequantizers;
    n.quant = std::move(op);
  }
  // A DequantizeLinear nothing reads any more is folded into the first int8 op it fed.
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int d : read_through[k]) {
      IrNode& dn = g.nodes[d];
      const IrValue& out = g.value(dn.outputs[0]);
      if (dn.absorbed || !out.consumers.empty() || out.graph_output) continue;
      dn.absorbed = true;
      g.nodes[k].folded.push_back(d);
    }
  // DequantizeLinear of a constant left for float ops (a Gemm's weights, say): a constant.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    IrNode& n = g.nodes[k];
    if (n.absorbed || n.op != "DequantizeLinear" || !constant_params(g, n) ||
        !g.value(n.inputs[0]).constant() || n.outputs.empty() || n.outputs[0] < 0)
      continue;
    IrValue& out = g.value(n.outputs[0]);
    std::vector<float> real =
        dequantize_constant(g, n.inputs[0], node_params(g, n, g.value(n.inputs[0]).dtype));
    out.owned_data.resize(real.size() * sizeof(float));
    std::memcpy(out.owned_data.data(), real.data(), out.owned_data.size());
    out.data = out.owned_data.data();
    out.data_size = out.owned_data.size();
    out.producer = -1;
    n.absorbed = true;
  }
}

}  // namespace loom::onednn
