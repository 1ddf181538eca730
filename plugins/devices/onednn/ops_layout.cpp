// Data movement without arithmetic: Reshape/Flatten/Squeeze/Unsqueeze/Identity/Dropout are
// views of the row-major bytes (no copy when the input is already plain), Transpose is one
// reorder from a permuted-stride view, Concat one reorder per part into its place in the output
// (or the concat primitive) in the inputs' layouts.
#include <algorithm>

#include "builder.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

void emit_transpose(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  size_t r = xd.size();
  std::vector<int64_t> perm = transpose_perm(n, r);
  int plain = b.as_plain(x);
  dt type = b.slot_md(plain).data_type();
  // A permutation that only moves axes of extent 1 leaves the row-major bytes as they are
  // (ViT's [1, 197, 768] <-> [197, 1, 768] around each attention block, 24 copies a run): a
  // view.
  std::vector<int64_t> moved;
  for (int64_t p : perm)
    if (xd[static_cast<size_t>(p)] != 1) moved.push_back(p);
  if (std::is_sorted(moved.begin(), moved.end())) {
    b.alias(y, plain, plain_md(g.value(y).dims, type));
    return;
  }
  dnnl::memory::dims strides = row_major_strides(xd), pstrides, pdims;
  for (int64_t p : perm) {
    pdims.push_back(xd[static_cast<size_t>(p)]);
    pstrides.push_back(strides[static_cast<size_t>(p)]);
  }
  dnnl::memory::desc permuted(pdims, type, pstrides);
  // Read only by MatMuls: leave it a permuted view, which oneDNN's matmul reads directly in
  // the forms its kernels take (attention's [b, t, h, d] -> [b, h, t, d], "acbd"); a MatMul
  // that cannot reorders it then (ops_matmul.cpp), at the cost this copy had.
  bool matmuls_only = !g.value(y).graph_output && !g.value(y).consumers.empty();
  for (int c : g.value(y).consumers) matmuls_only = matmuls_only && g.nodes[c].op == "MatMul";
  if (matmuls_only) {
    b.alias(y, plain, permuted);
    return;
  }
  int src = b.view(plain, permuted);
  int dst = b.define(y, plain_md(g.value(y).dims, type));
  dnnl::reorder::primitive_desc pd(b.engine(), b.slot_md(src), b.engine(), b.slot_md(dst));
  b.add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}},
             "Transpose " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
}

void emit_concat(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  int y = n.outputs[0];
  const std::vector<int64_t>& yd = g.value(y).dims;
  int axis = static_cast<int>(sdk::normalize_axis(sdk::Attributes(*n.view).get_int("axis", 0),
                                                  static_cast<int64_t>(yd.size()), "Concat"));
  std::vector<int> parts;
  for (int id : n.inputs)
    if (id >= 0 && g.value(id).elements() > 0) parts.push_back(id);
  bool same_type = true;
  for (int id : parts)
    same_type = same_type && b.md_of(id).data_type() == b.md_of(parts[0]).data_type();
  std::vector<dnnl::memory::desc> mds;
  std::vector<int> slots;
  std::vector<std::pair<int, int>> args;
  for (size_t i = 0; i < parts.size(); ++i) {
    int s = same_type ? b.slot_of(parts[i]) : b.as_plain(parts[i], dt::f32);
    slots.push_back(s);
    mds.push_back(b.slot_md(s));
    args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), s);
  }
  dnnl::memory::desc dst_md(yd, mds[0].data_type(), tag::any);
  dnnl::concat::primitive_desc pd(dst_md, axis, mds, b.engine());
  // oneDNN 2.6's concat kernel ("simple:any") copies at a few GB/s (SqueezeNet's two
  // 1x64x55x55 halves: 0.4 ms), and so does its reorder into a sub-memory view. When every part
  // is one contiguous range of the output (nothing outside the axis but extents of 1 before it,
  // a layout that keeps the dims in order, whole channel blocks), each part is one flat copy
  // (a 1D reorder, at memory speed) into its range.
  const dnnl::memory::desc out_md = pd.dst_desc();
  std::optional<tag> out_tag = layout_tag(out_md);
  int64_t block = out_tag == tag::aBc16b || out_tag == tag::aBcd16b || out_tag == tag::aBcde16b ? 16
                  : out_tag == tag::aBc8b || out_tag == tag::aBcd8b || out_tag == tag::aBcde8b  ? 8
                  : out_tag == tag::abc || out_tag == tag::abcd || out_tag == tag::abcde        ? 1
                                                                                                : 0;
  bool flat = block > 0 && (block == 1 || axis == 1);
  for (int i = 0; i < axis; ++i) flat = flat && yd[static_cast<size_t>(i)] == 1;
  for (size_t i = 0; flat && i < parts.size(); ++i)
    flat = mds[i] == dnnl::memory::desc(mds[i].dims(), mds[i].data_type(), *out_tag) &&
           mds[i].dims()[static_cast<size_t>(axis)] % block == 0;
  if (flat) {
    const dt type = out_md.data_type();
    const int64_t total =
        static_cast<int64_t>(out_md.get_size() / dnnl::memory::data_type_size(type));
    // [1, n] rather than [n]: oneDNN 2.6's reorder into a 1D sub-memory takes its slow path.
    const dnnl::memory::desc out_flat({1, total}, type, tag::ab);
    int dst = b.define(y, out_md);
    int dst_flat = b.view(dst, out_flat);
    int64_t offset = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t count =
          static_cast<int64_t>(mds[i].get_size() / dnnl::memory::data_type_size(type));
      dnnl::memory::desc part_flat({1, count}, type, tag::ab);
      int from = b.view(slots[i], part_flat);
      int to = b.view(dst_flat, out_flat.submemory_desc({1, count}, {0, offset}));
      dnnl::reorder::primitive_desc copy(b.engine(), part_flat, b.engine(), b.slot_md(to));
      b.add_step(dnnl::reorder(copy), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
                 "Concat " + std::string(n.view->name) + " part " + std::to_string(i) + " [" +
                     copy.impl_info_str() + "]");
      offset += count;
    }
    return;
  }
  int dst = b.define(y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  b.add_step(dnnl::concat(pd), args,
             "Concat " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
}

}  // namespace

