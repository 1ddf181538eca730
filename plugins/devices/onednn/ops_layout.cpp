// Data movement without arithmetic: Reshape/Flatten/Squeeze/Unsqueeze/Identity/Dropout are
// views of the row-major bytes (no copy when the input is already plain), Transpose is one
// reorder from a permuted-stride view, Concat the concat primitive in the inputs' layouts.
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
  std::vector<int64_t> perm;
  if (auto p = sdk::Attributes(*n.view).get_ints("perm"); p && p->size() == r) {
    perm.assign(p->begin(), p->end());
  } else {
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  }
  int plain = b.as_plain(x);
  dt type = b.slot_md(plain).data_type();
  dnnl::memory::dims strides = row_major_strides(xd), pstrides, pdims;
  for (int64_t p : perm) {
    pdims.push_back(xd[static_cast<size_t>(p)]);
    pstrides.push_back(strides[static_cast<size_t>(p)]);
  }
  int src = b.view(plain, dnnl::memory::desc(pdims, type, pstrides));
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
  int axis = static_cast<int>(normalize_axis(sdk::Attributes(*n.view).get_int("axis", 0),
                                             static_cast<int64_t>(yd.size()), "Concat"));
  std::vector<int> parts;
  for (int id : n.inputs)
    if (id >= 0 && g.value(id).elements() > 0) parts.push_back(id);
  bool same_type = true;
  for (int id : parts)
    same_type = same_type && b.md_of(id).data_type() == b.md_of(parts[0]).data_type();
  std::vector<dnnl::memory::desc> mds;
  std::vector<std::pair<int, int>> args;
  for (size_t i = 0; i < parts.size(); ++i) {
    int s = same_type ? b.slot_of(parts[i]) : b.as_plain(parts[i], dt::f32);
    mds.push_back(b.slot_md(s));
    args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), s);
  }
  dnnl::memory::desc dst_md(yd, mds[0].data_type(), tag::any);
  dnnl::concat::primitive_desc pd(dst_md, axis, mds, b.engine());
  int dst = b.define(y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  b.add_step(dnnl::concat(pd), args,
             "Concat " + std::string(n.view->name) + " [" + pd.impl_info_str() + "]");
}

}  // namespace

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

}  // namespace loom::onednn
