#include "graph_loader.hpp"

#include <loom/plugin.hpp>
#include <map>
#include <mutex>
#include <vector>

#include "dtypes.hpp"
#include "model_parser.hpp"
#include "tensor_decoder.hpp"
#include "value_types.hpp"

namespace loom::onnx {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, message);
}

// Keep-alive handles of borrowed initializers, by id. The ABI does not say whether the host
// calls release() when add_initializer_borrowed fails (the core does for some errors and not
// for others), so the plugin looks the handle up by a never-reused id: releasing twice or
// releasing after the host already did is a no-op, and nothing leaks.
class BorrowedRegistry {
 public:
  static BorrowedRegistry& instance() {
    // Never destroyed: a host that releases models during process exit must not find it gone.
    static BorrowedRegistry* r = new BorrowedRegistry;
    return *r;
  }
  void* add(std::shared_ptr<const void> keep) {
    std::lock_guard lock(mutex_);
    uintptr_t id = ++next_id_;
    live_.emplace(id, std::move(keep));
    return reinterpret_cast<void*>(id);
  }
  void release(void* user) {
    std::shared_ptr<const void> dropped;  // unmapped outside the lock
    std::lock_guard lock(mutex_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(user));
    if (it == live_.end()) return;
    dropped = std::move(it->second);
    live_.erase(it);
  }

 private:
  std::mutex mutex_;
  uintptr_t next_id_ = 0;
  std::map<uintptr_t, std::shared_ptr<const void>> live_;
};

void release_borrowed(void* user) {
  BorrowedRegistry::instance().release(user);
}

void add_initializer(const loom_builder_api_t& api, loom_graph_builder_t* b,
                     const std::string& name, DecodedTensor& t) {
  // Mapped external data is lent to the core without a copy when the builder supports it and
  // the data has the 64-byte alignment the core guarantees for its own copies; otherwise the
  // builder copies.
  constexpr uintptr_t kAlign = 64;
  if (t.mapping && api.add_initializer_borrowed && t.size > 0 &&
      reinterpret_cast<uintptr_t>(t.data) % kAlign == 0) {
    void* id = BorrowedRegistry::instance().add(t.mapping);
    loom_status_t* st = api.add_initializer_borrowed(
        b, name.c_str(), t.dtype, t.rank(), t.dims_ptr(), t.data, t.size, release_borrowed, id);
    if (st) release_borrowed(id);
    sdk::check(st);
    return;
  }
  sdk::check(api.add_initializer(b, name.c_str(), t.dtype, t.rank(), t.dims_ptr(), t.data, t.size));
  // The builder has its copy; the external file's pages need not stay resident beside it.
  if (t.mapping) ExternalData::drop_pages(t.data, t.size);
}

std::string node_description(const ::onnx::NodeProto& node, int index) {
  std::string op = node.op_type().empty() ? "?" : node.op_type();
  if (!node.name().empty()) return "node " + quote_name(node.name()) + " (" + op + ")";
  return "node #" + std::to_string(index) + " (" + op + ")";
}

// Pre-IR-3 files may omit AttributeProto.type; then the one value that is set decides.
::onnx::AttributeProto::AttributeType infer_attribute_type(const ::onnx::AttributeProto& a) {
  using A = ::onnx::AttributeProto;
  std::vector<A::AttributeType> found;
  if (a.has_f()) found.push_back(A::FLOAT);
  if (a.has_i()) found.push_back(A::INT);
  if (a.has_s()) found.push_back(A::STRING);
  if (a.has_t()) found.push_back(A::TENSOR);
  if (a.has_g()) found.push_back(A::GRAPH);
  if (a.has_sparse_tensor()) found.push_back(A::SPARSE_TENSOR);
  if (a.has_tp()) found.push_back(A::TYPE_PROTO);
  if (a.floats_size()) found.push_back(A::FLOATS);
  if (a.ints_size()) found.push_back(A::INTS);
  if (a.strings_size()) found.push_back(A::STRINGS);
  if (a.tensors_size()) found.push_back(A::TENSORS);
  if (a.graphs_size()) found.push_back(A::GRAPHS);
  if (a.sparse_tensors_size()) found.push_back(A::SPARSE_TENSORS);
  if (a.type_protos_size()) found.push_back(A::TYPE_PROTOS);
  return found.size() == 1 ? found[0] : A::UNDEFINED;
}

}  // namespace

std::string normalize_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

