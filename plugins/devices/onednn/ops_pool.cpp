// MaxPool, AveragePool and the global pools through pooling_v2 (dilations), in the layout the
// input already has (a blocked conv output stays blocked), except where oneDNN 2.6 has no jit
// kernel for it: it pools float only in channel-blocked and channels-last layouts and int8 only
// in channels-last, and pools the rest with its simple/reference kernels (TFLite BlazeFace-like
// models: 37-63% of the run in MaxPool of plain float or blocked int8), so such a source is
// reordered to the layout of the neighbouring convolutions (float) or channels-last first. 2-D
// max pools of int8/uint8 run the device's own channels-last kernel (max_pool_int8.hpp).
#include "builder.hpp"
#include "max_pool_int8.hpp"

namespace loom::onednn {

using tag = dnnl::memory::format_tag;

namespace {

// The layout oneDNN 2.6 pools `md`'s tensor fastest in: the channel-blocked one the convolutions
// of this subgraph share (float, whole blocks), else channels-last (the only one its int8 jit
// pooling takes). nullopt outside ranks 3 to 5.
std::optional<dnnl::memory::desc> jit_pool_layout(Builder& b, const dnnl::memory::desc& md) {
  static const tag blocked16[] = {tag::aBc16b, tag::aBcd16b, tag::aBcde16b};
  static const tag blocked8[] = {tag::aBc8b, tag::aBcd8b, tag::aBcde8b};
  static const tag last[] = {tag::acb, tag::acdb, tag::acdeb};
  const dnnl::memory::dims dims = md.dims();
  if (dims.size() < 3 || dims.size() > 5) return std::nullopt;
  const size_t r = dims.size() - 3;
  const int64_t block = b.block_width();
  if (b.blocked_convolutions() && md.data_type() == dnnl::memory::data_type::f32 &&
      (block == 16 || block == 8) && dims[1] % block == 0)
    return dnnl::memory::desc(dims, md.data_type(), block == 16 ? blocked16[r] : blocked8[r]);
  return dnnl::memory::desc(dims, md.data_type(), last[r]);
}

}  // namespace

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
  const sdk::AutoPad auto_pad = sdk::auto_pad_of(attrs, n.op);
  const bool explicit_pads = !global && p_attr && p_attr->size() == 2 * sr;
  for (size_t i = 0; i < sr; ++i) {
    int64_t k = global ? xd[2 + i] : (*k_attr)[i];
    int64_t s = !global && s_attr && s_attr->size() == sr ? (*s_attr)[i] : 1;
    int64_t d = !global && d_attr && d_attr->size() == sr ? (*d_attr)[i] : 1;
    int64_t extent = (k - 1) * d + 1;
    const sdk::AxisPads p = sdk::resolve_pads(
        auto_pad, xd[2 + i], yd[2 + i], k, s, d,
        explicit_pads ? sdk::AxisPads{(*p_attr)[i], (*p_attr)[sr + i]} : sdk::AxisPads{});
    int64_t pl = p.begin;
    // oneDNN rounds the output extent down: ceil_mode (and SAME) need the right padding that
    // reaches the inferred output.
    int64_t pr = std::max(p.end, (yd[2 + i] - 1) * s + extent - xd[2 + i] - pl);
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
  const dnnl::memory::desc src_md = b.slot_md(src);
  const dnnl::memory::data_type type = src_md.data_type();
  if (max && !global && sr == 2 &&
      (type == dnnl::memory::data_type::s8 || type == dnnl::memory::data_type::u8)) {
    // int8/uint8 channels-last: the device's own kernel (max_pool_int8.hpp says why).
    MaxPoolInt8Shape shape;
    shape.batch = xd[0];
    shape.channels = xd[1];
    shape.height = xd[2];
    shape.width = xd[3];
    shape.out_height = yd[2];
    shape.out_width = yd[3];
    shape.kernel_h = kernel[0];
    shape.kernel_w = kernel[1];
    shape.stride_h = strides[0];
    shape.stride_w = strides[1];
    shape.dilation_h = dilation[0] + 1;
    shape.dilation_w = dilation[1] + 1;
    shape.pad_top = pad_l[0];
    shape.pad_left = pad_l[1];
    shape.is_signed = type == dnnl::memory::data_type::s8;
    const int nhwc = b.as(x, dnnl::memory::desc(xd, type, tag::acdb));
    const int dst = b.define(y, dnnl::memory::desc(yd, type, tag::acdb));
    b.add_kernel_step(
        [shape](const std::unordered_map<int, dnnl::memory>& mem) {
          max_pool_int8(shape, mem.at(DNNL_ARG_SRC).get_data_handle(),
                        mem.at(DNNL_ARG_DST).get_data_handle());
        },
        {{DNNL_ARG_SRC, nhwc}, {DNNL_ARG_DST, dst}},
        n.op + " " + n.view->name + " [loom max pool int8]", "loom max pool int8");
    return;
  }
  auto make = [&](const dnnl::memory::desc& from) {
    dnnl::memory::desc dst_md(yd, from.data_type(), tag::any);
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, a, from, dst_md, strides,
                                     kernel, dilation, pad_l, pad_r);
    return dnnl::pooling_v2_forward::primitive_desc(d, b.engine());
  };
  dnnl::pooling_v2_forward::primitive_desc pd = make(src_md);
  if (std::string(pd.impl_info_str()).find("jit") == std::string::npos) {
    if (auto jit_md = jit_pool_layout(b, src_md); jit_md && *jit_md != src_md) {
      // Only where oneDNN then has a jit kernel: the reorder is not worth it for another
      // simple one. The descriptor is made before the reorder, which is added only if taken.
      dnnl::pooling_v2_forward::primitive_desc jit_pd = make(*jit_md);
      if (std::string(jit_pd.impl_info_str()).find("jit") != std::string::npos) {
        pd = jit_pd;
        src = b.as(x, *jit_md);
      }
    }
  }
  int dst = b.define(y, pd.dst_desc());
  b.add_step(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             n.op + " " + n.view->name + " [" + pd.impl_info_str() + "]");
}

namespace {

std::string check_pool(const loom_graph_t& graph, const loom_node_t& node) {
  const std::string op = node.op_type;
  sdk::Attributes attrs(node);
  Info x = sdk::node_input(graph, node, 0);
  if (has_extra_outputs(node, 1)) return "MaxPool with Indices";
  if (x->rank < 3 || x->rank > 5) return "only 1D, 2D and 3D pooling";
  if (!attrs.get_ints("kernel_shape")) return "no kernel_shape";
  if (op == "AveragePool" && attrs.get_int("ceil_mode", 0) && attrs.get_int("count_include_pad", 0))
    return "AveragePool with ceil_mode and count_include_pad";
  return "";
}

std::string check_global_pool(const loom_graph_t& graph, const loom_node_t& node) {
  Info x = sdk::node_input(graph, node, 0);
  return x->rank >= 3 && x->rank <= 5 ? "" : "only 1D, 2D and 3D pooling";
}

}  // namespace

LOOM_ONEDNN_OP("MaxPool", check_pool, emit_pool);
LOOM_ONEDNN_OP("AveragePool", check_pool, emit_pool);
LOOM_ONEDNN_OP("GlobalAveragePool", check_global_pool, emit_pool);
LOOM_ONEDNN_OP("GlobalMaxPool", check_global_pool, emit_pool);

}  // namespace loom::onednn
