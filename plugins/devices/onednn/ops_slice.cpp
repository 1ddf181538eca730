// Slice and Split: every output is a box of the input (an offset and an extent per axis), made
// by one reorder from a sub-memory view of the input into a new slot. The view keeps the
// input's layout when the box is made of whole blocks of it (a channel slice of nChw16c at
// multiples of 16, or its last, partial block), so a slice between two blocked
// convolutions costs one copy and no layout change; otherwise the input is taken plain first.
// Only steps of 1 and non-empty boxes run here: the placement check refuses the rest (the cpu
// device takes them) with the same rules the emitter applies, so a claimed node always compiles.
#include <algorithm>
#include <functional>

#include "builder.hpp"

namespace loom::onednn {

namespace {

// The part of the input one output covers.
struct Box {
  std::vector<int64_t> offsets, extents;
};

// An integer operand of a Slice/Split node: a constant input (opset 10+ Slice, opset 13+
// Split) or an attribute (older opsets).
struct IntOperand {
  bool present = false;  // the model gives it
  bool known = false;    // its values could be read (it is a constant)
  std::vector<int64_t> values;
};
using OperandReader = std::function<IntOperand(size_t input)>;

IntOperand from_attribute(const loom_node_t& node, const char* name) {
  IntOperand o;
  if (auto v = sdk::Attributes(node).get_ints(name)) {
    o.present = o.known = true;
    o.values.assign(v->begin(), v->end());
  }
  return o;
}

IntOperand from_bytes(loom_dtype_t dtype, const void* data, size_t bytes) {
  IntOperand o;
  o.present = true;
  if (!data) return o;
  if (dtype == LOOM_DTYPE_INT64) {
    const auto* d = static_cast<const int64_t*>(data);
    o.values.assign(d, d + bytes / sizeof(int64_t));
    o.known = true;
  } else if (dtype == LOOM_DTYPE_INT32) {
    const auto* d = static_cast<const int32_t*>(data);
    o.values.assign(d, d + bytes / sizeof(int32_t));
    o.known = true;
  }
  return o;
}

std::string str(int64_t v) {
  return std::to_string(v);
}

// An ONNX Slice index against extent `dim`: negative counts from the end, then clamped to
// [0, dim] (so INT64_MAX-style ends mean "to the end"). Steps are 1 here.
int64_t clamp_index(int64_t index, int64_t dim) {
  if (index < 0) index += dim;  // no overflow: dim >= 0
  return std::clamp<int64_t>(index, 0, dim);
}

// The box of a Slice (opset 1: attributes; 10+: inputs) of a tensor of `dims` (-1 where
// unknown at placement); returns "" or why this device does not run it.
std::string plan_slice(const loom_node_t& node, const std::vector<int64_t>& dims,
                       const OperandReader& input, Box& box) {
  bool attribute_form = node.opset < 10;
  IntOperand starts = attribute_form ? from_attribute(node, "starts") : input(1);
  IntOperand ends = attribute_form ? from_attribute(node, "ends") : input(2);
  IntOperand axes = attribute_form ? from_attribute(node, "axes") : input(3);
  IntOperand steps = attribute_form ? IntOperand{} : input(4);
  for (const IntOperand* o : {&starts, &ends, &axes, &steps})
    if (o->present && !o->known) return "Slice starts/ends/axes/steps are not integer constants";
  if (!starts.present || !ends.present) return "Slice without starts or ends";
  size_t count = starts.values.size();
  if (ends.values.size() != count || (axes.present && axes.values.size() != count) ||
      (steps.present && steps.values.size() != count))
    return "Slice starts, ends, axes and steps differ in length";
  int64_t rank = static_cast<int64_t>(dims.size());
  box.offsets.assign(dims.size(), 0);
  box.extents = dims;
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes.present ? axes.values[i] : static_cast<int64_t>(i);
    if (axis < -rank || axis >= rank)
      return "Slice axis " + str(axis) + " is out of range for rank " + str(rank);
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (seen[a]) return "Slice repeats axis " + str(axis);
    seen[a] = true;
    int64_t step = steps.present ? steps.values[i] : 1;
    if (step != 1) return "Slice with step " + str(step) + " (only step 1 runs on onednn)";
    int64_t dim = dims[a];
    if (dim < 0) return "Slice along axis " + str(axis) + " of unknown extent";
    int64_t start = clamp_index(starts.values[i], dim), end = clamp_index(ends.values[i], dim);
    if (end <= start) return "Slice result is empty along axis " + str(axis);
    box.offsets[a] = start;
    box.extents[a] = end - start;
  }
  return "";
}

// The boxes of a Split's outputs: sizes from the `split` attribute (opset 2-12) or input
// (13+), else `num_outputs` parts of ceil(extent / n) (18+), else equal parts.
std::string plan_split(const loom_node_t& node, const std::vector<int64_t>& dims,
                       const OperandReader& input, std::vector<Box>& boxes) {
  sdk::Attributes attrs(node);
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = attrs.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    return "Split axis " + str(axis) + " is out of range for rank " + str(rank);
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  int64_t dim = dims[a];
  if (dim < 0) return "Split along axis " + str(axis) + " of unknown extent";
  IntOperand split = node.opset < 13 ? from_attribute(node, "split") : input(1);
  if (split.present && !split.known) return "Split sizes are not an integer constant";
  int64_t outputs = static_cast<int64_t>(node.num_outputs);
  std::vector<int64_t> sizes;
  if (split.present) {
    sizes = split.values;
    if (static_cast<int64_t>(sizes.size()) != outputs)
      return "Split gives " + str(static_cast<int64_t>(sizes.size())) + " sizes for " +
             str(outputs) + " outputs";
  } else if (attrs.has("num_outputs")) {
    int64_t n = attrs.get_int("num_outputs", 0);
    if (n != outputs) return "Split num_outputs " + str(n) + " for " + str(outputs) + " outputs";
    int64_t part = (dim + n - 1) / n;
    sizes.assign(static_cast<size_t>(n), part);
    sizes.back() = dim - part * (n - 1);
  } else {
    if (dim % outputs != 0)
      return "Split of extent " + str(dim) + " into " + str(outputs) + " equal parts";
    sizes.assign(static_cast<size_t>(outputs), dim / outputs);
  }
  int64_t offset = 0;
  for (int64_t size : sizes) {
    if (size <= 0) return "Split with an empty or negative part (" + str(size) + ")";
    if (size > dim - offset) break;
    Box box{std::vector<int64_t>(dims.size(), 0), dims};
    box.offsets[a] = offset;
    box.extents[a] = size;
    boxes.push_back(std::move(box));
    offset += size;
  }
  if (boxes.size() != sizes.size() || offset != dim)
    return "Split sizes do not add up to the extent " + str(dim) + " of axis " + str(axis);
  return "";
}

std::string plan_boxes(const loom_node_t& node, const std::vector<int64_t>& dims,
                       const OperandReader& input, std::vector<Box>& boxes) {
  if (dims.empty()) return std::string(node.op_type) + " of a scalar";
  if (std::string(node.op_type) == "Split") return plan_split(node, dims, input, boxes);
  boxes.resize(1);
  return plan_slice(node, dims, input, boxes[0]);
}

// True when a sub-memory at `box` is valid in `md`'s layout: along every blocked axis the box
// starts at a block boundary and spans whole blocks, or is the last, partial block (oneDNN
// 2.6's submemory_desc refuses other boxes, and one shorter than a block that stops before
// the end would describe a padded extent smaller than a block).
bool box_fits_blocks(const dnnl::memory::desc& md, const Box& box) {
  if (md.data.format_kind != dnnl_blocked) return false;
  const dnnl_blocking_desc_t& blocking = md.data.format_desc.blocking;
  std::vector<int64_t> block(box.offsets.size(), 1);
  for (int i = 0; i < blocking.inner_nblks; ++i)
    block[static_cast<size_t>(blocking.inner_idxs[i])] *= blocking.inner_blks[i];
  for (size_t d = 0; d < box.offsets.size(); ++d) {
    if (md.data.padded_offsets[d] != 0 || box.offsets[d] % block[d] != 0) return false;
    bool whole_blocks = box.extents[d] % block[d] == 0;
    bool last_block =
        box.extents[d] < block[d] && box.offsets[d] + box.extents[d] == md.data.dims[d];
    if (!whole_blocks && !last_block) return false;
  }
  return true;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + str(dims[i]);
  return s + "]";
}

// Copies `box` of value `x` into a new slot bound to value `y`.
void emit_box(Builder& b, const std::string& label, int x, int y, const Box& box) {
  int src = b.slot_of(x);
  if (!box_fits_blocks(b.slot_md(src), box)) src = b.as_plain(x);
  const dnnl::memory::desc md = b.slot_md(src);
  dnnl::memory::desc sub = md.submemory_desc(box.extents, box.offsets);
  std::optional<dnnl::memory::format_tag> tag = layout_tag(md);
  dnnl::memory::desc dst_md = tag ? dnnl::memory::desc(box.extents, md.data_type(), *tag)
                                  : plain_md(box.extents, md.data_type());
  int from = b.view(src, sub);
  int to = b.define(y, dst_md);
  dnnl::reorder::primitive_desc pd(b.engine(), sub, b.engine(), dst_md);
  b.add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
             label + " [" + pd.impl_info_str() + "]");
}

}  // namespace