void GraphLoader::load(::onnx::GraphProto& graph, loom_graph_builder_t* builder, int depth,
                       const std::string& scope) {
  for (int i = 0; i < graph.input_size(); ++i) {
    const auto& in = graph.input(i);
    if (in.name().empty()) invalid(scope + "graph input #" + std::to_string(i) + " has no name");
    TensorType t = tensor_type_of(in, scope + "graph input");
    sdk::check(api_.add_input(builder, in.name().c_str(), t.dtype, t.rank, t.dims_ptr(),
                              t.dim_params_ptr()));
    declare_container(builder, in, t, scope + "graph input");
  }
  load_initializers(graph, builder, scope, depth == 0 ? main_raw_data_ : nullptr);
  for (int i = 0; i < graph.node_size(); ++i)
    load_node(*graph.mutable_node(i), i, builder, depth, scope);
  for (int i = 0; i < graph.output_size(); ++i) {
    const auto& out = graph.output(i);
    if (out.name().empty()) invalid(scope + "graph output #" + std::to_string(i) + " has no name");
    TensorType t = tensor_type_of(out, scope + "graph output");
    sdk::check(api_.add_output(builder, out.name().c_str(), t.dtype, t.rank, t.dims_ptr(),
                               t.dim_params_ptr()));
    declare_container(builder, out, t, scope + "graph output");
  }
  for (const auto& vi : graph.value_info()) {
    // value_info is only a hint: one Loom cannot represent (a sequence, float8, rank > 16) is
    // left out rather than failing a model that may never need it.
    if (vi.name().empty() || !is_loom_tensor_type(vi.type())) continue;
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape() &&
        vi.type().tensor_type().shape().dim_size() > LOOM_MAX_RANK)
      continue;
    TensorType t = tensor_type_of(vi, scope + "value_info");
    sdk::check(api_.add_value_info(builder, vi.name().c_str(), t.dtype, t.rank, t.dims_ptr(),
                                   t.dim_params_ptr()));
  }
}

void GraphLoader::declare_container(loom_graph_builder_t* builder,
                                    const ::onnx::ValueInfoProto& value, const TensorType& type,
                                    const std::string& role) {
  if (!type.container_flags) return;
  // set_value_container came with plugin ABI 1.2; an older core cannot hold such values.
  if (!LOOM_HAS_MEMBER(&api_, loom_builder_api_t, set_value_container) || !api_.set_value_container)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              role + " " + quote_name(value.name()) + " has type " + describe_type(value.type()) +
                  ", which this Loom core cannot hold (it predates plugin ABI 1.2); upgrade "
                  "libloom");
  sdk::check(api_.set_value_container(builder, value.name().c_str(), type.container_flags));
}

void GraphLoader::load_initializers(::onnx::GraphProto& graph, loom_graph_builder_t* builder,
                                    const std::string& scope,
                                    const std::vector<RawDataSpan>* lifted) {
  if (lifted && lifted->size() != static_cast<size_t>(graph.initializer_size()))
    sdk::fail(LOOM_ERROR_INTERNAL, "the parser located " + std::to_string(lifted->size()) +
                                       " initializers' raw_data but the graph has " +
                                       std::to_string(graph.initializer_size()));
  for (int i = 0; i < graph.initializer_size(); ++i) {
    ::onnx::TensorProto& init = *graph.mutable_initializer(i);
    if (init.name().empty()) invalid(scope + "initializer #" + std::to_string(i) + " has no name");
    // Lifted raw_data goes from the model bytes straight into the builder's copy; the host may
    // then drop those pages (the core does for its file mapping).
    DecodedTensor t = decode_tensor(init, scope + "initializer " + quote_name(init.name()),
                                    external_, lifted ? &(*lifted)[i] : nullptr);
    add_initializer(api_, builder, init.name(), t);
    // The builder has its copy: drop ours now so peak memory stays near one copy of the weights.
    std::string().swap(*init.mutable_raw_data());
  }
  for (int i = 0; i < graph.sparse_initializer_size(); ++i) {
    const ::onnx::SparseTensorProto& sparse = graph.sparse_initializer(i);
    const std::string& name = sparse.values().name();
    if (name.empty())
      invalid(scope + "sparse initializer #" + std::to_string(i) + " has no name (values.name)");
    DecodedTensor t =
        decode_sparse_tensor(sparse, scope + "sparse initializer " + quote_name(name), external_);
    add_initializer(api_, builder, name, t);
  }
}

