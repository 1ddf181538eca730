// Element-wise ops: activations through eltwise primitives and arithmetic through binary
// primitives (numpy broadcasting of the second operand), both in whatever layout their input
// already has, so a blocked conv output stays blocked through them.
#include <functional>
#include <limits>
#include <optional>

#include "builder.hpp"

namespace loom::onednn {

using alg = dnnl::algorithm;
using dt = dnnl::memory::data_type;

std::optional<EltwiseForm> eltwise_form(const IrGraph& g, const IrNode& n) {
  sdk::Attributes attrs(*n.view);
  const std::string& op = n.op;
  if (op == "Relu") return EltwiseForm{alg::eltwise_relu};
  if (op == "LeakyRelu") return EltwiseForm{alg::eltwise_relu, attrs.get_float("alpha", 0.01f)};
  if (op == "Sigmoid") return EltwiseForm{alg::eltwise_logistic};
  if (op == "Tanh") return EltwiseForm{alg::eltwise_tanh};
  if (op == "Elu") return EltwiseForm{alg::eltwise_elu, attrs.get_float("alpha", 1.f)};
  if (op == "Exp") return EltwiseForm{alg::eltwise_exp};
  if (op == "Log") return EltwiseForm{alg::eltwise_log};
  if (op == "Sqrt") return EltwiseForm{alg::eltwise_sqrt};
  if (op == "Abs") return EltwiseForm{alg::eltwise_abs};
  if (op == "Neg") return EltwiseForm{alg::eltwise_linear, -1.f, 0.f};
  if (op == "Reciprocal") return EltwiseForm{alg::eltwise_pow, 1.f, -1.f};
  if (op == "Softplus") return EltwiseForm{alg::eltwise_soft_relu};
  if (op == "Mish") return EltwiseForm{alg::eltwise_mish};
  if (op == "HardSwish") return EltwiseForm{alg::eltwise_hardswish};
  if (op == "HardSigmoid")  // max(0, min(1, alpha * x + beta))
    return EltwiseForm{alg::eltwise_linear, attrs.get_float("alpha", 0.2f),
                       attrs.get_float("beta", 0.5f), 0,
                       EltwiseStage{alg::eltwise_clip_v2, 0.f, 1.f}};
  if (op == "Swish") return EltwiseForm{alg::eltwise_swish, 1.f};  // from rewrite_patterns
  if (op == "Gelu") return EltwiseForm{alg::eltwise_gelu_erf};     // from rewrite_patterns
  if (op == "Identity" || op == "Dropout") return std::nullopt;
  if (op == "Pow") {
    auto p = scalar_constant(g, g.in(n, 1));
    if (!p) return std::nullopt;
    return EltwiseForm{alg::eltwise_pow, 1.f, *p};
  }
  if (op == "Clip") {
    float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
    if (n.opset < 11) {
      lo = attrs.get_float("min", lo);
      hi = attrs.get_float("max", hi);
    } else {
      int min_id = g.in(n, 1), max_id = g.in(n, 2);
      if (min_id >= 0) {
        auto v = scalar_constant(g, min_id);
        if (!v) return std::nullopt;
        lo = *v;
      }
      if (max_id >= 0) {
        auto v = scalar_constant(g, max_id);
        if (!v) return std::nullopt;
        hi = *v;
      }
    }
    return EltwiseForm{alg::eltwise_clip_v2, lo, hi};
  }
  // x + c, x * c... by a scalar constant: a linear eltwise (kept in the input's layout).
  if ((op == "Sub" || op == "Add" || op == "Mul") && n.inputs.size() == 2) {  // c - x, c + x, c * x
    auto k = scalar_constant(g, g.in(n, 0));
    if (k && g.value(n.outputs[0]).dims == g.value(n.inputs[1]).dims &&
        !scalar_constant(g, g.in(n, 1))) {
      if (op == "Sub") return EltwiseForm{alg::eltwise_linear, -1.f, *k, 1};
      if (op == "Add") return EltwiseForm{alg::eltwise_linear, 1.f, *k, 1};
      return EltwiseForm{alg::eltwise_linear, *k, 0.f, 1};
    }
  }
  if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && n.inputs.size() == 2) {
    auto k = scalar_constant(g, g.in(n, 1));
    if (!k || g.value(n.outputs[0]).dims != g.value(n.inputs[0]).dims) return std::nullopt;
    if (op == "Add") return EltwiseForm{alg::eltwise_linear, 1.f, *k};
    if (op == "Sub") return EltwiseForm{alg::eltwise_linear, 1.f, -*k};
    if (op == "Mul") return EltwiseForm{alg::eltwise_linear, *k, 0.f};
    return EltwiseForm{alg::eltwise_linear, 1.f / *k, 0.f};
  }
  return std::nullopt;
}

