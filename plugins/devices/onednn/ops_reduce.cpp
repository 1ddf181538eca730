// ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare through the reduction primitive on the plain
// layout; keepdims=0 is a view of the kept-dims result. A mean or max over all spatial axes
// (the global pooling of exported `x.mean([2, 3])`, TensorFlow's Mean) is a global pooling in
// the layout the input already has instead, and one over a range of axes that oneDNN would
// run with its reference kernel is the device's own (emit_range_reduce).
#include <algorithm>
#include <cmath>
#include <optional>

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

namespace {

// ReduceMean/ReduceMax of node `node` (reduced dims `kept`) as a global average/max pooling,
// when it reduces exactly the axes from 2 on of a 3-5D tensor: oneDNN's reduction reads a
// channel-blocked convolution output through a reorder to plain and then runs a slow kernel
// over the short rows (MNASNet's [1, 1280, 7, 7] mean: 0.35 ms; the pooling takes 0.02 ms).
// The pooled [N, C, 1...] result stays in its layout for keepdims=1; keepdims=0 gets it
// plain, viewed as [N, C].
bool emit_global_pool(Builder& b, int node, const std::vector<int64_t>& kept) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  if (n.op != "ReduceMean" && n.op != "ReduceMax") return false;
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  if (xd.size() < 3 || xd.size() > 5 || kept[0] != xd[0] || kept[1] != xd[1] || kept == xd)
    return false;
  for (size_t i = 2; i < xd.size(); ++i)
    if (kept[i] != 1) return false;
  int src = b.slot_of(x);
  dnnl::memory::desc src_md = b.slot_md(src);
  dnnl::memory::dims window(xd.begin() + 2, xd.end());
  dnnl::memory::dims ones(window.size(), 1), zeros(window.size(), 0);
  dnnl::pooling_v2_forward::primitive_desc pd;
  try {
    dnnl::pooling_v2_forward::desc d(
        dnnl::prop_kind::forward_inference,
        n.op == "ReduceMax" ? dnnl::algorithm::pooling_max
                            : dnnl::algorithm::pooling_avg_exclude_padding,
        src_md, dnnl::memory::desc(kept, src_md.data_type(), dnnl::memory::format_tag::any), ones,
        window, zeros, zeros, zeros);
    pd = dnnl::pooling_v2_forward::primitive_desc(d, b.engine());
  } catch (const dnnl::error&) {
    return false;  // no pooling for this data type or layout: the reduction primitive
  }
  if (is_reference(pd)) return false;
  std::string label = n.op + " " + n.view->name + " [pooling " + pd.impl_info_str() + "]";
  const std::vector<int64_t>& yd = g.value(y).dims;
  if (yd == kept) {
    int dst = b.define(y, pd.dst_desc());
    b.add_step(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, label);
    return true;
  }
  // keepdims=0: pooled into a scratch slot, then reordered into the plain output's bytes.
  int pooled = b.define(-1, pd.dst_desc());
  b.add_step(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, pooled}}, label);
  int out = b.define(y, plain_md(yd, src_md.data_type()));
  dnnl::memory::desc kept_plain = plain_md(kept, src_md.data_type());
  int view = b.view(out, kept_plain);
  dnnl::reorder::primitive_desc rpd(b.engine(), pd.dst_desc(), b.engine(), kept_plain);
  b.add_step(dnnl::reorder(rpd), {{DNNL_ARG_FROM, pooled}, {DNNL_ARG_TO, view}},
             "reorder " + g.value(y).name);
  return true;
}

// The reductions the device's own kernel computes (accumulated in float, as oneDNN does).
enum class RangeOp { kSum, kMean, kProd, kL1, kL2, kSumSquare };

std::optional<RangeOp> range_op(const std::string& op) {
  if (op == "ReduceSum") return RangeOp::kSum;
  if (op == "ReduceMean") return RangeOp::kMean;
  if (op == "ReduceProd") return RangeOp::kProd;
  if (op == "ReduceL1") return RangeOp::kL1;
  if (op == "ReduceL2") return RangeOp::kL2;
  if (op == "ReduceSumSquare") return RangeOp::kSumSquare;
  return std::nullopt;  // max and min: oneDNN's, whose NaN handling the tests pin down
}

