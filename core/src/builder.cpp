#include "builder.hpp"

#include "status.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace loom::core {
namespace {

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

void check_name(const char* name, const char* what) {
  if (!name || !*name) fail(LOOM_ERROR_INVALID_MODEL, std::string(what) + " without a name");
}

Shape make_shape(const char* name, int32_t rank, const int64_t* dims,
                 const char* const* dim_params) {
  Shape s;
  if (rank < 0) return s;
  if (rank > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, "value '" + str(name) + "' has rank " + std::to_string(rank) +
                                     "; Loom supports at most " + std::to_string(LOOM_MAX_RANK));
  if (rank > 0 && !dims) fail(LOOM_ERROR_INVALID_ARGUMENT, "value '" + str(name) + "': dims missing");
  s.rank = rank;
  s.dims.assign(dims, dims + rank);
  for (int64_t& d : s.dims)
    if (d < 0) d = -1;
  if (dim_params) {
    s.dim_params.resize(rank);
    for (int32_t i = 0; i < rank; ++i)
      if (dim_params[i]) s.dim_params[i] = dim_params[i];
  }
  return s;
}

// Validates dims and data size of a constant; returns the element count.
size_t checked_count(const std::string& what, loom_dtype_t dtype, int32_t rank,
                     const int64_t* dims, size_t data_size) {
  if (rank < 0 || rank > LOOM_MAX_RANK)
    fail(LOOM_ERROR_INVALID_MODEL, what + ": invalid rank " + std::to_string(rank));
  size_t count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) fail(LOOM_ERROR_INVALID_MODEL, what + ": negative dimension");
    size_t d = static_cast<size_t>(dims[i]);
    if (d != 0 && count > std::numeric_limits<size_t>::max() / d)
      fail(LOOM_ERROR_INVALID_MODEL, what + ": shape overflows");
    count *= d;
  }
  size_t elem = dtype == LOOM_DTYPE_STRING ? sizeof(loom_string_t) : sdk::dtype_size(dtype);
  if (elem == 0) fail(LOOM_ERROR_UNSUPPORTED, what + ": unsupported element type " + std::to_string(dtype));
  if (count > std::numeric_limits<size_t>::max() / elem || count * elem != data_size)
    fail(LOOM_ERROR_INVALID_MODEL, what + ": " + std::to_string(data_size) +
                                       " bytes of data for " + std::to_string(count) + " " +
                                       sdk::dtype_name(dtype) + " elements");
  return count;
}

// Drops the pages of [data, data + size) that lie wholly inside `mapping` from the process.
// The mapping is private and never written, so its pages are clean file pages: dropping them
// loses nothing (a later read faults them in again from the page cache), and a constant that
// was copied out of them does not keep them resident. Partial pages at the ends stay: they may
// hold bytes a plugin still reads.
void drop_mapped_pages(std::span<const uint8_t> mapping, const void* data, size_t size) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const auto map_begin = reinterpret_cast<uintptr_t>(mapping.data());
  if (mapping.empty() || size == 0 || begin < map_begin || begin - map_begin > mapping.size() ||
      size > mapping.size() - (begin - map_begin))
    return;  // not (wholly) in the mapping: heap memory must never be madvised
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + size) / page * page;
  // Advisory: when it fails the pages merely stay resident until the model is released.
  if (first < last) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// memcpy that, for a source inside the model file's mapping, drops the source's pages chunk by
// chunk as they are copied: even the largest tensor (BERT's 94 MB embedding) is never resident
// twice.
void copy_constant_bytes(void* dst, const void* src, size_t size,
                         std::span<const uint8_t> mapping) {
  constexpr size_t kChunk = size_t{4} << 20;  // a multiple of the page size
  for (size_t done = 0, n = 0; done < size; done += n) {
    // Chunks end on kChunk-aligned addresses, so no page straddles two chunks.
    const uintptr_t at = reinterpret_cast<uintptr_t>(src) + done;
    n = std::min(kChunk - at % kChunk, size - done);
    std::memcpy(static_cast<uint8_t*>(dst) + done, static_cast<const uint8_t*>(src) + done, n);
    drop_mapped_pages(mapping, static_cast<const uint8_t*>(src) + done, n);
  }
}

