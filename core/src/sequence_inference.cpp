// Type inference of sequence and optional nodes. The schemas' inference functions see values
// through loom_value_info_t, which has no sequence types, so the core infers these nodes
// itself: a container's facts are its kind, its element dtype and the elements' common shape
// (what is not common stays unknown).
#include "sequence_ops.hpp"

namespace loom::core {
namespace {

bool is_container(ValueKind k) {
  return k != ValueKind::kTensor;
}

ValueFacts unknown_facts() {
  ValueFacts f;
  f.known = true;
  return f;
}

ValueFacts container(ValueKind kind, loom_dtype_t dtype, Shape shape = {}) {
  ValueFacts f;
  f.known = true;
  f.kind = kind;
  f.dtype = dtype;
  f.shape = std::move(shape);
  return f;
}

ValueFacts tensor(loom_dtype_t dtype, Shape shape = {}) {
  return container(ValueKind::kTensor, dtype, std::move(shape));
}

// The shape both `a` and `b` have: unknown where they differ.
Shape join(const Shape& a, const Shape& b) {
  if (a.rank != b.rank || a.rank < 0) return {};
  Shape out;
  out.rank = a.rank;
  for (int32_t d = 0; d < a.rank; ++d) out.dims.push_back(a.dims[d] == b.dims[d] ? a.dims[d] : -1);
  return out;
}

int64_t attr_int(const Node& node, const char* name, int64_t fallback) {
  const Attribute* a = node.find_attribute(name);
  return a ? a->i : fallback;
}

const ValueFacts* input(const std::vector<const ValueFacts*>& inputs, size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

// Facts of output 0 for the ops with one output.
ValueFacts infer_one(const Node& node, const std::vector<const ValueFacts*>& in) {
  const std::string& op = node.op_type;
  const ValueFacts* x = input(in, 0);
  if (op == "SequenceEmpty") {
    int64_t dtype = attr_int(node, "dtype", LOOM_DTYPE_FLOAT32);
    bool valid = dtype >= LOOM_DTYPE_FLOAT32 && dtype <= LOOM_DTYPE_BFLOAT16;  // the run reports
    return container(ValueKind::kSequence,
                     valid ? static_cast<loom_dtype_t>(dtype) : LOOM_DTYPE_UNDEFINED);
  }
  if (op == "SequenceConstruct") {
    if (!x) return container(ValueKind::kSequence, LOOM_DTYPE_UNDEFINED);
    Shape shape = x->shape;
    for (const ValueFacts* f : in)
      if (f) shape = join(shape, f->shape);
    return container(ValueKind::kSequence, x->dtype, shape);
  }
  if (op == "SequenceInsert") {
    const ValueFacts* t = input(in, 1);
    loom_dtype_t dtype = x && x->dtype != LOOM_DTYPE_UNDEFINED ? x->dtype
                         : t                                   ? t->dtype
                                                               : LOOM_DTYPE_UNDEFINED;
    // An empty sequence's element shape is unknown: the insert may still fix it, but later
    // inserts may not agree, so only a shape both sides know survives.
    Shape shape = x && t ? join(x->shape, t->shape) : Shape{};
    return container(ValueKind::kSequence, dtype, shape);
  }
  if (op == "SequenceErase") return x ? *x : container(ValueKind::kSequence, LOOM_DTYPE_UNDEFINED);
  if (op == "SequenceAt") return x ? tensor(x->dtype, x->shape) : unknown_facts();
  if (op == "SequenceLength") return tensor(LOOM_DTYPE_INT64, Shape{0, {}, {}});
  if (op == "ConcatFromSequence") {
    if (!x || x->shape.rank < 0) return tensor(x ? x->dtype : LOOM_DTYPE_UNDEFINED);
    bool new_axis = attr_int(node, "new_axis", 0) != 0;
    Shape shape = x->shape;
    int64_t rank = shape.rank + (new_axis ? 1 : 0), axis = attr_int(node, "axis", 0);
    if (axis < -rank || axis >= rank) return tensor(x->dtype);  // the run reports it
    if (axis < 0) axis += rank;
    if (new_axis) {
      shape.dims.insert(shape.dims.begin() + axis, -1);
      shape.rank += 1;
    } else {
      shape.dims[axis] = -1;
    }
    shape.dim_params.clear();
    return tensor(x->dtype, shape);
  }
  if (op == "SplitToSequence") {
    if (!x) return container(ValueKind::kSequence, LOOM_DTYPE_UNDEFINED);
    Shape shape = x->shape;
    int64_t axis = attr_int(node, "axis", 0);
    if (shape.rank <= 0 || axis < -shape.rank || axis >= shape.rank)
      return container(ValueKind::kSequence, x->dtype);
    if (axis < 0) axis += shape.rank;
    shape.dim_params.clear();
    if (input(in, 1)) {
      shape.dims[axis] = -1;  // chunk lengths depend on the split input's data
    } else if (attr_int(node, "keepdims", 1) == 0) {
      shape.dims.erase(shape.dims.begin() + axis);
      shape.rank -= 1;
    } else {
      shape.dims[axis] = 1;
    }
    return container(ValueKind::kSequence, x->dtype, shape);
  }
  if (op == "Optional") {
    if (!x) return container(ValueKind::kOptionalTensor, LOOM_DTYPE_UNDEFINED);
    return container(
        x->kind == ValueKind::kSequence ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor,
        x->dtype, x->shape);
  }
  if (op == "OptionalHasElement") return tensor(LOOM_DTYPE_BOOL, Shape{0, {}, {}});
  if (op == "OptionalGetElement") {
    if (!x) return unknown_facts();
    if (x->kind == ValueKind::kOptionalSequence)
      return container(ValueKind::kSequence, x->dtype, x->shape);
    if (x->kind == ValueKind::kOptionalTensor) return tensor(x->dtype, x->shape);
    return *x;
  }
  if (op == "Identity") return x ? *x : unknown_facts();
  return unknown_facts();
}

}  // namespace

bool infer_sequence_node(const Node& node, const std::vector<const ValueFacts*>& inputs,
                         std::vector<ValueFacts>& outputs) {
  bool identity_of_container = node.op_type == "Identity" &&
                               (node.domain.empty() || node.domain == "ai.onnx") &&
                               !inputs.empty() && inputs[0] && is_container(inputs[0]->kind);
  if (!is_sequence_op(node) && !identity_of_container) return false;
  outputs.assign(node.outputs.size(), unknown_facts());
  if (node.op_type == "SequenceMap") {
    // One sequence per body output, of the body's declared element types.
    const Attribute* body = node.find_attribute("body");
    for (size_t o = 0; o < outputs.size(); ++o) {
      loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
      Shape shape;
      if (body && body->graph && o < body->graph->outputs.size()) {
        const Value& v = body->graph->values[body->graph->outputs[o]];
        dtype = v.dtype;
        shape = v.shape;
      }
      outputs[o] = container(ValueKind::kSequence, dtype, shape);
    }
    return true;
  }
  if (!outputs.empty()) outputs[0] = infer_one(node, inputs);
  // A tensor taken out of a container has the shape of whichever element the data picks, known
  // only when the step runs. Devices that compile for known shapes must not take its readers
  // expecting the extents by then, so a shape not fully known is reported as an unknown rank.
  if (!outputs.empty() && outputs[0].kind == ValueKind::kTensor && !outputs[0].shape.is_static())
    outputs[0].shape = Shape{};
  return true;
}

}  // namespace loom::core
