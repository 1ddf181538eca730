// PRelu through oneDNN's prelu primitive (a constant slope broadcast to the input), and Pad in
// constant mode with constant pads: over dense unblocked tensors the device's own kernel
// (pad_constant.hpp) writes the destination in one pass; over channel-blocked ones the
// destination is filled with the value, then the source is reordered into the sub-memory view
// of the destination that excludes the pads. TFLite
// models (BlazeFace, face landmarks) have a PRELU after most convolutions and a channel PAD on
// every shortcut; without these mappings each one ran on cpu and split the onednn graph.
#include <algorithm>
#include <cstring>

#include "builder.hpp"
#include "pad_constant.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

// The pads of a Pad node (ONNX order: begins of each axis, then ends) for an input of `rank`,
// spread over every axis; `pads`/`axes` are the operands' integers (opset >= 11) or the
// attribute (`axes` empty: every axis). Empty with `why` set when they do not fit the rank.
std::vector<int64_t> full_pads(std::span<const int64_t> pads, std::span<const int64_t> axes,
                               int64_t rank, std::string& why) {
  std::vector<int64_t> out(static_cast<size_t>(2 * rank), 0);
  const size_t n = axes.empty() ? static_cast<size_t>(rank) : axes.size();
  if (pads.size() != 2 * n) {
    why = "Pad with " + std::to_string(pads.size()) + " pads for " + std::to_string(n) + " axes";
    return {};
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (axis < -rank || axis >= rank) {
      why = "Pad axis out of range";
      return {};
    }
    if (axis < 0) axis += rank;
    out[static_cast<size_t>(axis)] = pads[i];
    out[static_cast<size_t>(axis + rank)] = pads[n + i];
  }
  return out;
}

// The axes of `md` from outermost to innermost in memory (by decreasing stride; ties keep the
// logical order).
std::vector<int> axis_order(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  std::vector<int> order(static_cast<size_t>(d.ndims));
  for (int i = 0; i < d.ndims; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return d.format_desc.blocking.strides[a] > d.format_desc.blocking.strides[b];
  });
  return order;
}

// True when `md` is unblocked and dense in `order` (no padding, no offset; axes of extent 1 may
// have any stride).
bool dense_in_order(const dnnl::memory::desc& md, const std::vector<int>& order) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 || d.offset0 != 0 ||
      order.size() != static_cast<size_t>(d.ndims))
    return false;
  int64_t expect = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const int a = order[i];
    if (d.padded_dims[a] != d.dims[a]) return false;
    if (d.dims[a] == 1) continue;
    if (d.format_desc.blocking.strides[a] != expect) return false;
    expect *= d.dims[a];
  }
  return true;
}

std::vector<int64_t> ints_of(const void* data, size_t size, loom_dtype_t type) {
  if (type == LOOM_DTYPE_INT64) {
    const auto* d = static_cast<const int64_t*>(data);
    return {d, d + size / sizeof(int64_t)};
  }
  const auto* d = static_cast<const int32_t*>(data);
  return {d, d + size / sizeof(int32_t)};
}

}  // namespace

std::string why_pad_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  auto in = [&](size_t i) { return sdk::node_input(graph, node, i); };
  Info x = in(0);
  std::string mode = attrs.get_string("mode", "constant");
  if (mode != "constant") return "Pad mode '" + mode + "' (only constant)";
  if (x->rank < 1) return "Pad of a scalar";
  std::vector<int64_t> pads, axes;
  if (node.opset < 11) {
    auto p = attrs.get_ints("pads");
    if (!p) return "Pad without pads";
    pads.assign(p->begin(), p->end());
  } else {
    Info p = in(1);
    if (!is_constant(p) || (p->dtype != LOOM_DTYPE_INT64 && p->dtype != LOOM_DTYPE_INT32))
      return "Pad with non-constant pads";
    pads = ints_of(p->data, p->data_size, p->dtype);
    Info c = in(2);
    if (c && (!is_constant(c) || c->dtype != x->dtype || c->data_size != sdk::dtype_size(c->dtype)))
      return "Pad with a constant_value that is not a constant scalar of the input's type";
    Info a = in(3);
    if (a) {
      if (!is_constant(a) || (a->dtype != LOOM_DTYPE_INT64 && a->dtype != LOOM_DTYPE_INT32))
        return "Pad with non-constant axes";
      axes = ints_of(a->data, a->data_size, a->dtype);
    }
  }
  std::string why;
  std::vector<int64_t> full = full_pads(pads, axes, x->rank, why);
  if (full.empty()) return why;
  for (int64_t p : full)
    if (p < 0) return "Pad with negative pads (a crop)";
  return "";
}

