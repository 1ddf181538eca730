#include "graph_mirror.hpp"

#include <cstring>
#include <loom/plugin.hpp>

namespace loom::cpu {

namespace {

std::string safe_string(const char* s) {
  return s ? std::string(s) : std::string();
}

void check_index(int32_t index, size_t num_values, const std::string& what) {
  if (index < -1 || (index >= 0 && static_cast<size_t>(index) >= num_values))
    sdk::fail(LOOM_ERROR_INVALID_MODEL, what + " refers to value index " + std::to_string(index) +
                                            " of " + std::to_string(num_values) + " values");
}

// Copies a value's metadata. With `copy_data` (tensor attributes) the bytes are copied too,
// otherwise the constant's data pointer is borrowed.
std::unique_ptr<MirrorValue> mirror_value(const loom_value_info_t& in, bool copy_data) {
  auto v = std::make_unique<MirrorValue>();
  v->name = safe_string(in.name);
  if (in.rank > LOOM_MAX_RANK)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "value '" + v->name + "' has rank " +
                                          std::to_string(in.rank) + ", more than " +
                                          std::to_string(LOOM_MAX_RANK));
  if (in.rank > 0) {
    if (!in.dims) sdk::fail(LOOM_ERROR_INVALID_MODEL, "value '" + v->name + "' has no dims");
    v->dims.assign(in.dims, in.dims + in.rank);
    if (in.dim_params) {
      for (int32_t i = 0; i < in.rank; ++i)
        v->dim_param_storage.push_back(safe_string(in.dim_params[i]));
      for (int32_t i = 0; i < in.rank; ++i)
        v->dim_params.push_back(in.dim_params[i] ? v->dim_param_storage[i].c_str() : nullptr);
    }
  }
  v->view = in;
  v->view.struct_size = sizeof(loom_value_info_t);
  v->view.name = v->name.c_str();
  v->view.dims = v->dims.empty() ? nullptr : v->dims.data();
  v->view.dim_params = v->dim_params.empty() ? nullptr : v->dim_params.data();
  if (!LOOM_HAS_MEMBER(&in, loom_value_info_t, arena_offset)) v->view.arena_offset = -1;
  if (copy_data && in.data) {
    if (in.dtype == LOOM_DTYPE_STRING) {
      size_t count = in.data_size / sizeof(loom_string_t);
      const auto* src = static_cast<const loom_string_t*>(in.data);
      for (size_t i = 0; i < count; ++i)
        v->owned_strings.emplace_back(src[i].data ? std::string(src[i].data, src[i].size) : "");
      for (const std::string& s : v->owned_strings)
        v->owned_string_views.push_back({s.data(), s.size()});
      v->view.data = v->owned_string_views.data();
    } else {
      const auto* src = static_cast<const unsigned char*>(in.data);
      v->owned_data.assign(src, src + in.data_size);
      v->view.data = v->owned_data.data();
    }
  }
  return v;
}

std::unique_ptr<MirrorAttribute> mirror_attribute(const loom_attribute_t& in,
                                                  const loom_graph_t* owner_graph) {
  auto a = std::make_unique<MirrorAttribute>();
  a->name = safe_string(in.name);
  a->view = in;
  a->view.struct_size = sizeof(loom_attribute_t);
  a->view.name = a->name.c_str();
  switch (in.type) {
    case LOOM_ATTR_STRING:
      a->s = in.s ? std::string(in.s, in.s_size) : std::string();
      a->view.s = a->s.c_str();
      a->view.s_size = a->s.size();
      break;
    case LOOM_ATTR_INTS:
      if (in.count && in.ints) a->ints.assign(in.ints, in.ints + in.count);
      a->view.ints = a->ints.data();
      a->view.count = a->ints.size();
      break;
    case LOOM_ATTR_FLOATS:
      if (in.count && in.floats) a->floats.assign(in.floats, in.floats + in.count);
      a->view.floats = a->floats.data();
      a->view.count = a->floats.size();
      break;
    case LOOM_ATTR_STRINGS:
      for (size_t i = 0; in.strings && i < in.count; ++i)
        a->string_storage.emplace_back(
            in.strings[i].data ? std::string(in.strings[i].data, in.strings[i].size) : "");
      for (const std::string& s : a->string_storage) a->strings.push_back({s.data(), s.size()});
      a->view.strings = a->strings.data();
      a->view.count = a->strings.size();
      break;
    case LOOM_ATTR_TENSOR:
      if (!in.tensor)
        sdk::fail(LOOM_ERROR_INVALID_MODEL, "tensor attribute '" + a->name + "' has no tensor");
      a->tensor = mirror_value(*in.tensor, /*copy_data=*/true);
      a->view.tensor = &a->tensor->view;
      break;
    case LOOM_ATTR_GRAPH:
      if (!in.graph)
        sdk::fail(LOOM_ERROR_INVALID_MODEL, "graph attribute '" + a->name + "' has no graph");
      a->graph = mirror_graph(*in.graph, owner_graph);
      a->view.graph = &a->graph->view;
      break;
    default:
      break;
  }
  // Pointers of the other kinds are meaningless for this type: do not keep borrowed ones.
  if (in.type != LOOM_ATTR_STRING) {
    a->view.s = nullptr;
    a->view.s_size = 0;
  }
  if (in.type != LOOM_ATTR_INTS) a->view.ints = nullptr;
  if (in.type != LOOM_ATTR_FLOATS) a->view.floats = nullptr;
  if (in.type != LOOM_ATTR_STRINGS) a->view.strings = nullptr;
  if (in.type != LOOM_ATTR_TENSOR) a->view.tensor = nullptr;
  if (in.type != LOOM_ATTR_GRAPH) a->view.graph = nullptr;
  if (in.type != LOOM_ATTR_INTS && in.type != LOOM_ATTR_FLOATS && in.type != LOOM_ATTR_STRINGS)
    a->view.count = 0;
  return a;
}

}  // namespace