// `borrowed_owner`: for borrowed bytes, the holder that calls the plugin's release; copied
// constants pass nullptr. `mapping`: the model file's mapping, whose pages a copy drops.
std::shared_ptr<ConstantData> make_constant(const std::string& what, loom_dtype_t dtype,
                                            int32_t rank, const int64_t* dims, const void* data,
                                            size_t data_size, bool copy,
                                            std::shared_ptr<void> borrowed_owner,
                                            std::span<const uint8_t> mapping = {}) {
  size_t count = checked_count(what, dtype, rank, dims, data_size);
  if (data_size > 0 && !data) fail(LOOM_ERROR_INVALID_ARGUMENT, what + ": data is NULL");
  auto c = std::make_shared<ConstantData>();
  c->dtype = dtype;
  c->dims.assign(dims, dims + rank);
  if (dtype == LOOM_DTYPE_STRING) {
    // Strings are always copied: the views must point into memory the core owns.
    const auto* in = static_cast<const loom_string_t*>(data);
    c->strings.reserve(count);
    for (size_t i = 0; i < count; ++i) c->strings.emplace_back(in[i].data ? in[i].data : "", in[i].size);
    c->string_views.resize(count);
    for (size_t i = 0; i < count; ++i) c->string_views[i] = {c->strings[i].data(), c->strings[i].size()};
    c->data = c->string_views.data();
    c->size = count * sizeof(loom_string_t);
    return c;  // borrowed_owner (if any) releases the plugin's bytes now: they were copied

  }
  if (copy) {
    // 64-byte aligned copy so devices can use the data in place.
    void* p = data_size ? std::aligned_alloc(64, (data_size + 63) / 64 * 64) : nullptr;
    if (data_size && !p) fail(LOOM_ERROR_OUT_OF_MEMORY, what + ": out of memory");
    if (data_size) copy_constant_bytes(p, data, data_size, mapping);
    c->owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    c->data = p;
  } else {
    c->owner = std::move(borrowed_owner);
    c->data = data;
  }
  c->size = data_size;
  return c;
}

Graph& graph_of(loom_graph_builder_t* b) {
  if (!b || !b->graph) fail(LOOM_ERROR_INVALID_ARGUMENT, "graph builder is NULL");
  return *b->graph;
}

Node& node_of(loom_node_builder_t* n) {
  if (!n || !n->owner) fail(LOOM_ERROR_INVALID_ARGUMENT, "node builder is NULL");
  return n->owner->graph->nodes.at(n->node_index);
}

Attribute& new_attr(loom_node_builder_t* n, const char* name, loom_attr_type_t type) {
  Node& node = node_of(n);
  check_name(name, "attribute");
  for (const Attribute& a : node.attributes)
    if (a.name == name)
      fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": attribute '" + name + "' given twice");
  node.attributes.emplace_back();
  node.attributes.back().name = name;
  node.attributes.back().type = type;
  return node.attributes.back();
}

loom_status_t* declare(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                       int32_t rank, const int64_t* dims, const char* const* dim_params,
                       int kind /*0 input 1 output 2 value_info*/) {
  return guard_status([&] {
    Graph& g = graph_of(b);
    check_name(name, kind == 0 ? "graph input" : kind == 1 ? "graph output" : "value_info");
    int id = g.intern(name);
    Value& v = g.values[id];
    if (kind == 0) {
      if (v.graph_input) fail(LOOM_ERROR_INVALID_MODEL, std::string("graph input '") + name + "' declared twice");
      v.graph_input = true;
      g.inputs.push_back(id);
    } else if (kind == 1) {
      if (v.graph_output) fail(LOOM_ERROR_INVALID_MODEL, std::string("graph output '") + name + "' declared twice");
      v.graph_output = true;
      g.outputs.push_back(id);
    }
    if (dtype != LOOM_DTYPE_UNDEFINED) v.dtype = dtype;
    if (rank >= 0) v.shape = make_shape(name, rank, dims, dim_params);
  });
}

loom_status_t* set_opset(loom_graph_builder_t* b, const char* domain, int64_t version) {
  return guard_status([&] {
    if (!b || !b->model) fail(LOOM_ERROR_INVALID_ARGUMENT, "set_opset is only valid on the top-level graph");
    std::string d = str(domain);
    if (d == "ai.onnx") d = "";
    if (version < 1) fail(LOOM_ERROR_INVALID_MODEL, "opset import of '" + d + "' has invalid version " + std::to_string(version));
    b->model->opsets[d] = version;
  });
}

loom_status_t* set_metadata(loom_graph_builder_t* b, const char* key, const char* value) {
  return guard_status([&] {
    if (!b || !b->model) fail(LOOM_ERROR_INVALID_ARGUMENT, "set_metadata is only valid on the top-level graph");
    check_name(key, "metadata entry");
    for (auto& kv : b->model->metadata)
      if (kv.first == key) {
        kv.second = str(value);
        return;
      }
    b->model->metadata.emplace_back(key, str(value));
  });
}