std::string why_slice_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (!x || x->rank < 0) return std::string(node.op_type) + " input of unknown rank";
  std::vector<int64_t> dims(x->dims, x->dims + x->rank);
  OperandReader read = [&](size_t i) {
    const loom_value_info_t* v = sdk::node_input(graph, node, i);
    if (!v) return IntOperand{};
    if ((v->flags & LOOM_VALUE_CONSTANT) && v->data)
      return from_bytes(v->dtype, v->data, v->data_size);
    // A Constant node's output (compile turns it into a constant): read its tensor.
    for (size_t k = 0; k < graph.num_nodes; ++k) {
      const loom_node_t* c = graph.nodes[k];
      if (std::string(c->op_type) != "Constant" || c->num_outputs != 1 ||
          c->outputs[0] != node.inputs[i])
        continue;
      sdk::Attributes attrs(*c);
      if (const loom_value_info_t* t = attrs.get_tensor("value"))
        return from_bytes(t->dtype, t->data, t->data_size);
      if (attrs.has("value_ints")) return from_attribute(*c, "value_ints");
      if (attrs.has("value_int")) {
        int64_t one = attrs.get_int("value_int", 0);
        return from_bytes(LOOM_DTYPE_INT64, &one, sizeof one);
      }
    }
    IntOperand unknown;
    unknown.present = true;
    return unknown;
  };
  std::vector<Box> boxes;
  return plan_boxes(node, dims, read, boxes);
}

void emit_slice(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const std::string label = n.op + " " + n.view->name;
  int x = n.inputs[0];
  OperandReader read = [&](size_t i) {
    IntOperand o;
    int id = g.in(n, i);
    if (id < 0) return o;
    o.present = true;
    if (g.value(id).constant()) {
      o.values = constant_ints(g, id);
      o.known = true;
    }
    return o;
  };
  std::vector<Box> boxes;
  if (std::string why = plan_boxes(*n.view, g.value(x).dims, read, boxes); !why.empty())
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: " + label + ": " + why);
  for (size_t i = 0; i < boxes.size() && i < n.outputs.size(); ++i) {
    int y = n.outputs[i];
    if (y < 0) continue;
    // The core's shape inference and this plan read the same rules: a disagreement is a bug.
    if (g.value(y).dims != boxes[i].extents)
      sdk::fail(LOOM_ERROR_INTERNAL, "onednn: " + label + ": output " +
                                         str(static_cast<int64_t>(i)) + " has shape " +
                                         dims_text(g.value(y).dims) + " but the node selects " +
                                         dims_text(boxes[i].extents));
    emit_box(b, label, x, y, boxes[i]);
  }
}

}  // namespace loom::onednn