namespace {

// Follow-up activations of an element-wise primitive folded as its post-ops.
size_t fold_activations(Builder& b, int node, int out, std::vector<FusionCandidate>& c,
                        dnnl::post_ops& ops) {
  c = b.fusion_candidates(node, out, 3);
  size_t count = 0;
  // Two-stage activations stay out: a binary primitive may be oneDNN's reference kernel here,
  // which got an eltwise post-op chain wrong (see emit_eltwise).
  while (count < c.size() && c[count].kind == FusionCandidate::Kind::kEltwise && !c[count].then)
    ++count;
  b.append_post_ops(c, count, ops, 0);
  return count;
}

}  // namespace

void emit_eltwise(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  EltwiseForm e = *eltwise_form(g, n);
  int x = n.inputs[e.data_input], y = n.outputs[0];
  int src = b.slot_of(x);
  dnnl::memory::desc md = b.md_of(x);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, e.alg, md, e.alpha, e.beta);
  dnnl::eltwise_forward::primitive_desc pd(d, b.engine());
  int dst = b.define(e.then ? -1 : y, pd.dst_desc());
  b.add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             n.op + " " + n.view->name + " [" + pd.impl_info_str() + "]");
  if (!e.then) return;
  // The second stage as a primitive of its own: oneDNN 2.6 takes it as an eltwise post-op but
  // then picks its reference kernel for small tensors, which computed zeros (ONNX's
  // test_hardsigmoid_example).
  dnnl::eltwise_forward::desc d2(dnnl::prop_kind::forward_inference, e.then->alg, pd.dst_desc(),
                                 e.then->alpha, e.then->beta);
  dnnl::eltwise_forward::primitive_desc pd2(d2, b.engine());
  int dst2 = b.define(y, pd2.dst_desc());
  b.add_step(dnnl::eltwise_forward(pd2), {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst2}},
             n.op + " " + n.view->name + " (second stage) [" + pd2.impl_info_str() + "]");
}

namespace {

// A broadcast binary op as views of plain operands with adjacent axes merged where both
// operands agree on broadcasting: [1,64,3,49,49] + [1,64,1,49,49] is [64,3,2401] +
// [64,1,2401]. oneDNN 2.6 has JIT kernels for a few broadcast forms only (a scalar, per channel,
// over the channel axis, ...) and takes its reference kernel for the others: Swin-T's
// shifted-window masks, added per head, ran at 1/50 of the speed. The merged shapes are tried
// as they are and with a leading 1 (which makes [A,B] + [A,1] a per-channel broadcast),
// keeping the first that gets a JIT kernel. Axes of extent 1 drop out.
struct CollapsedBroadcast {
  dnnl::memory::dims out, rhs;
};

std::vector<CollapsedBroadcast> collapsed_forms(const std::vector<int64_t>& out,
                                                const std::vector<int64_t>& rhs) {
  CollapsedBroadcast c;
  int previous = -1;  // 0: the axis is the same in both, 1: the second operand broadcasts it
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;
    const int kind = rhs[i] == out[i] ? 0 : 1;
    if (kind == previous) {
      c.out.back() *= out[i];
      c.rhs.back() *= rhs[i];
    } else {
      c.out.push_back(out[i]);
      c.rhs.push_back(rhs[i]);
      previous = kind;
    }
  }
  if (c.out.empty() || c.out.size() >= out.size()) return {};
  CollapsedBroadcast padded = c;
  padded.out.insert(padded.out.begin(), 1);
  padded.rhs.insert(padded.rhs.begin(), 1);
  return {c, padded};
}