std::string why_prelu_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  Info x = sdk::node_input(graph, node, 0);
  Info slope = sdk::node_input(graph, node, 1);
  if (!slope) return "PRelu without a slope";
  if (!is_constant(slope) && !dequantized_constant(graph, node.inputs[1]))
    return "PRelu slope is not a constant";
  if (x->rank < 1) return "PRelu of a scalar";
  if (slope->rank < 0 || slope->rank > x->rank)
    return "PRelu slope of a higher rank than its input";
  // Unidirectional broadcast: each slope extent (aligned to the right) is 1 or the input's.
  for (int32_t i = 0; i < slope->rank; ++i) {
    int64_t s = slope->dims[slope->rank - 1 - i], d = x->dims[x->rank - 1 - i];
    if (s != 1 && s != d) return "PRelu slope does not broadcast to the input";
  }
  return "";
}

void emit_prelu(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  int x = n.inputs[0], slope = n.inputs[1], y = n.outputs[0];
  if (!g.value(slope).constant())
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              std::string("onednn: PRelu '") + n.view->name + "': slope not constant");
  const std::vector<int64_t>& xd = g.value(x).dims;
  std::vector<int64_t> wd = pad_rank(g.value(slope).dims, xd.size());
  std::vector<float> w = constant_floats(g, slope);
  int src = b.slot_of(x);
  const dnnl::memory::desc src_md = b.slot_md(src);
  auto make = [&](const dnnl::memory::desc& weights) {
    dnnl::prelu_forward::desc d(dnnl::prop_kind::forward_inference, src_md, weights);
    return dnnl::prelu_forward::primitive_desc(d, b.engine());
  };
  // The primitive picks the slope's layout from the source's (a per-channel slope of a blocked
  // tensor is read by whole blocks); plain where it takes no `any`.
  std::optional<dnnl::prelu_forward::primitive_desc> pd;
  try {
    pd = make(dnnl::memory::desc(wd, dt::f32, tag::any));
  } catch (const dnnl::error&) {
    pd = make(plain_md(wd, dt::f32));
  }
  int ws = b.constant_slot(w, wd, pd->weights_desc());
  int dst = b.define(y, pd->dst_desc());
  b.add_step(dnnl::prelu_forward(*pd),
             {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, ws}, {DNNL_ARG_DST, dst}},
             std::string("PRelu ") + n.view->name + " [" + pd->impl_info_str() + "]");
}

