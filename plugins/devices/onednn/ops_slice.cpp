// Slice, Split and Gather with constant indices: every output (or every piece of a Gather
// output) is a box of the input (a first index, a count and a step per axis), made by one
// reorder from a strided sub-memory view of the input into a new slot. The view keeps the
// input's layout when the box is made of whole blocks of it (a channel slice of nChw16c at
// multiples of 16, or its last, partial block) and its steps fall on unblocked axes (H, W), so
// a slice between two blocked convolutions costs one copy and no layout change; otherwise the
// input is taken plain first. A strided box of a plain tensor is a plain descriptor with the
// strides multiplied by the steps (oneDNN's reorder reads any positive strides).
// Negative steps would need negative strides, which oneDNN 2.6's descriptors refuse
// (dnnl_memory_desc_init_by_strides), and empty boxes have nothing to copy: the placement check
// refuses those (the cpu device takes them) with the same rules the emitter applies, so a
// claimed node always compiles.
#include <algorithm>
#include <functional>

#include "builder.hpp"

namespace loom::onednn {

namespace {

// The part of the input one output covers: along axis d, extents[d] indices from offsets[d]
// on, steps[d] apart (steps are 1 where the extent is 1).
struct Box {
  std::vector<int64_t> offsets, extents, steps;
};

// All of a tensor of `dims`.
Box whole(const std::vector<int64_t>& dims) {
  return {std::vector<int64_t>(dims.size(), 0), dims, std::vector<int64_t>(dims.size(), 1)};
}

// A Gather output seen with its indices flattened to one axis (the same row-major bytes):
// the input's dims with `count` at `axis`. Each piece is an increasing, evenly spaced run of
// the indices, copied as one box to position `at` along that axis.
struct GatherPlan {
  size_t axis = 0;
  int64_t count = 0;
  struct Piece {
    Box box;
    int64_t at = 0;
  };
  std::vector<Piece> pieces;
};

// Each piece is one reorder step: an index list that does not fall into this many runs is
// left to the cpu device, whose gather loop is as fast as many small reorders.
constexpr size_t kMaxGatherPieces = 16;

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
// [0, dim] (so INT64_MAX-style ends mean "to the end"). These are the rules for positive
// steps; negative ones (which clamp to [-1, dim - 1]) are refused before.
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
  box = whole(dims);
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes.present ? axes.values[i] : static_cast<int64_t>(i);
    if (axis < -rank || axis >= rank)
      return "Slice axis " + str(axis) + " is out of range for rank " + str(rank);
    size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (seen[a]) return "Slice repeats axis " + str(axis);
    seen[a] = true;
    int64_t step = steps.present ? steps.values[i] : 1;
    if (step == 0) return "Slice with step 0 on axis " + str(axis) + " (ONNX forbids it)";
    if (step < 0)
      return "Slice with step " + str(step) + " on axis " + str(axis) +
             ": a negative step needs negative strides, which oneDNN 2.6's memory descriptors "
             "refuse";
    int64_t dim = dims[a];
    if (dim < 0) return "Slice along axis " + str(axis) + " of unknown extent";
    int64_t start = clamp_index(starts.values[i], dim), end = clamp_index(ends.values[i], dim);
    if (end <= start) return "Slice result is empty along axis " + str(axis);
    int64_t count = (end - start - 1) / step + 1;  // ceil((end - start) / step), no overflow
    box.offsets[a] = start;
    box.extents[a] = count;
    box.steps[a] = count > 1 ? step : 1;
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
    Box box = whole(dims);
    box.offsets[a] = offset;
    box.extents[a] = size;
    boxes.push_back(std::move(box));
    offset += size;
  }
  if (boxes.size() != sizes.size() || offset != dim)
    return "Split sizes do not add up to the extent " + str(dim) + " of axis " + str(axis);
  return "";
}