std::vector<int64_t> transpose_perm(const IrNode& n, size_t rank) {
  std::vector<int64_t> perm;
  if (auto p = sdk::Attributes(*n.view).get_ints("perm"); p && p->size() == rank) {
    perm.assign(p->begin(), p->end());
  } else {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  return perm;
}

void emit_layout(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  if (n.op == "Transpose") return emit_transpose(b, node);
  if (n.op == "Concat") return emit_concat(b, node);
  if (n.op == "Reshape" || n.op == "Flatten" || n.op == "Squeeze" || n.op == "Unsqueeze" ||
      n.op == "Identity" || n.op == "Dropout") {
    int x = n.inputs[0], y = n.outputs[0];
    int plain = b.as_plain(x);
    b.alias(y, plain, plain_md(g.value(y).dims, b.slot_md(plain).data_type()));
    return;
  }
  sdk::fail(LOOM_ERROR_INTERNAL, "onednn: no emitter for " + n.op);
}

namespace {

std::string check_layout(const loom_graph_t&, const loom_node_t&) {
  return "";
}

std::string check_dropout(const loom_graph_t& graph, const loom_node_t& node) {
  if (has_extra_outputs(node, 1)) return "Dropout mask output";
  // An identity in inference (a training_mode input that is a constant false), and in
  // training mode with a constant ratio of 0 (Swin-T's attention exports that: nothing is
  // dropped and the scale is 1).
  Info training = sdk::node_input(graph, node, 2), ratio = sdk::node_input(graph, node, 1);
  auto all_zero = [](Info v) {
    if (!is_constant(v) || v->data_size == 0) return false;
    const auto* bytes = static_cast<const unsigned char*>(v->data);
    return std::all_of(bytes, bytes + v->data_size, [](unsigned char b) { return b == 0; });
  };
  if (training && !all_zero(training) && !(ratio && all_zero(ratio)))
    return "Dropout in training mode";
  return "";
}

// Made a constant of the program at compile (ir.cpp): nothing to emit.
std::string check_constant(const loom_graph_t& graph, const loom_node_t& node) {
  Info v = sdk::node_output(graph, node, 0);
  if (!v || sdk::dtype_size(v->dtype) == 0 || v->dtype == LOOM_DTYPE_STRING)
    return "non-numeric constant";
  sdk::Attributes attrs(node);
  return attrs.has("value") || attrs.has("value_float") || attrs.has("value_floats") ||
                 attrs.has("value_int") || attrs.has("value_ints")
             ? ""
             : "Constant without a numeric value";
}

}  // namespace

LOOM_ONEDNN_OP("Reshape", check_layout, emit_layout);
LOOM_ONEDNN_OP("Flatten", check_layout, emit_layout);
LOOM_ONEDNN_OP("Squeeze", check_layout, emit_layout);
LOOM_ONEDNN_OP("Unsqueeze", check_layout, emit_layout);
LOOM_ONEDNN_OP("Identity", check_layout, emit_layout);
LOOM_ONEDNN_OP("Transpose", check_layout, emit_layout);
LOOM_ONEDNN_OP("Concat", check_layout, emit_layout);
LOOM_ONEDNN_OP("Dropout", check_dropout, emit_layout);
LOOM_ONEDNN_OP("Constant", check_constant, nullptr);

}  // namespace loom::onednn