void emit_pad(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& xd = g.value(x).dims;
  const std::vector<int64_t>& yd = g.value(y).dims;
  const int64_t rank = static_cast<int64_t>(xd.size());
  std::vector<int64_t> pads, axes;
  // The fill value's bytes in the tensor's type (float32, int8 or uint8).
  unsigned char value[4] = {0, 0, 0, 0};
  if (n.opset < 11) {
    auto p = attrs.get_ints("pads");
    if (p) pads.assign(p->begin(), p->end());
    float v = attrs.get_float("value", 0.f);
    std::memcpy(value, &v, sizeof v);
  } else {
    pads = constant_ints(g, n.inputs[1]);
    int c = g.in(n, 2);
    if (c >= 0) {
      const IrValue& cv = g.value(c);
      if (!cv.constant() || cv.data_size > sizeof value || cv.data_size == 0)
        sdk::fail(LOOM_ERROR_UNSUPPORTED,
                  std::string("onednn: Pad '") + n.view->name + "': constant_value");
      std::memcpy(value, cv.data, cv.data_size);
    }
    if (int a = g.in(n, 3); a >= 0) axes = constant_ints(g, a);
  }
  std::string why;
  std::vector<int64_t> full = full_pads(pads, axes, rank, why);
  if (full.empty())
    sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("onednn: Pad '") + n.view->name + "': " + why);
  dnnl::memory::dims offsets(full.begin(), full.begin() + rank);
  int src = b.slot_of(x);
  const dnnl::memory::desc src_md = b.slot_md(src);
  const dt type = src_md.data_type();
  const size_t elem = dnnl::memory::data_type_size(type);
  const bool zero = std::all_of(value, value + elem, [](unsigned char c) { return c == 0; });
  // The destination in the source's layout where a sub-memory view of it can take the source
  // (blocked channels: whole blocks at block offsets) and, for a non-zero value, it has no
  // padded channels (oneDNN needs those zero); else plain.
  std::vector<dnnl::memory::desc> candidates;
  if (std::optional<tag> t = layout_tag(src_md)) candidates.emplace_back(yd, type, *t);
  candidates.push_back(plain_md(yd, type));
  // Dense and unblocked on both sides, in one axis order: the own kernel, one step.
  if (const std::vector<int> order = axis_order(candidates[0]);
      rank > 0 && (elem == 1 || elem == 2 || elem == 4) && dense_in_order(candidates[0], order) &&
      dense_in_order(src_md, order)) {
    PadConstantShape shape;
    shape.element_size = elem;
    std::memcpy(shape.value, value, sizeof shape.value);
    for (int a : order) {
      shape.src_dims.push_back(xd[static_cast<size_t>(a)]);
      shape.dst_dims.push_back(yd[static_cast<size_t>(a)]);
      shape.before.push_back(full[static_cast<size_t>(a)]);
    }
    int dst = b.define(y, candidates[0]);
    b.add_kernel_step(
        [shape](const std::unordered_map<int, dnnl::memory>& args) {
          pad_constant(shape, args.at(DNNL_ARG_FROM).get_data_handle(),
                       args.at(DNNL_ARG_TO).get_data_handle());
        },
        {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}},
        std::string("Pad ") + n.view->name + " [loom pad]", "loom pad");
    return;
  }
  std::optional<dnnl::memory::desc> dst_md, sub_md;
  std::optional<dnnl::reorder::primitive_desc> copy;
  for (const dnnl::memory::desc& md : candidates) {
    if (!zero && md.get_size() != static_cast<size_t>(g.value(y).elements()) * elem) continue;
    try {
      dnnl::memory::desc sub = md.submemory_desc(xd, offsets);
      copy = dnnl::reorder::primitive_desc(b.engine(), src_md, b.engine(), sub);
      dst_md = md;
      sub_md = sub;
      break;
    } catch (const dnnl::error&) {
    }
  }
  if (!dst_md)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              std::string("onednn: Pad '") + n.view->name + "': no reorder into it");
  int dst = b.define(y, *dst_md);
  const bool pads_anything = std::any_of(full.begin(), full.end(), [](int64_t p) { return p > 0; });
  if (pads_anything) {
    float f = 0.f;
    std::memcpy(&f, value, sizeof f);
    const unsigned char byte = value[0];
    b.add_kernel_step(
        [zero, type, f, byte](const std::unordered_map<int, dnnl::memory>& args) {
          const dnnl::memory& m = args.at(DNNL_ARG_DST);
          void* data = m.get_data_handle();
          const size_t size = m.get_desc().get_size();
          if (zero)
            std::memset(data, 0, size);
          else if (type == dt::f32)
            std::fill_n(static_cast<float*>(data), size / sizeof(float), f);
          else
            std::memset(data, byte, size);
        },
        {{DNNL_ARG_DST, dst}}, std::string("Pad ") + n.view->name + " fill", "loom fill");
  }
  int into = b.view(dst, *sub_md);
  b.add_step(dnnl::reorder(*copy), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, into}},
             std::string("Pad ") + n.view->name + " [" + copy->impl_info_str() + "]");
}

LOOM_ONEDNN_OP("Pad", why_pad_unsupported, emit_pad);
LOOM_ONEDNN_OP("PRelu", why_prelu_unsupported, emit_prelu);

}  // namespace loom::onednn