// The pieces of a Gather of a tensor of `dims` by constant indices (any shape: they are
// read flattened) along the `axis` attribute. Negative indices count from the end; one out of
// range is refused here, so the cpu device reports the run-time error ONNX asks for.
std::string plan_gather(const loom_node_t& node, const std::vector<int64_t>& dims,
                        const OperandReader& input, GatherPlan& plan) {
  int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return "Gather of a scalar";
  int64_t axis = sdk::Attributes(node).get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    return "Gather axis " + str(axis) + " is out of range for rank " + str(rank);
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  int64_t dim = dims[a];
  if (dim < 0) return "Gather along axis " + str(axis) + " of unknown extent";
  IntOperand indices = input(1);
  if (!indices.present) return "Gather without indices";
  if (!indices.known) return "Gather indices are not an integer constant";
  if (indices.values.empty()) return "Gather with no indices";
  std::vector<int64_t> idx;
  for (int64_t i : indices.values) {
    if (i < -dim || i >= dim)
      return "Gather index " + str(i) + " is out of range for extent " + str(dim) + " of axis " +
             str(axis);
    idx.push_back(i < 0 ? i + dim : i);
  }
  plan.axis = a;
  plan.count = static_cast<int64_t>(idx.size());
  plan.pieces.clear();
  for (size_t i = 0; i < idx.size();) {
    size_t n = 1;
    int64_t step = 1;
    if (i + 1 < idx.size() && idx[i + 1] > idx[i]) {
      step = idx[i + 1] - idx[i];
      for (n = 2; i + n < idx.size() && idx[i + n] - idx[i + n - 1] == step;) ++n;
    }
    if (plan.pieces.size() == kMaxGatherPieces)
      return "Gather of " + str(plan.count) + " indices that are not " +
             str(static_cast<int64_t>(kMaxGatherPieces)) +
             " or fewer increasing, evenly spaced runs (one copy each)";
    Box box = whole(dims);
    box.offsets[a] = idx[i];
    box.extents[a] = static_cast<int64_t>(n);
    box.steps[a] = n > 1 ? step : 1;
    plan.pieces.push_back({std::move(box), static_cast<int64_t>(i)});
    i += n;
  }
  return "";
}

std::string plan_boxes(const loom_node_t& node, const std::vector<int64_t>& dims,
                       const OperandReader& input, std::vector<Box>& boxes) {
  if (dims.empty()) return std::string(node.op_type) + " of a scalar";
  if (std::string(node.op_type) == "Split") return plan_split(node, dims, input, boxes);
  boxes.resize(1);
  return plan_slice(node, dims, input, boxes[0]);
}

// The indices a box spans along each axis, from its first to its last (steps included).
std::vector<int64_t> box_span(const Box& box) {
  std::vector<int64_t> span(box.extents.size());
  for (size_t d = 0; d < span.size(); ++d) span[d] = (box.extents[d] - 1) * box.steps[d] + 1;
  return span;
}

// True when a strided sub-memory at `box` is valid in `md`'s layout: along every blocked axis
// the box has step 1, starts at a block boundary and spans whole blocks, or is the last,
// partial block (oneDNN 2.6's submemory_desc refuses other boxes, one shorter than a block
// that stops before the end would describe a padded extent smaller than a block, and a step
// inside a block has no stride to multiply).
bool box_fits_blocks(const dnnl::memory::desc& md, const Box& box) {
  if (md.data.format_kind != dnnl_blocked) return false;
  const dnnl_blocking_desc_t& blocking = md.data.format_desc.blocking;
  std::vector<int64_t> block(box.offsets.size(), 1);
  for (int i = 0; i < blocking.inner_nblks; ++i)
    block[static_cast<size_t>(blocking.inner_idxs[i])] *= blocking.inner_blks[i];
  std::vector<int64_t> span = box_span(box);
  for (size_t d = 0; d < box.offsets.size(); ++d) {
    if (block[d] == 1) continue;
    if (box.steps[d] != 1 || md.data.padded_offsets[d] != 0 || box.offsets[d] % block[d] != 0)
      return false;
    bool whole_blocks = span[d] % block[d] == 0;
    bool last_block = span[d] < block[d] && box.offsets[d] + span[d] == md.data.dims[d];
    if (!whole_blocks && !last_block) return false;
  }
  return true;
}

// `box` of a tensor laid out as `md` (where box_fits_blocks holds): the sub-memory of the
// span, then along each strided axis (never a blocked one) the extent cut to the box's count
// and the stride multiplied by its step.
dnnl::memory::desc strided_submemory(const dnnl::memory::desc& md, const Box& box) {
  dnnl::memory::desc sub = md.submemory_desc(box_span(box), box.offsets);
  for (size_t d = 0; d < box.steps.size(); ++d) {
    if (box.steps[d] == 1) continue;
    sub.data.dims[d] = sub.data.padded_dims[d] = box.extents[d];
    sub.data.format_desc.blocking.strides[d] *= box.steps[d];
  }
  return sub;
}