// The operand layouts of a binary primitive. oneDNN 2.6 has JIT binary kernels only for some:
// a blocked (nChw16c) first operand needs the second in the same blocked layout, also when it
// broadcasts (an SE block's [1,C,1,1] scale), and an nChw8c first operand has none at all. Its
// reference kernel is two orders of magnitude slower (EfficientNet-B0: 85 ms instead of 10),
// so the choice is made by trying, in order: the second operand in the first's layout, the
// second plain, both plain (one reorder of the first, when `may_reorder_first`), keeping the
// first that is not the reference kernel (the first choice, with `jit` false, when all are).
struct BinaryLayouts {
  bool plain0 = false;     // reorder the first operand to plain
  dnnl::memory::desc md1;  // the second operand's layout
  bool jit = false;        // oneDNN has a JIT kernel for this pair
};

BinaryLayouts choose_layouts(const dnnl::memory::desc& md0, bool broadcast,
                             const dnnl::memory::dims& rhs_dims, dt rhs_type,
                             bool may_reorder_first,
                             const std::function<dnnl::binary::primitive_desc(
                                 const dnnl::memory::desc&, const dnnl::memory::desc&)>& describe) {
  const dnnl::memory::desc plain1 = plain_md(rhs_dims, rhs_type);
  std::vector<BinaryLayouts> choices;
  if (!broadcast) {
    dnnl::memory::desc same = md0;
    same.data.data_type = static_cast<dnnl_data_type_t>(rhs_type);
    choices.push_back({false, same});
  } else if (std::optional<dnnl::memory::format_tag> tag0 = layout_tag(md0)) {
    choices.push_back({false, dnnl::memory::desc(rhs_dims, rhs_type, *tag0)});
  }
  choices.push_back({false, plain1});
  if (may_reorder_first && !is_plain(md0)) choices.push_back({true, plain1});
  const dnnl::memory::desc plain0 = plain_md(md0.dims(), md0.data_type());
  for (BinaryLayouts& c : choices) {
    try {
      c.jit = !is_reference(describe(c.plain0 ? plain0 : md0, c.md1));
      if (c.jit) return c;
    } catch (const dnnl::error&) {
      // This pair is not supported at all: try the next.
    }
  }
  return choices.front();
}

// Emits the binary op on collapsed views (collapsed_forms) when one of them gets a JIT kernel;
// false when none does. Only for a single binary step whose fused post-ops are eltwise ones,
// which do not depend on the shape.
bool emit_collapsed_binary(Builder& b, int node, int lhs, int rhs,
                           const std::function<dnnl::binary::primitive_desc(
                               const dnnl::memory::desc&, const dnnl::memory::desc&)>& describe,
                           std::vector<FusionCandidate>& fusion, size_t fused) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const int y = n.outputs[0];
  const std::vector<int64_t>& out_dims = g.value(y).dims;
  const dt type0 = b.md_of(lhs).data_type(), type1 = b.md_of(rhs).data_type();
  for (const CollapsedBroadcast& form :
       collapsed_forms(out_dims, pad_rank(g.value(rhs).dims, out_dims.size()))) {
    const dnnl::memory::desc md0 = plain_md(form.out, type0), md1 = plain_md(form.rhs, type1);
    std::optional<dnnl::binary::primitive_desc> pd;
    try {
      pd = describe(md0, md1);
    } catch (const dnnl::error&) {
      continue;
    }
    // The primitive writes the plain result through a view, so its destination must be plain.
    if (is_reference(*pd) || pd->dst_desc() != md0) continue;
    const int src0 = b.view(b.as_plain(lhs), md0);
    const int src1 = b.view(b.as_plain(rhs), md1);
    // The result is plain in the output's own shape; the primitive writes it through a view.
    const int dst = b.define(y, plain_md(out_dims, pd->dst_desc().data_type()));
    b.absorb(fusion, fused, dst);
    b.add_step(dnnl::binary(*pd),
               {{DNNL_ARG_SRC_0, src0},
                {DNNL_ARG_SRC_1, src1},
                {DNNL_ARG_DST, b.view(dst, pd->dst_desc())}},
               n.op + " " + n.view->name + " (merged axes) [" + pd->impl_info_str() + "]");
    return true;
  }
  return false;
}

}  // namespace

