// Conv (1-D and 2-D, grouped, strided, dilated, padded) and BatchNormalization. On a GPU a Conv
// runs as a shared-memory tiled implicit GEMM (shaders/conv_gemm.comp); on CPU implementations
// (lavapipe) as a register-blocked kernel without barriers (conv_blocked.comp, 3x faster there);
// depthwise convolutions have nothing to tile and run directly (conv_direct.comp). A
// BatchNormalization right after a Conv with constant weights is folded into them at compile time;
// a following activation runs in the kernel's epilogue.
#include <algorithm>
#include <cmath>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

struct ConvShape {
  int64_t n, c, h, w, k, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw, groups;
};

// Geometry from the attributes and the (static) shapes of X, W and Y.
ConvShape conv_shape(const loom_node_t& node, const std::vector<int64_t>& x,
                     const std::vector<int64_t>& w, const std::vector<int64_t>& y) {
  sdk::Attributes a(node);
  bool one_d = x.size() == 3;
  ConvShape s{};
  s.n = x[0];
  s.c = x[1];
  s.h = one_d ? 1 : x[2];
  s.w = x.back();
  s.k = w[0];
  s.kh = one_d ? 1 : w[2];
  s.kw = w.back();
  s.oh = one_d ? 1 : y[2];
  s.ow = y.back();
  s.groups = a.get_int("group", 1);
  size_t sp = one_d ? 1 : 2;
  auto ints = [&](const char* name, int64_t fallback) {
    std::vector<int64_t> v(sp, fallback);
    if (auto given = a.get_ints(name))
      for (size_t i = 0; i < sp && i < given->size(); ++i) v[i] = (*given)[i];
    return v;
  };
  auto strides = ints("strides", 1), dil = ints("dilations", 1);
  std::vector<int64_t> in = {s.h, s.w}, out = {s.oh, s.ow}, ker = {s.kh, s.kw};
  if (one_d) in = {s.w}, out = {s.ow}, ker = {s.kw};
  const std::vector<int64_t> pads =
      sdk::window_pads(a, in, out, ker, strides, dil, std::string("Conv node '") + node.name + "'")
          .begin;
  if (one_d) {
    s.sh = 1, s.dh = 1, s.pt = 0;
    s.sw = strides[0], s.dw = dil[0], s.pl = pads[0];
  } else {
    s.sh = strides[0], s.sw = strides[1], s.dh = dil[0], s.dw = dil[1];
    s.pt = pads[0], s.pl = pads[1];
  }
  return s;
}

