#include "graph_view.hpp"

namespace loom::core {

GraphView::GraphView(const Graph& g, const ViewOptions& options, const GraphView* parent)
    : g_(g), options_(options), parent_(parent), view_index_(g.values.size(), -1) {
  // Nested graphs never see the session's facts (they are indexed by the top graph's ids).
  if (parent) options_ = ViewOptions{};
  for (size_t id = 0; id < g.values.size(); ++id) add_value(static_cast<int>(id), 0);
  for (const Node& n : g.nodes) add_node(n);
  for (int id : g.inputs) {
    const Value& v = g.values[id];
    bool fed = options_.fed_constants && options_.fed_constants->count(id);
    if (!v.constant || fed) {
      inputs_.push_back(view_index_[id]);
      values_[view_index_[id]].info.flags |= LOOM_VALUE_GRAPH_INPUT;
    }
  }
  for (int id : g.outputs) {
    outputs_.push_back(view_index_[id]);
    values_[view_index_[id]].info.flags |= LOOM_VALUE_GRAPH_OUTPUT;
  }
  finish();
}

GraphView::GraphView(const Graph& g, const std::vector<int>& node_ids,
                     const std::vector<int>& inputs, const std::vector<int>& outputs,
                     const ViewOptions& options)
    : g_(g), options_(options), parent_(nullptr), view_index_(g.values.size(), -1) {
  for (int id : inputs) inputs_.push_back(add_value(id, LOOM_VALUE_GRAPH_INPUT));
  for (int id : outputs) add_value(id, LOOM_VALUE_GRAPH_OUTPUT);
  for (int k : node_ids) {
    const Node& n = g.nodes[k];
    for (int id : n.inputs)
      if (id >= 0) add_value(id, 0);
    for (int id : n.implicit_inputs) add_value(id, 0);
    for (int id : n.outputs)
      if (id >= 0) add_value(id, 0);
  }
  for (int k : node_ids) add_node(g.nodes[k]);
  for (int id : outputs) outputs_.push_back(view_index_[id]);
  finish();
}

int32_t GraphView::index_of(int value_id) const {
  if (value_id < 0 || static_cast<size_t>(value_id) >= view_index_.size()) return -1;
  return view_index_[value_id];
}

void GraphView::fill_constant(ValueStore& store, const ConstantData& c, const std::string& name) {
  store.info.struct_size = sizeof(loom_value_info_t);
  store.info.name = name.c_str();
  store.info.dtype = c.dtype;
  store.dims = c.dims;
  store.info.rank = static_cast<int32_t>(c.dims.size());
  store.info.dims = store.dims.data();
  store.info.flags = LOOM_VALUE_CONSTANT;
  store.info.data = c.data;
  store.info.data_size = c.size;
  store.info.arena_offset = -1;
  store.info.content_id = c.content_id;
}

int32_t GraphView::add_value(int value_id, uint32_t extra_flags) {
  if (view_index_[value_id] >= 0) {
    values_[view_index_[value_id]].info.flags |= extra_flags;
    return view_index_[value_id];
  }
  const Value& v = g_.values[value_id];
  bool fed = options_.fed_constants && options_.fed_constants->count(value_id);
  values_.emplace_back();
  ValueStore& s = values_.back();
  if (v.constant && !fed) {
    fill_constant(s, *v.constant, v.name);
  } else {
    s.info.struct_size = sizeof(loom_value_info_t);
    s.info.name = v.name.c_str();
    const ValueFacts* f = options_.facts && static_cast<size_t>(value_id) < options_.facts->size()
                              ? &(*options_.facts)[value_id]
                              : nullptr;
    const Shape& shape = f && f->known ? f->shape : v.shape;
    s.info.dtype = f && f->known && f->dtype != LOOM_DTYPE_UNDEFINED ? f->dtype : v.dtype;
    s.info.rank = shape.rank;
    s.dims = shape.dims;
    s.info.dims = s.dims.data();
    if (!shape.dim_params.empty()) {
      for (const std::string& p : shape.dim_params) s.dim_params.push_back(p.empty() ? nullptr : p.c_str());
      s.info.dim_params = s.dim_params.data();
    }
    s.info.arena_offset = f ? f->arena_offset : -1;
    // Sequences and optionals (ABI 1.2): flagged, described by their elements.
    switch (f && f->known ? f->kind : v.kind) {
      case ValueKind::kTensor:
        break;
      case ValueKind::kSequence:
        s.info.flags |= LOOM_VALUE_SEQUENCE;
        break;
      case ValueKind::kOptionalTensor:
        s.info.flags |= LOOM_VALUE_OPTIONAL;
        break;
      case ValueKind::kOptionalSequence:
        s.info.flags |= LOOM_VALUE_SEQUENCE | LOOM_VALUE_OPTIONAL;
        break;
    }
    if (v.outer_scope) s.info.flags |= LOOM_VALUE_OUTER_SCOPE;
  }
  s.info.flags |= extra_flags;
  int32_t index = static_cast<int32_t>(values_.size() - 1);
  view_index_[value_id] = index;
  return index;
}

void GraphView::add_node(const Node& n) {
  nodes_.emplace_back();
  NodeStore& s = nodes_.back();
  for (int id : n.inputs) s.inputs.push_back(id >= 0 ? view_index_[id] : -1);
  for (int id : n.outputs) s.outputs.push_back(id >= 0 ? view_index_[id] : -1);
  for (const Attribute& a : n.attributes) {
    s.attrs.emplace_back();
    loom_attribute_t& out = s.attrs.back();
    out.struct_size = sizeof out;
    out.name = a.name.c_str();
    out.type = a.type;
    switch (a.type) {
      case LOOM_ATTR_INT: out.i = a.i; break;
      case LOOM_ATTR_FLOAT: out.f = a.f; break;
      case LOOM_ATTR_STRING:
        out.s = a.s.c_str();
        out.s_size = a.s.size();
        break;
      case LOOM_ATTR_INTS:
        out.ints = a.ints.data();
        out.count = a.ints.size();
        break;
      case LOOM_ATTR_FLOATS:
        out.floats = a.floats.data();
        out.count = a.floats.size();
        break;
      case LOOM_ATTR_STRINGS: {
        s.string_lists.emplace_back();
        for (const std::string& str : a.strings) s.string_lists.back().push_back({str.data(), str.size()});
        out.strings = s.string_lists.back().data();
        out.count = a.strings.size();
        break;
      }
      case LOOM_ATTR_TENSOR:
        if (a.tensor) {
          s.tensors.emplace_back();
          fill_constant(s.tensors.back(), *a.tensor, a.name);
          out.tensor = &s.tensors.back().info;
        }
        break;
      case LOOM_ATTR_GRAPH:
        if (a.graph) {
          nested_.push_back(std::make_unique<GraphView>(*a.graph, ViewOptions{}, this));
          out.graph = nested_.back()->get();
        }
        break;
      default: break;
    }
  }
  for (const loom_attribute_t& a : s.attrs) s.attr_ptrs.push_back(&a);
  s.node.struct_size = sizeof(loom_node_t);
  s.node.name = n.name.c_str();
  s.node.op_type = n.op_type.c_str();
  s.node.domain = n.domain.c_str();
  s.node.opset = n.opset;
  s.node.num_inputs = s.inputs.size();
  s.node.inputs = s.inputs.data();
  s.node.num_outputs = s.outputs.size();
  s.node.outputs = s.outputs.data();
  s.node.num_attributes = s.attr_ptrs.size();
  s.node.attributes = s.attr_ptrs.data();
}

void GraphView::finish() {
  for (const ValueStore& v : values_) value_ptrs_.push_back(&v.info);
  for (const NodeStore& n : nodes_) node_ptrs_.push_back(&n.node);
  graph_.struct_size = sizeof graph_;
  graph_.name = g_.name.c_str();
  graph_.num_values = value_ptrs_.size();
  graph_.values = value_ptrs_.data();
  graph_.num_nodes = node_ptrs_.size();
  graph_.nodes = node_ptrs_.data();
  graph_.num_inputs = inputs_.size();
  graph_.inputs = inputs_.data();
  graph_.num_outputs = outputs_.size();
  graph_.outputs = outputs_.data();
  graph_.parent = parent_ ? parent_->get() : nullptr;
}

}  // namespace loom::core