loom_status_t* add_input(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                         int32_t rank, const int64_t* dims, const char* const* dim_params) {
  return declare(b, name, dtype, rank, dims, dim_params, 0);
}
loom_status_t* add_output(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                          int32_t rank, const int64_t* dims, const char* const* dim_params) {
  return declare(b, name, dtype, rank, dims, dim_params, 1);
}
loom_status_t* add_value_info(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                              int32_t rank, const int64_t* dims, const char* const* dim_params) {
  return declare(b, name, dtype, rank, dims, dim_params, 2);
}

loom_status_t* add_initializer_impl(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                                    int32_t rank, const int64_t* dims, const void* data,
                                    size_t data_size, bool copy, void (*release)(void*),
                                    void* user) {
  // For borrowed bytes the holder exists before anything can fail, so the plugin's release
  // runs exactly once whatever happens: when the constant dies, or right away on an error.
  std::shared_ptr<void> holder;
  if (!copy) holder = std::shared_ptr<void>(user, [release](void* u) {
    if (release) release(u);
  });
  return guard_status([&] {
    Graph& g = graph_of(b);
    check_name(name, "initializer");
    std::string what = std::string("initializer '") + name + "'";
    auto c = make_constant(what, dtype, rank, dims, data, data_size, copy, std::move(holder),
                           b->file_mapping);
    int id = g.intern(name);
    Value& v = g.values[id];
    if (v.constant) fail(LOOM_ERROR_INVALID_MODEL, what + " is defined twice");
    v.constant = std::move(c);
    v.dtype = dtype;
    v.shape = make_shape(name, rank, dims, nullptr);
  });
}

loom_status_t* add_initializer(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                               int32_t rank, const int64_t* dims, const void* data,
                               size_t data_size) {
  return add_initializer_impl(b, name, dtype, rank, dims, data, data_size, true, nullptr, nullptr);
}

loom_status_t* add_initializer_borrowed(loom_graph_builder_t* b, const char* name,
                                        loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                                        const void* data, size_t data_size,
                                        void (*release)(void*), void* user) {
  return add_initializer_impl(b, name, dtype, rank, dims, data, data_size, false, release, user);
}

loom_status_t* add_node(loom_graph_builder_t* b, const char* name, const char* op_type,
                        const char* domain, size_t num_inputs, const char* const* inputs,
                        size_t num_outputs, const char* const* outputs,
                        loom_node_builder_t** out) {
  return guard_status([&] {
    Graph& g = graph_of(b);
    check_name(op_type, "node");
    if (!out) fail(LOOM_ERROR_INVALID_ARGUMENT, "add_node: out is NULL");
    if ((num_inputs && !inputs) || (num_outputs && !outputs))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "add_node: input/output names missing");
    Node node;
    node.name = str(name);
    node.op_type = op_type;
    node.domain = str(domain);
    if (node.domain == "ai.onnx") node.domain = "";
    int index = static_cast<int>(g.nodes.size());
    for (size_t i = 0; i < num_inputs; ++i) {
      std::string in = str(inputs[i]);
      node.inputs.push_back(in.empty() ? -1 : g.intern(in));
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      std::string o = str(outputs[i]);
      if (o.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      int id = g.intern(o);
      Value& v = g.values[id];
      if (v.producer >= 0)
        fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": output '" + o + "' is already produced by " +
                                           g.nodes[v.producer].describe());
      v.producer = index;
      node.outputs.push_back(id);
    }
    g.nodes.push_back(std::move(node));
    b->nodes.push_back(loom_node_builder_t{b, static_cast<size_t>(index)});
    *out = &b->nodes.back();
  });
}