// The slot of value `x` that `box` is read from: its current one, or its plain form.
int box_source(Builder& b, int x, const Box& box) {
  int src = b.slot_of(x);
  return box_fits_blocks(b.slot_md(src), box) ? src : b.as_plain(x);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + str(dims[i]);
  return s + "]";
}

// One reorder step from view `from` into view `to`.
void add_copy(Builder& b, const std::string& label, int from, int to) {
  dnnl::reorder::primitive_desc pd(b.engine(), b.slot_md(from), b.engine(), b.slot_md(to));
  b.add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
             label + " [" + pd.impl_info_str() + "]");
}

// Copies `box` of value `x` into a new slot bound to value `y`, in the source's layout when it
// is one of the tagged ones (plain, channels-last, channel-blocked), else plain.
void emit_box(Builder& b, const std::string& label, int x, int y, const Box& box) {
  int src = box_source(b, x, box);
  const dnnl::memory::desc md = b.slot_md(src);
  std::optional<dnnl::memory::format_tag> tag = layout_tag(md);
  dnnl::memory::desc dst_md = tag ? dnnl::memory::desc(box.extents, md.data_type(), *tag)
                                  : plain_md(box.extents, md.data_type());
  int from = b.view(src, strided_submemory(md, box));
  add_copy(b, label, from, b.define(y, dst_md));
}

// Reads a Slice/Split/Gather operand from the compile-time IR (constants only).
OperandReader ir_reader(const IrGraph& g, const IrNode& n) {
  return [&g, &n](size_t i) {
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
  if (std::string(node.op_type) == "Gather") {
    GatherPlan plan;
    return plan_gather(node, dims, read, plan);
  }
  std::vector<Box> boxes;
  return plan_boxes(node, dims, read, boxes);
}

void emit_slice(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const std::string label = n.op + " " + n.view->name;
  int x = n.inputs[0];
  std::vector<Box> boxes;
  if (std::string why = plan_boxes(*n.view, g.value(x).dims, ir_reader(g, n), boxes); !why.empty())
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

void emit_gather(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  const std::string label = n.op + " " + n.view->name;
  int x = n.inputs[0], y = n.outputs[0];
  const std::vector<int64_t>& dims = g.value(x).dims;
  GatherPlan plan;
  if (std::string why = plan_gather(*n.view, dims, ir_reader(g, n), plan); !why.empty())
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: " + label + ": " + why);
  if (y < 0) return;
  // The output is the input's dims with the indices' shape in place of the axis.
  const std::vector<int64_t>& index_dims = g.value(n.inputs[1]).dims;
  std::vector<int64_t> want(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(plan.axis));
  want.insert(want.end(), index_dims.begin(), index_dims.end());
  want.insert(want.end(), dims.begin() + static_cast<std::ptrdiff_t>(plan.axis) + 1, dims.end());
  if (g.value(y).dims != want)
    sdk::fail(LOOM_ERROR_INTERNAL, "onednn: " + label + ": the output has shape " +
                                       dims_text(g.value(y).dims) + " but the node selects " +
                                       dims_text(want));
  const dnnl::memory::data_type type = b.md_of(x).data_type();
  std::vector<int64_t> flat_dims = dims;
  flat_dims[plan.axis] = plan.count;
  const dnnl::memory::desc flat = plain_md(flat_dims, type);
  int out = b.define(y, plain_md(want, type));
  for (const GatherPlan::Piece& piece : plan.pieces) {
    int src = box_source(b, x, piece.box);
    int from = b.view(src, strided_submemory(b.slot_md(src), piece.box));
    std::vector<int64_t> at(dims.size(), 0);
    at[plan.axis] = piece.at;
    add_copy(b, label, from, b.view(out, flat.submemory_desc(piece.box.extents, at)));
  }
}

LOOM_ONEDNN_OP("Slice", why_slice_unsupported, emit_slice);
LOOM_ONEDNN_OP("Split", why_slice_unsupported, emit_slice);
LOOM_ONEDNN_OP("Gather", why_slice_unsupported, emit_gather);

}  // namespace loom::onednn
