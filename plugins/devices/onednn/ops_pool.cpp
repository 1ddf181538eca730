// MaxPool, AveragePool and the global pools through pooling_v2 (dilations), in the layout the
// input already has (a blocked conv output stays blocked).
#include "builder.hpp"

namespace loom::onednn {

using tag = dnnl::memory::format_tag;

void emit_pool(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const std::vector<int64_t>& yd = g.value(y).dims;
  size_t sr = xd.size() - 2;
  bool global = n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool";
  bool max = n.op == "MaxPool" || n.op == "GlobalMaxPool";
  dnnl::memory::dims strides, kernel, dilation, pad_l, pad_r;
  auto k_attr = attrs.get_ints("kernel_shape");
  auto s_attr = attrs.get_ints("strides");
  auto d_attr = attrs.get_ints("dilations");
  auto p_attr = attrs.get_ints("pads");
  std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < sr; ++i) {
    int64_t k = global ? xd[2 + i] : (*k_attr)[i];
    int64_t s = !global && s_attr && s_attr->size() == sr ? (*s_attr)[i] : 1;
    int64_t d = !global && d_attr && d_attr->size() == sr ? (*d_attr)[i] : 1;
    int64_t pl = !global && p_attr && p_attr->size() == 2 * sr ? (*p_attr)[i] : 0;
    int64_t extent = (k - 1) * d + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(0, (yd[2 + i] - 1) * s + extent - xd[2 + i]);
      pl = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID") {
      pl = 0;
    }
    // oneDNN rounds the output extent down: ceil_mode (and SAME) need the right padding that
    // reaches the inferred output.
    int64_t pr = !global && p_attr && p_attr->size() == 2 * sr && auto_pad == "NOTSET"
                     ? (*p_attr)[sr + i]
                     : 0;
    pr = std::max(pr, (yd[2 + i] - 1) * s + extent - xd[2 + i] - pl);
    strides.push_back(s);
    kernel.push_back(k);
    dilation.push_back(d - 1);
    pad_l.push_back(pl);
    pad_r.push_back(pr);
  }
  dnnl::algorithm a = max ? dnnl::algorithm::pooling_max
                      : attrs.get_int("count_include_pad", 0)
                          ? dnnl::algorithm::pooling_avg_include_padding
                          : dnnl::algorithm::pooling_avg_exclude_padding;
  int src = b.slot_of(x);
  dnnl::memory::desc src_md = b.slot_md(src);
  dnnl::memory::desc dst_md(yd, src_md.data_type(), tag::any);
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, a, src_md, dst_md, strides,
                                   kernel, dilation, pad_l, pad_r);
  dnnl::pooling_v2_forward::primitive_desc pd(d, b.engine());
  int dst = b.define(y, pd.dst_desc());
  b.add_step(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             n.op + " " + n.view->name + " [" + pd.impl_info_str() + "]");
}

}  // namespace loom::onednn