loom_status_t* set_attr_int(loom_node_builder_t* n, const char* name, int64_t value) {
  return guard_status([&] { new_attr(n, name, LOOM_ATTR_INT).i = value; });
}
loom_status_t* set_attr_float(loom_node_builder_t* n, const char* name, float value) {
  return guard_status([&] { new_attr(n, name, LOOM_ATTR_FLOAT).f = value; });
}
loom_status_t* set_attr_string(loom_node_builder_t* n, const char* name, const char* value,
                               size_t size) {
  return guard_status([&] {
    if (size && !value) fail(LOOM_ERROR_INVALID_ARGUMENT, "set_attr_string: value is NULL");
    new_attr(n, name, LOOM_ATTR_STRING).s.assign(value ? value : "", size);
  });
}
loom_status_t* set_attr_ints(loom_node_builder_t* n, const char* name, const int64_t* values,
                             size_t count) {
  return guard_status([&] {
    if (count && !values) fail(LOOM_ERROR_INVALID_ARGUMENT, "set_attr_ints: values is NULL");
    new_attr(n, name, LOOM_ATTR_INTS).ints.assign(values, values + count);
  });
}
loom_status_t* set_attr_floats(loom_node_builder_t* n, const char* name, const float* values,
                               size_t count) {
  return guard_status([&] {
    if (count && !values) fail(LOOM_ERROR_INVALID_ARGUMENT, "set_attr_floats: values is NULL");
    new_attr(n, name, LOOM_ATTR_FLOATS).floats.assign(values, values + count);
  });
}
loom_status_t* set_attr_strings(loom_node_builder_t* n, const char* name,
                                const loom_string_t* values, size_t count) {
  return guard_status([&] {
    if (count && !values) fail(LOOM_ERROR_INVALID_ARGUMENT, "set_attr_strings: values is NULL");
    Attribute& a = new_attr(n, name, LOOM_ATTR_STRINGS);
    for (size_t i = 0; i < count; ++i)
      a.strings.emplace_back(values[i].data ? values[i].data : "", values[i].size);
  });
}
loom_status_t* set_attr_tensor(loom_node_builder_t* n, const char* name, loom_dtype_t dtype,
                               int32_t rank, const int64_t* dims, const void* data,
                               size_t data_size) {
  return guard_status([&] {
    Node& node = node_of(n);
    std::string what = node.describe() + " attribute '" + str(name) + "'";
    auto c = make_constant(what, dtype, rank, dims, data, data_size, true, nullptr);
    new_attr(n, name, LOOM_ATTR_TENSOR).tensor = std::move(c);
  });
}

loom_status_t* add_attr_graph(loom_node_builder_t* n, const char* name,
                              loom_graph_builder_t** out) {
  return guard_status([&] {
    if (!out) fail(LOOM_ERROR_INVALID_ARGUMENT, "add_attr_graph: out is NULL");
    loom_graph_builder_t* parent = n ? n->owner : nullptr;
    if (!parent) fail(LOOM_ERROR_INVALID_ARGUMENT, "node builder is NULL");
    if (parent->depth + 1 > kMaxGraphDepth)
      fail(LOOM_ERROR_INVALID_MODEL, "graphs are nested more than " +
                                         std::to_string(kMaxGraphDepth) + " levels deep");
    Attribute& a = new_attr(n, name, LOOM_ATTR_GRAPH);
    a.graph = std::make_shared<Graph>();
    a.graph->name = node_of(n).describe() + "/" + str(name);
    a.graph->parent = parent->graph;
    auto sub = std::make_unique<loom_graph_builder_t>();
    sub->graph = a.graph.get();
    sub->depth = parent->depth + 1;
    sub->file_mapping = parent->file_mapping;
    *out = sub.get();
    parent->nested.push_back(std::move(sub));
  });
}

loom_status_t* set_value_container(loom_graph_builder_t* b, const char* name, uint32_t flags) {
  return guard_status([&] {
    Graph& g = graph_of(b);
    int id = g.find(str(name));
    if (id < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "set_value_container: '" + str(name) +
                                            "' was not declared with add_input, add_output or "
                                            "add_value_info");
    Value& v = g.values[id];
    switch (flags) {
      case LOOM_VALUE_SEQUENCE:
        v.kind = ValueKind::kSequence;
        break;
      case LOOM_VALUE_OPTIONAL:
        v.kind = ValueKind::kOptionalTensor;
        break;
      case LOOM_VALUE_SEQUENCE | LOOM_VALUE_OPTIONAL:
        v.kind = ValueKind::kOptionalSequence;
        break;
      default:
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "set_value_container: flags of '" + str(name) +
                 "' must be LOOM_VALUE_SEQUENCE, LOOM_VALUE_OPTIONAL or both");
    }
    if (v.constant)
      fail(LOOM_ERROR_INVALID_MODEL, "'" + str(name) + "' is an initializer, which is a tensor");
  });
}

const loom_builder_api_t kBuilderApi = {
    sizeof(loom_builder_api_t), set_opset,       set_metadata,     add_input,
    add_output,                 add_value_info,  add_initializer,  add_initializer_borrowed,
    add_node,                   set_attr_int,    set_attr_float,   set_attr_string,
    set_attr_ints,              set_attr_floats, set_attr_strings, set_attr_tensor,
    add_attr_graph,             set_value_container,
};

}  // namespace

const loom_builder_api_t* builder_api() { return &kBuilderApi; }

}  // namespace loom::core
