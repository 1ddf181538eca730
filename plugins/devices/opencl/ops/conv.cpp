// Conv (1-D and 2-D, NCHW): depthwise convolutions run directly; 1x1 convolutions are one
// GEMM over the image (weights x pixels); everything else, grouped included, is im2col into
// scratch memory followed by a batched GEMM over the groups. A BatchNormalization after the
// Conv is folded into its weights and bias at compile time, and a Relu/Clip after it into the
// GEMM's epilogue.
#include <cmath>
#include <cstring>
#include <loom/op_semantics.hpp>

#include "ops.hpp"

namespace loom::opencl {
namespace {

// Geometry of one convolution, 1-D lifted to 2-D (H = 1).
struct ConvGeometry {
  int64_t N, C, H, W, OC, OH, OW, KH, KW, group;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
};

std::vector<int64_t> ints_or(const NodeInfo& node, const char* name,
                             std::vector<int64_t> fallback) {
  auto v = node.attrs.get_ints(name);
  return v ? std::vector<int64_t>(v->begin(), v->end()) : fallback;
}

// The leading pad of each spatial axis, from `pads` or from auto_pad and the output size.
std::vector<int64_t> leading_pads(const NodeInfo& node, const std::vector<int64_t>& in,
                                  const std::vector<int64_t>& out, const std::vector<int64_t>& k,
                                  const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  return sdk::window_pads(node.attrs, in, out, k, s, d, node.describe()).begin;
}

ConvGeometry geometry(Executable& exe, const NodeInfo& node) {
  const std::vector<int64_t>& x = exe.value(node.input_id(0)).shape;
  const std::vector<int64_t>& w = exe.value(node.input_id(1)).shape;
  const std::vector<int64_t>& y = exe.value(node.output_id(0)).shape;
  size_t r = x.size() - 2;
  std::vector<int64_t> in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end());
  std::vector<int64_t> k(w.begin() + 2, w.end());
  std::vector<int64_t> s = ints_or(node, "strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> d = ints_or(node, "dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> p = leading_pads(node, in, out, k, s, d);
  ConvGeometry g;
  g.N = x[0];
  g.C = x[1];
  g.OC = y[1];
  g.group = node.attrs.get_int("group", 1);
  if (r == 1) {
    g.H = 1, g.W = in[0], g.OH = 1, g.OW = out[0], g.KH = 1, g.KW = k[0];
    g.sw = s[0], g.dw = d[0], g.pl = p[0];
  } else {
    g.H = in[0], g.W = in[1], g.OH = out[0], g.OW = out[1], g.KH = k[0], g.KW = k[1];
    g.sh = s[0], g.sw = s[1], g.dh = d[0], g.dw = d[1], g.pt = p[0], g.pl = p[1];
  }
  if (g.group <= 0 || g.C % g.group || g.OC % g.group || w[1] * g.group != g.C)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": group " + std::to_string(g.group) +
                                            " does not divide the channels");
  return g;
}

std::string check_conv(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  const loom_value_info_t* x = node.input(0);
  const loom_value_info_t* w = node.input(1);
  if (x && x->rank >= 0 && x->rank != 3 && x->rank != 4)
    return "only 1-D and 2-D convolutions are implemented on opencl";
  if (w && x && w->rank >= 0 && x->rank >= 0 && w->rank != x->rank)
    return "weights and input ranks differ";
  return "";
}

// Weights and bias after folding a BatchNormalization into them (when fused).
void fold_batch_norm(Executable& exe, const NodeInfo& conv, const NodeInfo& bn, int& weights,
                     int& bias) {
  const Value& w = exe.value(weights);
  int64_t oc = w.shape[0];
  std::vector<float> wd = *conv.constant_floats(1);
  std::vector<float> bd = conv.input(2) ? *conv.constant_floats(2) : std::vector<float>(oc, 0.0f);
  std::vector<float> scale = *bn.constant_floats(1), shift = *bn.constant_floats(2);
  std::vector<float> mean = *bn.constant_floats(3), var = *bn.constant_floats(4);
  float eps = bn.attrs.get_float("epsilon", 1e-5f);
  if (static_cast<int64_t>(scale.size()) != oc || shift.size() != scale.size() ||
      mean.size() != scale.size() || var.size() != scale.size() ||
      static_cast<int64_t>(bd.size()) != oc)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              bn.describe() + ": parameters must hold " + std::to_string(oc) + " values");
  int64_t per = static_cast<int64_t>(wd.size()) / oc;
  for (int64_t c = 0; c < oc; ++c) {
    float a = scale[c] / std::sqrt(var[c] + eps);
    for (int64_t i = 0; i < per; ++i) wd[c * per + i] *= a;
    bd[c] = (bd[c] - mean[c]) * a + shift[c];
  }
  weights = exe.add_float_constant(w.shape, wd);
  bias = exe.add_float_constant({oc}, bd);
}

