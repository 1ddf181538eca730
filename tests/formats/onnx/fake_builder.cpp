#include "fake_builder.hpp"

#include <cstring>

namespace loom::onnx::testing {
namespace {

struct FakeStatus {
  loom_status_code_t code;
  std::string message;
};
int g_live_statuses = 0;

loom_status_t* status_new(loom_status_code_t code, const char* message) {
  ++g_live_statuses;
  return reinterpret_cast<loom_status_t*>(new FakeStatus{code, message ? message : ""});
}
loom_status_code_t status_code(const loom_status_t* s) {
  return reinterpret_cast<const FakeStatus*>(s)->code;
}
const char* status_message(const loom_status_t* s) {
  return reinterpret_cast<const FakeStatus*>(s)->message.c_str();
}
void status_free(loom_status_t* s) {
  if (!s) return;
  --g_live_statuses;
  delete reinterpret_cast<FakeStatus*>(s);
}
void log(loom_log_level_t, const char*, const char*) {}

RecordedGraph& graph_of(loom_graph_builder_t* b) {
  return *reinterpret_cast<RecordedGraph*>(b);
}
RecordedNode& node_of(loom_node_builder_t* n) {
  return *reinterpret_cast<RecordedNode*>(n);
}

RecordedValue make_value(const char* name, loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                         const char* const* dim_params) {
  RecordedValue v;
  v.name = name;
  v.dtype = dtype;
  v.rank = rank;
  for (int32_t i = 0; i < rank; ++i) v.dims.push_back(dims[i]);
  v.has_dim_params = dim_params != nullptr;
  if (dim_params)
    for (int32_t i = 0; i < rank; ++i) v.dim_params.push_back(dim_params[i] ? dim_params[i] : "");
  return v;
}

RecordedTensor make_tensor(const char* name, loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                           const void* data, size_t size) {
  RecordedTensor t;
  t.name = name;
  t.dtype = dtype;
  t.dims.assign(dims, dims + rank);
  if (dtype == LOOM_DTYPE_STRING) {
    const auto* s = static_cast<const loom_string_t*>(data);
    for (size_t i = 0; i < size / sizeof(loom_string_t); ++i)
      t.strings.emplace_back(s[i].data, s[i].size);
  } else {
    const auto* p = static_cast<const uint8_t*>(data);
    t.bytes.assign(p, p + size);
  }
  return t;
}

}  // namespace

const loom_host_api_t& fake_host() {
  static const loom_host_api_t host = [] {
    loom_host_api_t h{};
    h.struct_size = sizeof h;
    h.abi_version = LOOM_ABI_VERSION;
    h.status_new = status_new;
    h.status_code = status_code;
    h.status_message = status_message;
    h.status_free = status_free;
    h.log = log;
    return h;
  }();
  return host;
}

int live_statuses() {
  return g_live_statuses;
}

Outcome take(loom_status_t* status) {
  Outcome o;
  if (!status) return o;
  o.code = status_code(status);
  o.message = status_message(status);
  status_free(status);
  return o;
}

const RecordedTensor* RecordedGraph::initializer(const std::string& n) const {
  for (const RecordedTensor& t : initializers)
    if (t.name == n) return &t;
  return nullptr;
}
const RecordedValue* RecordedGraph::input(const std::string& n) const {
  for (const RecordedValue& v : inputs)
    if (v.name == n) return &v;
  return nullptr;
}

FakeBuilder* FakeBuilder::self = nullptr;

// The C callbacks; each counts the call so fail_at_call can inject an error.
struct Callbacks {
  static loom_status_t* tick() {
    FakeBuilder* b = FakeBuilder::self;
    if (b->fail_at_call >= 0 && b->calls_++ == b->fail_at_call)
      return status_new(LOOM_ERROR_INVALID_ARGUMENT, "injected builder failure");
    return nullptr;
  }
  static loom_status_t* set_opset(loom_graph_builder_t* b, const char* domain, int64_t v) {
    if (auto* s = tick()) return s;
    if (!graph_of(b).top_level) return status_new(LOOM_ERROR_INVALID_ARGUMENT, "nested set_opset");
    graph_of(b).opsets[domain] = v;
    return nullptr;
  }
  static loom_status_t* set_metadata(loom_graph_builder_t* b, const char* k, const char* v) {
    if (auto* s = tick()) return s;
    if (!graph_of(b).top_level)
      return status_new(LOOM_ERROR_INVALID_ARGUMENT, "nested set_metadata");
    graph_of(b).metadata[k] = v;
    return nullptr;
  }
  static loom_status_t* add_input(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                                  int32_t rank, const int64_t* dims, const char* const* params) {
    if (auto* s = tick()) return s;
    graph_of(b).inputs.push_back(make_value(name, dtype, rank, dims, params));
    return nullptr;
  }
  static loom_status_t* add_output(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                                   int32_t rank, const int64_t* dims, const char* const* params) {
    if (auto* s = tick()) return s;
    graph_of(b).outputs.push_back(make_value(name, dtype, rank, dims, params));
    return nullptr;
  }
  static loom_status_t* set_value_container(loom_graph_builder_t* b, const char* name,
                                            uint32_t flags) {
    if (auto* s = tick()) return s;
    RecordedGraph& g = graph_of(b);
    for (auto* list : {&g.inputs, &g.outputs, &g.value_infos})
      for (RecordedValue& v : *list)
        if (v.name == name) v.container_flags = flags;
    return nullptr;
  }
  static loom_status_t* add_value_info(loom_graph_builder_t* b, const char* name,
                                       loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                                       const char* const* params) {
    if (auto* s = tick()) return s;
    graph_of(b).value_infos.push_back(make_value(name, dtype, rank, dims, params));
    return nullptr;
  }
  static loom_status_t* add_initializer(loom_graph_builder_t* b, const char* name,
                                        loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                                        const void* data, size_t size) {
    if (auto* s = tick()) return s;
    graph_of(b).initializers.push_back(make_tensor(name, dtype, rank, dims, data, size));
    return nullptr;
  }
  static loom_status_t* add_initializer_borrowed(loom_graph_builder_t* b, const char* name,
                                                 loom_dtype_t dtype, int32_t rank,
                                                 const int64_t* dims, const void* data, size_t size,
                                                 void (*release)(void*), void* user) {
    if (auto* s = tick()) return s;
    graph_of(b).initializers.push_back(make_tensor(name, dtype, rank, dims, data, size));
    graph_of(b).initializers.back().borrowed = true;
    FakeBuilder::self->releases_.push_back({release, user});
    return nullptr;
  }
  static loom_status_t* add_node(loom_graph_builder_t* b, const char* name, const char* op,
                                 const char* domain, size_t ni, const char* const* in, size_t no,
                                 const char* const* out, loom_node_builder_t** node) {
    if (auto* s = tick()) return s;
    auto n = std::make_unique<RecordedNode>();
    n->name = name;
    n->op_type = op;
    n->domain = domain;
    for (size_t i = 0; i < ni; ++i) n->inputs.push_back(in[i]);
    for (size_t i = 0; i < no; ++i) n->outputs.push_back(out[i]);
    *node = reinterpret_cast<loom_node_builder_t*>(n.get());
    graph_of(b).nodes.push_back(std::move(n));
    return nullptr;
  }
  static RecordedAttr& attr(loom_node_builder_t* n, const char* name, loom_attr_type_t type) {
    RecordedAttr& a = node_of(n).attrs.emplace_back();
    a.name = name;
    a.type = type;
    return a;
  }
  static loom_status_t* set_int(loom_node_builder_t* n, const char* name, int64_t v) {
    if (auto* s = tick()) return s;
    attr(n, name, LOOM_ATTR_INT).i = v;
    return nullptr;
  }
  static loom_status_t* set_float(loom_node_builder_t* n, const char* name, float v) {
    if (auto* s = tick()) return s;
    attr(n, name, LOOM_ATTR_FLOAT).f = v;
    return nullptr;
  }
  static loom_status_t* set_string(loom_node_builder_t* n, const char* name, const char* v,
                                   size_t size) {
    if (auto* s = tick()) return s;
    attr(n, name, LOOM_ATTR_STRING).s.assign(v, size);
    return nullptr;
  }
  static loom_status_t* set_ints(loom_node_builder_t* n, const char* name, const int64_t* v,
                                 size_t count) {
    if (auto* s = tick()) return s;
    attr(n, name, LOOM_ATTR_INTS).ints.assign(v, v + count);
    return nullptr;
  }
  static loom_status_t* set_floats(loom_node_builder_t* n, const char* name, const float* v,
                                   size_t count) {
    if (auto* s = tick()) return s;
    attr(n, name, LOOM_ATTR_FLOATS).floats.assign(v, v + count);
    return nullptr;
  }
  static loom_status_t* set_strings(loom_node_builder_t* n, const char* name,
                                    const loom_string_t* v, size_t count) {
    if (auto* s = tick()) return s;
    RecordedAttr& a = attr(n, name, LOOM_ATTR_STRINGS);
    for (size_t i = 0; i < count; ++i) a.strings.emplace_back(v[i].data, v[i].size);
    return nullptr;
  }
  static loom_status_t* set_tensor(loom_node_builder_t* n, const char* name, loom_dtype_t dtype,
                                   int32_t rank, const int64_t* dims, const void* data,
                                   size_t size) {
    if (auto* s = tick()) return s;
    attr(n, name, LOOM_ATTR_TENSOR).tensor = make_tensor(name, dtype, rank, dims, data, size);
    return nullptr;
  }
  static loom_status_t* add_graph(loom_node_builder_t* n, const char* name,
                                  loom_graph_builder_t** out) {
    if (auto* s = tick()) return s;
    RecordedAttr& a = attr(n, name, LOOM_ATTR_GRAPH);
    a.graph = std::make_shared<RecordedGraph>();
    *out = reinterpret_cast<loom_graph_builder_t*>(a.graph.get());
    return nullptr;
  }
};

FakeBuilder::FakeBuilder() {
  self = this;
  graph_.top_level = true;
  api_.struct_size = sizeof api_;
  api_.set_opset = Callbacks::set_opset;
  api_.set_metadata = Callbacks::set_metadata;
  api_.add_input = Callbacks::add_input;
  api_.add_output = Callbacks::add_output;
  api_.add_value_info = Callbacks::add_value_info;
  api_.add_initializer = Callbacks::add_initializer;
  api_.add_initializer_borrowed = Callbacks::add_initializer_borrowed;
  api_.add_node = Callbacks::add_node;
  api_.set_attr_int = Callbacks::set_int;
  api_.set_attr_float = Callbacks::set_float;
  api_.set_attr_string = Callbacks::set_string;
  api_.set_attr_ints = Callbacks::set_ints;
  api_.set_attr_floats = Callbacks::set_floats;
  api_.set_attr_strings = Callbacks::set_strings;
  api_.set_attr_tensor = Callbacks::set_tensor;
  api_.add_attr_graph = Callbacks::add_graph;
  api_.set_value_container = Callbacks::set_value_container;
}

FakeBuilder::~FakeBuilder() {
  for (const Release& r : releases_) r.fn(r.user);
  self = nullptr;
}

}  // namespace loom::onnx::testing