void emit_binary(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const std::string& op = n.op;
  int y = n.outputs[0];
  const std::vector<int64_t>& out_dims = g.value(y).dims;
  alg a = op == "Add" || op == "Sum" ? alg::binary_add
          : op == "Sub"              ? alg::binary_sub
          : op == "Mul"              ? alg::binary_mul
          : op == "Div"              ? alg::binary_div
          : op == "Max"              ? alg::binary_max
                                     : alg::binary_min;
  std::vector<int> operands;
  for (int id : n.inputs)
    if (id >= 0) operands.push_back(id);
  if (operands.size() == 1) {  // Sum/Max/Min of one input: a copy
    int s = b.slot_of(operands[0]);
    int dst = b.define(y, b.slot_md(s));
    dnnl::reorder::primitive_desc pd(b.engine(), b.slot_md(s), b.engine(), b.slot_md(s));
    b.add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, s}, {DNNL_ARG_TO, dst}},
               op + " " + n.view->name);
    return;
  }
  bool commutative = a != alg::binary_sub && a != alg::binary_div;
  int acc = -1;  // slot of the running result (variadic Sum/Max/Min)
  for (size_t i = 1; i < operands.size(); ++i) {
    int lhs = operands[0], rhs = operands[i];
    int src0, src1;
    if (acc >= 0) {
      src0 = acc;
    } else {
      if (g.value(lhs).dims != out_dims && commutative) std::swap(lhs, rhs);
      if (g.value(lhs).dims != out_dims)
        sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: " + op + " broadcasts its first operand");
      src0 = b.slot_of(lhs);
      // A sum the bf16 plan keeps in f32 (a residual connection, precision.hpp): the operand
      // in its own layout, converted to f32.
      if (b.slot_md(src0).data_type() != b.input_type(lhs)) {
        dnnl::memory::desc f32_md = b.slot_md(src0);
        f32_md.data.data_type = static_cast<dnnl_data_type_t>(b.input_type(lhs));
        src0 = b.as(lhs, f32_md);
      }
    }
    const IrValue& r = g.value(rhs);
    const dt rhs_type = b.input_type(rhs);
    const bool broadcast = r.dims != out_dims;
    const dnnl::memory::dims rhs_dims = broadcast
                                            ? pad_rank(r.dims, out_dims.size())
                                            : dnnl::memory::dims(out_dims.begin(), out_dims.end());
    bool last = i + 1 == operands.size();
    dnnl::post_ops ops;
    std::vector<FusionCandidate> c;
    size_t fused = last ? fold_activations(b, node, y, c, ops) : 0;
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    auto describe = [&](const dnnl::memory::desc& m0, const dnnl::memory::desc& m1) {
      dnnl::memory::desc dst_md(m0.dims(), m0.data_type(), dnnl::memory::format_tag::any);
      return dnnl::binary::primitive_desc(dnnl::binary::desc(a, m0, m1, dst_md), attr, b.engine());
    };
    dnnl::memory::desc md0 = b.slot_md(src0);
    if (acc < 0 && is_plain(md0)) {
      src0 = b.as_plain(lhs, md0.data_type());  // the canonical row-major form (Builder::as)
      md0 = b.slot_md(src0);
    }
    const dnnl::memory::desc plain1 = plain_md(rhs_dims, rhs_type);
    const BinaryLayouts choice =
        choose_layouts(md0, broadcast, rhs_dims, rhs_type, acc < 0, describe);
    if (broadcast && acc < 0 && last && !choice.jit &&
        emit_collapsed_binary(b, node, lhs, rhs, describe, c, fused))
      return;
    if (choice.plain0) {
      src0 = b.as_plain(lhs, md0.data_type());
      md0 = b.slot_md(src0);
    }
    if (!broadcast) {
      src1 = b.as(rhs, choice.md1);
    } else if (r.dims.size() == out_dims.size() && b.md_of(rhs) == choice.md1) {
      src1 = b.slot_of(rhs);  // already there (an SE scale from a blocked 1x1 convolution)
    } else {
      // Plain bytes viewed with the rank padded by leading ones, reordered when the chosen
      // layout is blocked.
      int plain = b.as_plain(rhs, rhs_type);
      src1 = b.view(plain, plain1);
      if (choice.md1 != plain1) {
        int blocked = b.define(-1, choice.md1);
        dnnl::reorder::primitive_desc rpd(b.engine(), plain1, b.engine(), choice.md1);
        b.add_device_step(dnnl::reorder(rpd), {{DNNL_ARG_FROM, src1}, {DNNL_ARG_TO, blocked}},
                          "reorder " + r.name);
        src1 = blocked;
      }
    }
    dnnl::binary::primitive_desc pd = describe(md0, b.slot_md(src1));
    int dst = last ? b.define(y, pd.dst_desc()) : b.define(-1, pd.dst_desc());
    if (last) b.absorb(c, fused, dst);
    b.add_step(dnnl::binary(pd),
               {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
               op + " " + n.view->name + " [" + pd.impl_info_str() + "]");
    acc = dst;
  }
}

