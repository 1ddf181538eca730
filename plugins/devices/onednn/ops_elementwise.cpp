// Element-wise ops: activations through eltwise primitives and arithmetic through binary
// primitives (numpy broadcasting of the second operand), both in whatever layout their input
// already has, so a blocked conv output stays blocked through them.
#include <limits>

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
  if (op == "Gelu") return EltwiseForm{alg::eltwise_gelu_erf};  // from rewrite_patterns
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
  while (count < c.size() && c[count].kind == FusionCandidate::Kind::kEltwise) ++count;
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
  int dst = b.define(y, pd.dst_desc());
  b.add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             n.op + " " + n.view->name);
}

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
    }
    dnnl::memory::desc md0 = b.slot_md(src0);
    const IrValue& r = g.value(rhs);
    if (r.dims == out_dims) {
      // Same layout as src0, in rhs's own data type.
      dnnl::memory::desc want = md0;
      want.data.data_type = static_cast<dnnl_data_type_t>(b.md_of(rhs).data_type());
      src1 = b.as(rhs, want);
    } else {
      // Broadcast: plain bytes viewed with the rank padded by leading ones.
      int plain = b.as_plain(rhs);
      src1 = b.view(plain, plain_md(pad_rank(r.dims, out_dims.size()), b.md_of(rhs).data_type()));
    }
    bool last = i + 1 == operands.size();
    dnnl::post_ops ops;
    std::vector<FusionCandidate> c;
    size_t fused = last ? fold_activations(b, node, y, c, ops) : 0;
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::memory::desc dst_md(md0.dims(), md0.data_type(), dnnl::memory::format_tag::any);
    dnnl::binary::desc d(a, md0, b.slot_md(src1), dst_md);
    dnnl::binary::primitive_desc pd(d, attr, b.engine());
    int dst = last ? b.define(y, pd.dst_desc()) : b.define(-1, pd.dst_desc());
    if (last) b.absorb(c, fused, dst);
    b.add_step(dnnl::binary(pd),
               {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
               op + " " + n.view->name + " [" + pd.impl_info_str() + "]");
    acc = dst;
  }
}

}  // namespace loom::onednn
