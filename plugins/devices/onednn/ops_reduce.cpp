// ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare through the reduction primitive on the plain
// layout; keepdims=0 is a view of the kept-dims result.
#include "builder.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using alg = dnnl::algorithm;

// The reduced axes of a Reduce* node (attribute before opset 18 / ReduceSum 13, else input),
// empty = all axes unless noop_with_empty_axes.
std::vector<int64_t> reduce_axes(const IrGraph& g, const IrNode& n, bool* noop) {
  sdk::Attributes attrs(*n.view);
  std::vector<int64_t> axes;
  if (auto a = attrs.get_ints("axes")) axes.assign(a->begin(), a->end());
  if (g.in(n, 1) >= 0) axes = constant_ints(g, g.in(n, 1));
  *noop = axes.empty() && attrs.get_int("noop_with_empty_axes", 0) != 0;
  return axes;
}

void emit_reduce(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  int64_t rank = static_cast<int64_t>(xd.size());
  bool noop = false;
  std::vector<int64_t> axes = reduce_axes(g, n, &noop);
  std::vector<int64_t> kept = xd;
  if (!noop) {
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    for (int64_t a : axes) kept[static_cast<size_t>(normalize_axis(a, rank, n.op))] = 1;
  }
  int plain = b.as_plain(x);
  dt type = b.slot_md(plain).data_type();
  const std::string& op = n.op;
  std::string label = op + " " + n.view->name;
  if (kept == xd) {
    // Nothing shrinks: sums, means and extrema are the input; the norms are element-wise.
    if (op == "ReduceL1" || op == "ReduceL2" || op == "ReduceSumSquare") {
      alg a = op == "ReduceSumSquare" ? alg::eltwise_square : alg::eltwise_abs;
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, a, b.slot_md(plain), 0.f,
                                    0.f);
      dnnl::eltwise_forward::primitive_desc pd(d, b.engine());
      int dst = b.define(y, plain_md(g.value(y).dims, type));
      b.add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, plain}, {DNNL_ARG_DST, dst}}, label);
    } else {
      b.alias(y, plain, plain_md(g.value(y).dims, type));
    }
    return;
  }
  alg a = alg::reduction_sum;
  float p = 0.f;
  if (op == "ReduceMean")
    a = alg::reduction_mean;
  else if (op == "ReduceMax")
    a = alg::reduction_max;
  else if (op == "ReduceMin")
    a = alg::reduction_min;
  else if (op == "ReduceProd")
    a = alg::reduction_mul;
  else if (op == "ReduceL1")
    a = alg::reduction_norm_lp_sum, p = 1.f;
  else if (op == "ReduceL2")
    a = alg::reduction_norm_lp_sum, p = 2.f;
  else if (op == "ReduceSumSquare")
    a = alg::reduction_norm_lp_power_p_sum, p = 2.f;
  dnnl::memory::desc dst_md = plain_md(kept, type);
  dnnl::reduction::desc d(a, b.slot_md(plain), dst_md, p, 0.f);
  dnnl::reduction::primitive_desc pd(d, b.engine());
  int out = b.define(y, plain_md(g.value(y).dims, type));
  b.add_step(dnnl::reduction(pd), {{DNNL_ARG_SRC, plain}, {DNNL_ARG_DST, b.view(out, dst_md)}},
             label + " [" + pd.impl_info_str() + "]");
}

}  // namespace loom::onednn