void GraphLoader::load_node(::onnx::NodeProto& node, int index, loom_graph_builder_t* builder,
                            int depth, const std::string& scope) {
  const std::string desc = scope + node_description(node, index);
  if (node.op_type().empty()) invalid(desc + ": op_type is empty");
  const std::string domain = normalize_domain(node.domain());
  // "" marks an omitted optional input or output; the builder takes that as is.
  std::vector<const char*> inputs, outputs;
  for (const std::string& s : node.input()) inputs.push_back(s.c_str());
  for (const std::string& s : node.output()) outputs.push_back(s.c_str());
  loom_node_builder_t* nb = nullptr;
  sdk::check(api_.add_node(builder, node.name().c_str(), node.op_type().c_str(), domain.c_str(),
                           inputs.size(), inputs.data(), outputs.size(), outputs.data(), &nb));
  if (!nb) sdk::fail(LOOM_ERROR_INTERNAL, desc + ": the builder returned no node");
  for (int i = 0; i < node.attribute_size(); ++i)
    load_attribute(*node.mutable_attribute(i), node, desc, nb, depth);
}

void GraphLoader::load_attribute(::onnx::AttributeProto& a, const ::onnx::NodeProto& node,
                                 const std::string& node_desc, loom_node_builder_t* nb, int depth) {
  using A = ::onnx::AttributeProto;
  if (a.name().empty()) invalid(node_desc + ": an attribute has no name");
  const std::string what = node_desc + " attribute " + quote_name(a.name());
  if (!a.ref_attr_name().empty())
    invalid(what + " refers to function attribute " + quote_name(a.ref_attr_name()) +
            " outside a function");
  A::AttributeType type = a.type() != A::UNDEFINED ? a.type() : infer_attribute_type(a);
  const char* name = a.name().c_str();
  switch (type) {
    case A::FLOAT:
      sdk::check(api_.set_attr_float(nb, name, a.f()));
      return;
    case A::INT:
      sdk::check(api_.set_attr_int(nb, name, a.i()));
      return;
    case A::STRING:
      sdk::check(api_.set_attr_string(nb, name, a.s().data(), a.s().size()));
      return;
    case A::FLOATS:
      sdk::check(api_.set_attr_floats(nb, name, a.floats().data(), a.floats_size()));
      return;
    case A::INTS:
      sdk::check(api_.set_attr_ints(nb, name, a.ints().data(), a.ints_size()));
      return;
    case A::STRINGS: {
      std::vector<loom_string_t> strings;
      strings.reserve(a.strings_size());
      for (const std::string& s : a.strings()) strings.push_back({s.data(), s.size()});
      sdk::check(api_.set_attr_strings(nb, name, strings.data(), strings.size()));
      return;
    }
    case A::TENSOR: {
      DecodedTensor t = decode_tensor(a.t(), what, external_);
      sdk::check(api_.set_attr_tensor(nb, name, t.dtype, t.rank(), t.dims_ptr(), t.data, t.size));
      return;
    }
    case A::SPARSE_TENSOR: {
      // Loom has no sparse values: densify. Constant's sparse_value becomes its dense `value`.
      DecodedTensor t = decode_sparse_tensor(a.sparse_tensor(), what, external_);
      const bool constant = node.op_type() == "Constant" && a.name() == "sparse_value" &&
                            normalize_domain(node.domain()).empty();
      sdk::check(api_.set_attr_tensor(nb, constant ? "value" : name, t.dtype, t.rank(),
                                      t.dims_ptr(), t.data, t.size));
      return;
    }
    case A::GRAPH: {
      if (depth + 1 > kMaxGraphDepth)
        invalid(what + ": graph attributes are nested more than " + std::to_string(kMaxGraphDepth) +
                " levels deep");
      loom_graph_builder_t* sub = nullptr;
      sdk::check(api_.add_attr_graph(nb, name, &sub));
      if (!sub) sdk::fail(LOOM_ERROR_INTERNAL, what + ": the builder returned no graph");
      // Near the top the scope names the whole path; deeper it only counts the levels, so a
      // deeply nested model cannot make messages grow with its depth.
      std::string sub_scope = depth < 3 ? "graph " + quote_name(a.g().name()) + " of " + what + ": "
                                        : "graph " + quote_name(a.g().name()) + " (nested " +
                                              std::to_string(depth + 1) + " levels deep): ";
      load(*a.mutable_g(), sub, depth + 1, sub_scope);
      return;
    }
    case A::UNDEFINED:
      invalid(what + " has no type and no single value");
    default:
      sdk::fail(LOOM_ERROR_UNSUPPORTED, what + " has type " + A::AttributeType_Name(type) +
                                            ", which Loom's graph builder cannot represent");
  }
}

}  // namespace loom::onnx