void lower_conv(Executable& exe, const NodeInfo& node, const Fusion& fusion) {
  ConvGeometry g = geometry(exe, node);
  int x = node.input_id(0), weights = node.input_id(1);
  int bias = node.input(2) ? node.input_id(2) : -1;
  if (fusion.batch_norm >= 0) {
    NodeInfo bn(exe.graph(), *exe.graph().nodes[fusion.batch_norm]);
    fold_batch_norm(exe, node, bn, weights, bias);
  }
  int y = fusion.output;
  std::string label = node.describe();
  int64_t cg = g.C / g.group, ocg = g.OC / g.group;
  int64_t pixels = g.OH * g.OW;

  if (g.group == g.C && cg == 1) {
    int64_t n = g.N * g.OC * pixels;
    KernelCall(exe, "conv_depthwise", label)
        .buffer(x)
        .buffer(weights)
        .buffer(bias >= 0 ? bias : weights)
        .i32(bias >= 0 ? 1 : 0)
        .buffer(y)
        .i32(n)
        .i32(g.C)
        .i32(g.H)
        .i32(g.W)
        .i32(g.OC)
        .i32(g.OH)
        .i32(g.OW)
        .i32(g.KH)
        .i32(g.KW)
        .i32(g.sh)
        .i32(g.sw)
        .i32(g.pt)
        .i32(g.pl)
        .i32(g.dh)
        .i32(g.dw)
        .f32(fusion.act_min)
        .f32(fusion.act_max)
        .launch_1d(n);
    return;
  }

  GemmCall gemm;
  gemm.M = ocg;
  gemm.N = pixels;
  gemm.K = cg * g.KH * g.KW;
  gemm.a = weights;
  gemm.sab = ocg * gemm.K;
  gemm.sam = gemm.K;
  gemm.sak = 1;
  gemm.c = y;
  gemm.scb = ocg * pixels;
  gemm.ldc = pixels;
  gemm.bias = bias;
  gemm.sqb = ocg;
  gemm.sqm = 1;
  gemm.sqn = 0;
  gemm.act_min = fusion.act_min;
  gemm.act_max = fusion.act_max;

  bool pointwise = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
                   g.OH == g.H && g.OW == g.W;
  if (pointwise && g.group == 1) {
    // The image already is the [C, H*W] right-hand matrix; the batch is the GEMM batch.
    gemm.b = x;
    gemm.sbb = g.C * g.H * g.W;
    gemm.sbk = pixels;
    gemm.sbn = 1;
    gemm.batch = g.N;
    gemm.sab = 0;
    gemm.scb = g.OC * pixels;
    gemm.sqb = 0;
    emit_gemm(exe, gemm, label);
    return;
  }
  int64_t rows = g.C * g.KH * g.KW;
  int col = exe.add_scratch(LOOM_DTYPE_FLOAT32, {rows, pixels});
  for (int64_t b = 0; b < g.N; ++b) {
    KernelCall(exe, "im2col", label)
        .buffer(x, b * g.C * g.H * g.W)
        .buffer(col)
        .i32(rows * g.OH)
        .i32(g.H)
        .i32(g.W)
        .i32(g.KH)
        .i32(g.KW)
        .i32(g.OH)
        .i32(g.OW)
        .i32(g.sh)
        .i32(g.sw)
        .i32(g.pt)
        .i32(g.pl)
        .i32(g.dh)
        .i32(g.dw)
        .launch_1d(rows * g.OH);
    GemmCall one = gemm;
    one.batch = g.group;
    one.b = col;
    one.sbb = gemm.K * pixels;
    one.sbk = pixels;
    one.sbn = 1;
    one.c_extra = b * g.OC * pixels;
    emit_gemm(exe, one, label);
  }
}

}  // namespace

bool foldable_batch_norm(const NodeInfo& node) {
  if (node.attrs.get_int("training_mode", 0) != 0 || node.present_outputs() != 1) return false;
  const loom_value_info_t* y = node.output(0);
  if (!y || y->dtype != LOOM_DTYPE_FLOAT32) return false;
  for (size_t i = 1; i <= 4; ++i)
    if (!node.constant_floats(i)) return false;
  return true;
}

// The Conv's weights (and bias) must be constants for a BatchNormalization to fold into it.
bool conv_accepts_batch_norm(const NodeInfo& conv) {
  return conv.constant_floats(1) && (!conv.input(2) || conv.constant_floats(2));
}

void add_conv_ops(OpTable& table) {
  table.add("Conv", {check_conv, lower_conv});
}

}  // namespace loom::opencl