// out[o][i] = reduce over r of in[o][r][i], for one block [i0, i1) of one outer index o.
void reduce_block(RangeOp op, const float* in, float* out, int64_t r_count, int64_t inner,
                  int64_t i0, int64_t i1) {
  const float init = op == RangeOp::kProd ? 1.f : 0.f;
  for (int64_t i = i0; i < i1; ++i) out[i] = init;
  for (int64_t r = 0; r < r_count; ++r) {
    const float* row = in + r * inner;
    switch (op) {
      case RangeOp::kProd:
#pragma omp simd
        for (int64_t i = i0; i < i1; ++i) out[i] *= row[i];
        break;
      case RangeOp::kL1:
#pragma omp simd
        for (int64_t i = i0; i < i1; ++i) out[i] += std::fabs(row[i]);
        break;
      case RangeOp::kL2:
      case RangeOp::kSumSquare:
#pragma omp simd
        for (int64_t i = i0; i < i1; ++i) out[i] += row[i] * row[i];
        break;
      default:
#pragma omp simd
        for (int64_t i = i0; i < i1; ++i) out[i] += row[i];
    }
  }
  if (op == RangeOp::kMean)
    for (int64_t i = i0; i < i1; ++i) out[i] /= static_cast<float>(r_count);
  if (op == RangeOp::kL2)
    for (int64_t i = i0; i < i1; ++i) out[i] = std::sqrt(out[i]);
}

// oneDNN 2.6 runs a reduction over a middle or the last axes of a plain tensor with its
// reference kernel: a sentence encoder's mean pooling (ReduceSum of [1, 32, 384] over axis 1)
// took 132 us. Reduced axes that form one range (axes of extent 1 aside) make the input
// [outer, R, inner]: each output row accumulates the R rows of its block, vectorized along the
// contiguous inner axis, blocks of 256 split over the threads when there is enough work.
bool emit_range_reduce(Builder& b, const IrNode& n, const std::vector<int64_t>& xd,
                       const std::vector<int64_t>& kept, int src, int dst) {
  const std::optional<RangeOp> op = range_op(n.op);
  if (!op) return false;
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < xd.size(); ++i)
    if (kept[i] != xd[i]) {
      if (first < 0) first = static_cast<int64_t>(i);
      last = static_cast<int64_t>(i);
    }
  if (first < 0) return false;
  int64_t outer = 1, r_count = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(xd.size()); ++i) {
    const int64_t d = xd[static_cast<size_t>(i)];
    if (i < first) {
      outer *= d;
    } else if (i > last) {
      inner *= d;
    } else {
      if (kept[static_cast<size_t>(i)] != 1) return false;  // a kept axis inside the range
      r_count *= d;
    }
  }
  constexpr int64_t kBlock = 256;
  const RangeOp o = *op;
  b.add_kernel_step(
      [o, outer, r_count, inner](const std::unordered_map<int, dnnl::memory>& mem) {
        const auto* in = static_cast<const float*>(mem.at(DNNL_ARG_SRC).get_data_handle());
        auto* out = static_cast<float*>(mem.at(DNNL_ARG_DST).get_data_handle());
        const int64_t blocks = (inner + kBlock - 1) / kBlock, tasks = outer * blocks;
#pragma omp parallel for schedule(static) if (outer * r_count * inner >= (int64_t{1} << 16))
        for (int64_t t = 0; t < tasks; ++t) {
          const int64_t row = t / blocks, i0 = (t % blocks) * kBlock;
          reduce_block(o, in + row * r_count * inner, out + row * inner, r_count, inner, i0,
                       std::min(inner, i0 + kBlock));
        }
      },
      {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, n.op + " " + n.view->name + " [loom reduce]",
      "loom reduce");
  return true;
}

}  // namespace

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
    for (int64_t a : axes) kept[static_cast<size_t>(sdk::normalize_axis(a, rank, n.op))] = 1;
  }
  const std::string& op = n.op;
  std::string label = op + " " + n.view->name;
  if (emit_global_pool(b, node, kept)) return;
  int plain = b.as_plain(x);
  dt type = b.slot_md(plain).data_type();
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
  if (type == dt::f32 && is_reference(pd) &&
      emit_range_reduce(b, n, xd, kept, plain, b.view(out, dst_md)))
    return;
  b.add_step(dnnl::reduction(pd), {{DNNL_ARG_SRC, plain}, {DNNL_ARG_DST, b.view(out, dst_md)}},
             label + " [" + pd.impl_info_str() + "]");
}

namespace {

std::string check_reduce(const loom_graph_t& graph, const loom_node_t& node) {
  Info axes = sdk::node_input(graph, node, 1);
  if (axes && !is_constant(axes)) return "axes are not a constant";
  return sdk::Attributes(node).get_int("keepdims", 1) == 0 &&
                 !known_shape(sdk::node_output(graph, node, 0))
             ? "unknown output shape"
             : "";
}

}  // namespace

LOOM_ONEDNN_OP("ReduceMean", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceSum", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceMax", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceMin", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceProd", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceL1", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceL2", check_reduce, emit_reduce);
LOOM_ONEDNN_OP("ReduceSumSquare", check_reduce, emit_reduce);

}  // namespace loom::onednn