std::string check_conv(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  const loom_value_info_t* w = sdk::node_input(graph, node, 1);
  const loom_value_info_t* b = sdk::node_input(graph, node, 2);
  for (auto [v, role] : {std::pair{x, "input X"}, {w, "weights"}})
    if (auto r = require_dtype(v, role, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (b)
    if (auto r = require_dtype(b, "bias", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (x->rank != 3 && x->rank != 4)
    return "vulkan runs 1-D and 2-D convolutions; input rank is " + std::to_string(x->rank);
  if (w->rank != x->rank) return "weights rank differs from the input rank";
  sdk::Attributes a(node);
  int64_t groups = a.get_int("group", 1);
  if (groups < 1) return "group must be positive";
  if (x->dims[1] >= 0 && x->dims[1] % groups) return "input channels are not divisible by group";
  if (w->dims[0] >= 0 && w->dims[0] % groups) return "output channels are not divisible by group";
  return "";
}

// A BatchNormalization in inference mode with constant parameters: per-channel scale and shift.
std::optional<std::pair<std::vector<float>, std::vector<float>>> batchnorm_affine(
    const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string(node.op_type) != "BatchNormalization" || node.num_inputs < 5) return std::nullopt;
  sdk::Attributes a(node);
  if (a.get_int("training_mode", 0) != 0) return std::nullopt;
  for (size_t o = 1; o < node.num_outputs; ++o)
    if (node.outputs[o] >= 0) return std::nullopt;
  auto scale = constant_floats(sdk::node_input(graph, node, 1));
  auto bias = constant_floats(sdk::node_input(graph, node, 2));
  auto mean = constant_floats(sdk::node_input(graph, node, 3));
  auto var = constant_floats(sdk::node_input(graph, node, 4));
  if (!scale || !bias || !mean || !var) return std::nullopt;
  size_t c = scale->size();
  if (bias->size() != c || mean->size() != c || var->size() != c) return std::nullopt;
  float eps = a.get_float("epsilon", 1e-5f);
  std::vector<float> s(c), t(c);
  for (size_t i = 0; i < c; ++i) {
    s[i] = (*scale)[i] / std::sqrt((*var)[i] + eps);
    t[i] = (*bias)[i] - (*mean)[i] * s[i];
  }
  return std::pair{s, t};
}

void build_conv(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& w = b.input(node, 1);
  const TensorInfo* bias = b.has_input(node, 2) ? &b.input(node, 2) : nullptr;
  const TensorInfo& y0 = b.output(node, 0);
  ConvShape s = conv_shape(node, x.dims, w.dims, y0.dims);
  if (s.c % s.groups || s.k % s.groups || w.dims[1] * s.groups != s.c)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string("Conv node '") + node.name +
                                            "': weights do not match the input channels and group");
  Loc w_loc = w.loc;
  Loc b_loc = bias ? bias->loc : w.loc;
  bool has_bias = bias != nullptr;

  // Fold a following BatchNormalization into constant weights.
  const loom_node_t* after = &node;
  auto w_const = constant_floats(w.info);
  auto b_const = bias ? constant_floats(bias->info)
                      : std::optional<std::vector<float>>(std::vector<float>(s.k, 0.0f));
  if (const loom_node_t* next = b.sole_consumer(node); next && w_const && b_const) {
    if (auto bn = batchnorm_affine(b.graph(), *next); bn && bn->first.size() == size_t(s.k)) {
      std::vector<float> wf = *w_const, bf = *b_const;
      size_t per = wf.size() / s.k;
      for (int64_t k = 0; k < s.k; ++k) {
        for (size_t i = 0; i < per; ++i) wf[k * per + i] *= bn->first[k];
        bf[k] = bf[k] * bn->first[k] + bn->second[k];
      }
      w_loc = b.upload_floats(wf);
      b_loc = b.upload_floats(bf);
      has_bias = true;
      b.absorb(*next);
      after = next;
    }
  }
  auto [epilogue, y] = b.fuse_activation(*after);
  std::vector<uint32_t> spec = {0,
                                u32(s.n, "N"),
                                u32(s.c, "C"),
                                u32(s.h, "H"),
                                u32(s.w, "W"),
                                u32(s.k, "K"),
                                u32(s.oh, "OH"),
                                u32(s.ow, "OW"),
                                u32(s.kh, "KH"),
                                u32(s.kw, "KW"),
                                u32(s.sh, "stride"),
                                u32(s.sw, "stride"),
                                u32(s.pt, "pad"),
                                u32(s.pl, "pad"),
                                u32(s.dh, "dilation"),
                                u32(s.dw, "dilation"),
                                u32(s.groups, "group"),
                                has_bias ? 1u : 0u,
                                epilogue.op,
                                float_bits(epilogue.alpha),
                                float_bits(epilogue.beta)};
  std::vector<Loc> bindings = {x.loc, w_loc, b_loc, y->loc};
  int64_t cg = s.c / s.groups;
  if (cg == 1) {
    b.dispatch_1d("conv_direct", spec, bindings, static_cast<uint64_t>(y->elements()));
    return;
  }
  int64_t m = s.k / s.groups, n = s.oh * s.ow;
  if (b.context().cpu_like()) {
    b.dispatch_1d("conv_blocked", spec, bindings,
                  static_cast<uint64_t>(s.n * s.groups * ((m + 3) / 4) * ((n + 31) / 32) * 8));
    return;
  }
  b.dispatch("conv_gemm", spec, bindings,
             {u32((n + 63) / 64, "groups"), u32((m + 31) / 32, "groups"),
              u32(s.n * s.groups, "batch x groups")});
}

// ---- standalone BatchNormalization ---------------------------------------------------------

std::string check_batchnorm(const loom_graph_t& graph, const loom_node_t& node) {
  if (auto r = require_dtype(sdk::node_input(graph, node, 0), "input", {LOOM_DTYPE_FLOAT32});
      !r.empty())
    return r;
  if (auto r = require_rank(sdk::node_input(graph, node, 0), "input", 16); !r.empty()) return r;
  if (!batchnorm_affine(graph, node))
    return "vulkan runs BatchNormalization in inference mode with constant parameters only";
  return "";
}

void build_batchnorm(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  auto bn = *batchnorm_affine(b.graph(), node);
  auto [epilogue, y] = b.fuse_activation(node);
  int64_t c = x.rank() >= 2 ? x.dims[1] : 1;
  int64_t inner = 1;
  for (int i = 2; i < x.rank(); ++i) inner *= x.dims[i];
  if (static_cast<int64_t>(bn.first.size()) != c)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string("BatchNormalization node '") + node.name +
                                            "': parameters do not match the channels");
  Loc s = b.upload_floats(bn.first);
  Loc t = b.upload_floats(bn.second);
  b.dispatch_1d("scale_shift",
                {0, u32(y->elements(), "elements"), u32(c, "channels"), u32(inner, "inner"),
                 epilogue.op, float_bits(epilogue.alpha), float_bits(epilogue.beta)},
                {x.loc, s, t, y->loc}, static_cast<uint64_t>(y->elements()));
}

}  // namespace

void add_conv_ops(OpTable& t) {
  t.add("Conv", {check_conv, build_conv});
  t.add("BatchNormalization", {check_batchnorm, build_batchnorm});
}

}  // namespace loom::vulkan