std::unique_ptr<MirrorGraph> mirror_graph(const loom_graph_t& in, const loom_graph_t* parent) {
  auto g = std::make_unique<MirrorGraph>();
  g->name = safe_string(in.name);
  // The view must exist (its address) before nested graphs point at it as their parent.
  for (size_t i = 0; i < in.num_values; ++i) {
    if (!in.values || !in.values[i])
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                "graph '" + g->name + "' has a NULL value " + std::to_string(i));
    g->values.push_back(mirror_value(*in.values[i], /*copy_data=*/false));
    g->value_views.push_back(&g->values.back()->view);
  }
  for (size_t i = 0; i < in.num_inputs; ++i) {
    check_index(in.inputs[i], in.num_values, "graph input " + std::to_string(i));
    g->inputs.push_back(in.inputs[i]);
  }
  for (size_t i = 0; i < in.num_outputs; ++i) {
    check_index(in.outputs[i], in.num_values, "graph output " + std::to_string(i));
    if (in.outputs[i] < 0)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, "graph output " + std::to_string(i) + " has no value");
    g->outputs.push_back(in.outputs[i]);
  }
  for (size_t n = 0; n < in.num_nodes; ++n) {
    if (!in.nodes || !in.nodes[n])
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                "graph '" + g->name + "' has a NULL node " + std::to_string(n));
    const loom_node_t& src = *in.nodes[n];
    auto node = std::make_unique<MirrorNode>();
    node->name = safe_string(src.name);
    node->op_type = safe_string(src.op_type);
    node->domain = safe_string(src.domain);
    std::string where = node->op_type + " node '" + node->name + "'";
    for (size_t i = 0; i < src.num_inputs; ++i) {
      check_index(src.inputs[i], in.num_values, where + ": input " + std::to_string(i));
      node->inputs.push_back(src.inputs[i]);
    }
    for (size_t i = 0; i < src.num_outputs; ++i) {
      check_index(src.outputs[i], in.num_values, where + ": output " + std::to_string(i));
      node->outputs.push_back(src.outputs[i]);
    }
    for (size_t i = 0; i < src.num_attributes; ++i) {
      if (!src.attributes[i]) sdk::fail(LOOM_ERROR_INVALID_MODEL, where + ": NULL attribute");
      node->attributes.push_back(mirror_attribute(*src.attributes[i], &g->view));
      node->attribute_views.push_back(&node->attributes.back()->view);
    }
    node->view = src;
    node->view.struct_size = sizeof(loom_node_t);
    node->view.name = node->name.c_str();
    node->view.op_type = node->op_type.c_str();
    node->view.domain = node->domain.c_str();
    node->view.num_inputs = node->inputs.size();
    node->view.inputs = node->inputs.data();
    node->view.num_outputs = node->outputs.size();
    node->view.outputs = node->outputs.data();
    node->view.num_attributes = node->attribute_views.size();
    node->view.attributes = node->attribute_views.data();
    g->node_views.push_back(&node->view);
    g->nodes.push_back(std::move(node));
  }
  g->view.struct_size = sizeof(loom_graph_t);
  g->view.name = g->name.c_str();
  g->view.num_values = g->value_views.size();
  g->view.values = g->value_views.data();
  g->view.num_nodes = g->node_views.size();
  g->view.nodes = g->node_views.data();
  g->view.num_inputs = g->inputs.size();
  g->view.inputs = g->inputs.data();
  g->view.num_outputs = g->outputs.size();
  g->view.outputs = g->outputs.data();
  g->view.parent = parent;
  return g;
}

}  // namespace loom::cpu