namespace {

std::string check_activation(const loom_graph_t& graph, const loom_node_t& node) {
  const std::string op = node.op_type;
  if (op == "Pow" && !scalar_float_constant(graph, sdk::node_input(graph, node, 1)))
    return "Pow by a non-constant exponent";
  if (op == "Clip")
    for (size_t i = 1; i < 3; ++i)
      if (Info bound = sdk::node_input(graph, node, i);
          bound && !scalar_float_constant(graph, bound))
        return "Clip with non-constant bounds";
  return "";
}

std::string check_erf(const loom_graph_t& graph, const loom_node_t& node) {
  return in_gelu_pattern(graph, node) ? "" : "Erf outside the GELU pattern";
}

std::string check_binary(const loom_graph_t& graph, const loom_node_t& node) {
  const std::string op = node.op_type;
  auto in = [&](size_t i) { return sdk::node_input(graph, node, i); };
  Info y = sdk::node_output(graph, node, 0);
  if (!known_shape(y)) return "broadcast shapes unknown at placement";
  std::vector<int64_t> yd = dims_of(y);
  size_t full = 0;
  for (size_t i = 0; i < node.num_inputs; ++i) {
    if (!known_shape(in(i))) return "broadcast shapes unknown at placement";
    if (dims_of(in(i)) == yd)
      ++full;
    else if (in(i)->rank > y->rank)
      return "input rank above the output's";
  }
  if (node.num_inputs > 2 && full != node.num_inputs)
    return op + " of more than two broadcast inputs";
  bool first_full = dims_of(in(0)) == yd;
  bool commutative = op != "Sub" && op != "Div";
  bool scalar_minus = op == "Sub" && scalar_float_constant(graph, in(0)) && dims_of(in(1)) == yd;
  if (!first_full && !(commutative && full > 0) && !scalar_float_constant(graph, in(1)) &&
      !scalar_minus)
    return op + " broadcasting its first input";
  return "";
}

// A binary op with a scalar constant operand is an eltwise (linear) primitive.
void emit_arithmetic(Builder& b, int node) {
  if (eltwise_form(b.ir(), b.ir().nodes[node]))
    emit_eltwise(b, node);
  else
    emit_binary(b, node);
}

}  // namespace

LOOM_ONEDNN_OP("Relu", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("LeakyRelu", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Sigmoid", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Tanh", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Elu", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Exp", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Sqrt", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Abs", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Neg", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Reciprocal", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Softplus", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Mish", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("HardSwish", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("HardSigmoid", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Clip", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Pow", check_activation, emit_eltwise);
LOOM_ONEDNN_OP("Erf", check_erf, nullptr);       // absorbed into a Gelu
LOOM_ONEDNN_OP("Gelu", nullptr, emit_eltwise);   // made by rewrite_patterns only
LOOM_ONEDNN_OP("Swish", nullptr, emit_eltwise);  // made by rewrite_patterns only
LOOM_ONEDNN_OP("Add", check_binary, emit_arithmetic);
LOOM_ONEDNN_OP("Sub", check_binary, emit_arithmetic);
LOOM_ONEDNN_OP("Mul", check_binary, emit_arithmetic);
LOOM_ONEDNN_OP("Div", check_binary, emit_arithmetic);
LOOM_ONEDNN_OP("Max", check_binary, emit_arithmetic);
LOOM_ONEDNN_OP("Min", check_binary, emit_arithmetic);
LOOM_ONEDNN_OP("Sum", check_binary, emit_arithmetic);

}  // namespace loom::onednn
