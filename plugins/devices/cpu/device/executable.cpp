#include "executable.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <loom/plugin.hpp>
#include <optional>
#include <set>

namespace loom::cpu {

namespace {

std::string op_label(const loom_node_t& node) {
  std::string domain = node.domain ? node.domain : "";
  std::string op = node.op_type ? node.op_type : "?";
  return (domain.empty() || domain == "ai.onnx") ? op : domain + "::" + op;
}

std::string node_label(const loom_node_t& node) {
  return std::string(node.op_type ? node.op_type : "?") + " node '" + (node.name ? node.name : "") +
         "'";
}

// Names an OUTER_SCOPE value of `graph` or of any graph nested in it refers to.
void collect_outer_names(const loom_graph_t& graph, std::set<std::string>& names) {
  for (size_t v = 0; v < graph.num_values; ++v)
    if (graph.values[v]->flags & LOOM_VALUE_OUTER_SCOPE) names.insert(graph.values[v]->name);
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    for (size_t a = 0; a < node.num_attributes; ++a)
      if (node.attributes[a]->type == LOOM_ATTR_GRAPH && node.attributes[a]->graph)
        collect_outer_names(*node.attributes[a]->graph, names);
  }
}

// A view of a plain-host tensor without ownership (inputs, constants).
Tensor borrowed(const loom_tensor_t& view) {
  Tensor t;
  t.view = view;
  t.view.struct_size = sizeof(loom_tensor_t);
  return t;
}

}  // namespace

// ---- kernel lookup ------------------------------------------------------------------------

ResolvedKernel find_kernel(loom_host_t* host, const loom_node_t& node) {
  ResolvedKernel k;
  const char* domain = node.domain ? node.domain : "";
  k.builtin = KernelRegistry::instance().find(domain, node.op_type, node.opset);
  if (!k.builtin && host && sdk::host_api() && sdk::host_api()->find_kernel)
    k.plugin = sdk::host_api()->find_kernel(host, "cpu", domain, node.op_type, node.opset);
  return k;
}

std::string why_unsupported(loom_host_t* host, const loom_graph_t& graph, const loom_node_t& node) {
  if (!node.op_type) return "node without an op_type";
  ResolvedKernel k = find_kernel(host, node);
  if (!k.builtin && !k.plugin)
    return "no cpu kernel for " + op_label(node) + " (opset " + std::to_string(node.opset) + ")";
  if (k.builtin && k.builtin->supports) {
    std::string reason = k.builtin->supports(graph, node);
    if (!reason.empty()) return reason;
  }
  for (size_t a = 0; a < node.num_attributes; ++a) {
    const loom_attribute_t* attr = node.attributes[a];
    if (attr->type != LOOM_ATTR_GRAPH || !attr->graph) continue;
    for (size_t n = 0; n < attr->graph->num_nodes; ++n) {
      std::string reason = why_unsupported(host, *attr->graph, *attr->graph->nodes[n]);
      if (!reason.empty()) return "graph '" + std::string(attr->name) + "': " + reason;
    }
  }
  return "";
}

// ---- scopes -------------------------------------------------------------------------------

const Tensor* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->graph->value_by_name.find(name);
    if (it != s->graph->value_by_name.end() && s->present[static_cast<size_t>(it->second)])
      return &s->values[static_cast<size_t>(it->second)];
  }
  return nullptr;
}

// ---- the KernelContext of one node --------------------------------------------------------

namespace {

class NodeContext final : public KernelContext {
 public:
  NodeContext(Executable& exe, const CompiledGraph& cg, const CompiledNode& cn, Scope& scope)
      : KernelContext(attrs_), attrs_(*cn.node), exe_(exe), cg_(cg), cn_(cn), scope_(scope) {
    const size_t n = cn.node->num_outputs;
    if (n <= inline_outputs_.size()) {
      outputs_ = std::span<Tensor>(inline_outputs_.data(), n);
    } else {
      more_outputs_.resize(n);
      outputs_ = std::span<Tensor>(more_outputs_);
    }
  }

  const loom_graph_t& graph() const override { return *cg_.graph; }
  const loom_node_t& node() const override { return *cn_.node; }

  const loom_tensor_t* input(size_t i) const override {
    const Tensor* t = input_tensor(i);
    return t ? &t->view : nullptr;
  }
  const Tensor* input_tensor(size_t i) const override {
    if (i >= node().num_inputs || node().inputs[i] < 0) return nullptr;
    auto index = static_cast<size_t>(node().inputs[i]);
    if (scope_.present[index]) return &scope_.values[index];
    // A value this graph neither receives nor produces: an implicit outer-scope reference.
    const char* name = cg_.graph->values[index]->name;
    if (scope_.parent)
      if (const Tensor* t = scope_.parent->lookup(name)) return t;
    fail(LOOM_ERROR_RUNTIME, where() + ": input '" + name + "' has not been computed");
  }

  loom_tensor_t& allocate_output(size_t i, loom_dtype_t dtype,
                                 std::span<const int64_t> dims) override {
    if (i >= outputs_.size())
      fail(LOOM_ERROR_INTERNAL, where() + ": output " + std::to_string(i) + " does not exist");
    outputs_[i] = make_tensor(dtype, dims);
    return outputs_[i].view;
  }
  void set_output(size_t i, Tensor tensor) override {
    if (i >= outputs_.size())
      fail(LOOM_ERROR_INTERNAL, where() + ": output " + std::to_string(i) + " does not exist");
    outputs_[i] = std::move(tensor);
  }

  void parallel_for(size_t n, size_t grain,
                    const std::function<void(size_t, size_t)>& fn) const override {
    exe_.pool().parallel_for(n, grain, fn);
  }
  int threads() const override { return exe_.pool().threads(); }

  std::vector<Tensor> run_subgraph(const loom_graph_t& subgraph,
                                   std::span<const Tensor* const> inputs) override {
    return exe_.run_nested(subgraph, inputs, scope_);
  }

  std::span<Tensor> outputs() { return outputs_; }

 private:
  Attributes attrs_;
  Executable& exe_;
  const CompiledGraph& cg_;
  const CompiledNode& cn_;
  Scope& scope_;
  // Most nodes have one or two outputs: those live here rather than in a vector allocated for
  // every node of every run.
  std::array<Tensor, 2> inline_outputs_;
  std::vector<Tensor> more_outputs_;
  std::span<Tensor> outputs_;
};

}  // namespace

}  // namespace loom::cpu

// ---- kernels from kernel plugins: the C context API over a KernelContext -----------------

struct loom_kernel_context_t {
  loom::cpu::KernelContext* ctx;
};

namespace loom::cpu {
namespace {

size_t ctx_num_inputs(loom_kernel_context_t* c) {
  return c->ctx->num_inputs();
}
const loom_tensor_t* ctx_input(loom_kernel_context_t* c, size_t i) {
  try {
    return c->ctx->input(i);
  } catch (...) {
    return nullptr;  // reported as omitted; the kernel decides whether that is an error
  }
}
size_t ctx_num_outputs(loom_kernel_context_t* c) {
  return c->ctx->num_outputs();
}
loom_status_t* ctx_allocate_output(loom_kernel_context_t* c, size_t i, loom_dtype_t dtype,
                                   int32_t rank, const int64_t* dims, loom_tensor_t** out) {
  return sdk::guard([&] {
    if (!out) fail(LOOM_ERROR_INVALID_ARGUMENT, "allocate_output: out is NULL");
    if (rank < 0 || rank > LOOM_MAX_RANK || (rank > 0 && !dims))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           c->ctx->where() + ": allocate_output with invalid rank " + std::to_string(rank));
    *out = &c->ctx->allocate_output(i, dtype,
                                    std::span<const int64_t>(dims, static_cast<size_t>(rank)));
  });
}
void ctx_parallel_for(loom_kernel_context_t* c, size_t n, void (*fn)(void*, size_t, size_t),
                      void* user) {
  c->ctx->parallel_for(n, 1, [&](size_t b, size_t e) { fn(user, b, e); });
}

const loom_kernel_context_api_t kContextApi = {sizeof(loom_kernel_context_api_t),
                                               ctx_num_inputs,
                                               ctx_input,
                                               ctx_num_outputs,
                                               ctx_allocate_output,
                                               ctx_parallel_for};

}  // namespace

// ---- compile ------------------------------------------------------------------------------

Executable::Executable(loom_host_t* host, ThreadPool& pool, const loom_graph_t& graph,
                       bool host_memory)
    : host_(host), pool_(pool), host_memory_(host_memory) {
  root_ = mirror_graph(graph, nullptr);
  try {
    compile_graph(root_->view);
  } catch (...) {
    destroy_plugin_states();  // the destructor does not run when the constructor throws
    throw;
  }
}

Executable::~Executable() {
  destroy_plugin_states();
}

void Executable::destroy_plugin_states() {
  for (auto& [view, cg] : graphs_)
    for (CompiledNode& cn : cg->nodes)
      if (cn.plugin_state && cn.kernel.plugin && cn.kernel.plugin->destroy) {
        cn.kernel.plugin->destroy(cn.plugin_state);
        cn.plugin_state = nullptr;
      }
}

void Executable::compile_graph(const loom_graph_t& graph) {
  auto cg = std::make_unique<CompiledGraph>();
  CompiledGraph& g = *cg;
  graphs_[&graph] = std::move(cg);
  g.graph = &graph;
  g.constants.resize(graph.num_values);
  for (size_t v = 0; v < graph.num_values; ++v) {
    const loom_value_info_t& info = *graph.values[v];
    g.value_by_name.emplace(info.name, static_cast<int32_t>(v));
    if (info.flags & LOOM_VALUE_OUTER_SCOPE)
      g.outer_scope_values.push_back(static_cast<int32_t>(v));
    if (!(info.flags & LOOM_VALUE_CONSTANT)) continue;
    g.constant_values.push_back(static_cast<int32_t>(v));
    if (info.rank < 0)
      fail(LOOM_ERROR_INVALID_MODEL, std::string("constant '") + info.name + "' has no shape");
    Tensor& t = g.constants[v];
    t.view.dtype = info.dtype;
    t.view.rank = info.rank;
    for (int32_t d = 0; d < info.rank; ++d) t.view.dims[d] = info.dims[d];
    size_t expected = sdk::byte_size(
        info.dtype, std::span<const int64_t>(info.dims, static_cast<size_t>(info.rank)));
    if (info.data_size != expected || (expected > 0 && !info.data))
      fail(LOOM_ERROR_INVALID_MODEL,
           std::string("constant '") + info.name + "' holds " + std::to_string(info.data_size) +
               " bytes, its type and shape need " + std::to_string(expected));
    // Constant data is read-only; kernels only read inputs.
    t.view.data = const_cast<void*>(info.data);
    t.view.byte_size = info.data_size;
  }

  // Last use of every value, so intermediates are dropped as early as possible. A node with
  // nested graphs also uses the outer-scope values those graphs read.
  std::vector<int64_t> last_use(graph.num_values, -1);
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    auto touch = [&](int32_t v) {
      if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int64_t>(n);
    };
    for (size_t i = 0; i < node.num_inputs; ++i) touch(node.inputs[i]);
    for (size_t i = 0; i < node.num_outputs; ++i) touch(node.outputs[i]);
    std::set<std::string> outer;
    for (size_t a = 0; a < node.num_attributes; ++a)
      if (node.attributes[a]->type == LOOM_ATTR_GRAPH)
        collect_outer_names(*node.attributes[a]->graph, outer);
    for (const std::string& name : outer) {
      auto it = g.value_by_name.find(name);
      if (it != g.value_by_name.end()) touch(it->second);
    }
  }
  for (size_t i = 0; i < graph.num_outputs; ++i)
    last_use[static_cast<size_t>(graph.outputs[i])] = -1;

  g.nodes.resize(graph.num_nodes);
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    CompiledNode& cn = g.nodes[n];
    cn.node = &node;
    cn.kernel = find_kernel(host_, node);
    if (!cn.kernel.builtin && !cn.kernel.plugin)
      fail(LOOM_ERROR_UNSUPPORTED, node_label(node) + ": no cpu kernel for " + op_label(node) +
                                       " (opset " + std::to_string(node.opset) + ")");
    // Made once here so that a profiled run only hands out a pointer.
    cn.detail = cn.kernel.builtin ? "cpu " + op_label(node) + " kernel (opset " +
                                        std::to_string(cn.kernel.builtin->since_version) + ")"
                                  : "kernel plugin " + op_label(node) + " (opset " +
                                        std::to_string(cn.kernel.plugin->since_version) + ")";
    if (cn.kernel.builtin && cn.kernel.builtin->supports) {
      std::string reason = cn.kernel.builtin->supports(graph, node);
      if (!reason.empty()) fail(LOOM_ERROR_UNSUPPORTED, node_label(node) + ": " + reason);
    }
    if (cn.kernel.plugin && cn.kernel.plugin->create) {
      loom_status_t* status =
          cn.kernel.plugin->create(cn.kernel.plugin->user, &graph, &node, &cn.plugin_state);
      if (status) {
        std::string message = sdk::host_api()->status_message(status);
        loom_status_code_t code = sdk::host_api()->status_code(status);
        sdk::host_api()->status_free(status);
        // Not prefixed twice where the plugin named the node already (sdk::Attributes does).
        const std::string prefix = node_label(node) + ": ";
        fail(code, message.rfind(prefix, 0) == 0 ? message : prefix + message);
      }
    }
    for (size_t a = 0; a < node.num_attributes; ++a)
      if (node.attributes[a]->type == LOOM_ATTR_GRAPH) compile_graph(*node.attributes[a]->graph);
  }
  // Constants hold no memory of the run and stay bound in pooled scopes, so they are never
  // released.
  for (size_t v = 0; v < graph.num_values; ++v)
    if (last_use[v] >= 0 && g.constants[v].view.dtype == LOOM_DTYPE_UNDEFINED)
      g.nodes[static_cast<size_t>(last_use[v])].release_after.push_back(static_cast<int32_t>(v));
}

// ---- scopes of runs, reused ----------------------------------------------------------------

// A scope holds a Tensor per value of its graph; making and destroying one for every run (and
// for every If branch or Loop iteration taken) cost a streaming model's chunk several percent
// of its time. Finished scopes keep their constants bound and wait here for the next run.
PooledScope::PooledScope(const CompiledGraph& cg, const Scope* parent) : cg_(cg) {
  {
    std::lock_guard<std::mutex> lock(cg.spare_mutex);
    if (!cg.spare_scopes.empty()) {
      scope_ = std::move(cg.spare_scopes.back());
      cg.spare_scopes.pop_back();
    }
  }
  if (!scope_) {
    const size_t n = cg.graph->num_values;
    scope_ = std::make_unique<Scope>();
    scope_->graph = &cg;
    scope_->values.resize(n);
    scope_->present.assign(n, false);
    for (int32_t v : cg.constant_values) {
      scope_->values[static_cast<size_t>(v)] = cg.constants[static_cast<size_t>(v)];
      scope_->present[static_cast<size_t>(v)] = true;
    }
  }
  scope_->parent = parent;
}

PooledScope::~PooledScope() {
  Scope& s = *scope_;
  s.parent = nullptr;
  for (size_t v = 0; v < s.values.size(); ++v) {
    const Tensor& constant = cg_.constants[v];
    if (constant.view.dtype != LOOM_DTYPE_UNDEFINED) {
      // A constant stays bound: the run may have bound an input of the same value over it.
      if (s.values[v].view.data != constant.view.data) s.values[v] = constant;
    } else if (s.present[v]) {
      s.values[v] = Tensor{};
      s.present[v] = false;
    }
  }
  std::lock_guard<std::mutex> lock(cg_.spare_mutex);
  // As many as run at once (concurrent runs, a Loop's body inside another run of it) are kept.
  if (cg_.spare_scopes.size() < CompiledGraph::kSpareScopes)
    cg_.spare_scopes.push_back(std::move(scope_));
}

// ---- run ----------------------------------------------------------------------------------

// The kit (Entries::run) has checked the number of inputs and each one's dtype; what remains
// is the shape the compiled graph declares and that the bytes are there.
std::vector<Tensor> Executable::run_graph(std::span<const loom_tensor_t> inputs,
                                          const loom_run_control_t* control) {
  RunBudgetScope budget(control);
  const CompiledGraph& cg = *graphs_.at(&root_->view);
  const loom_graph_t& g = *cg.graph;
  if (inputs.size() != g.num_inputs)
    fail(LOOM_ERROR_INTERNAL, "the subgraph takes " + std::to_string(g.num_inputs) + " inputs, " +
                                  std::to_string(inputs.size()) + " given");
  PooledScope pooled(cg, nullptr);
  Scope& scope = *pooled;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto index = static_cast<size_t>(g.inputs[i]);
    const loom_value_info_t& info = *g.values[index];
    const loom_tensor_t& in = inputs[i];
    std::string what = std::string("input '") + info.name + "'";
    if (in.rank < 0 || in.rank > LOOM_MAX_RANK)
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has invalid rank " + std::to_string(in.rank));
    if (info.rank >= 0 && in.rank != info.rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has rank " + std::to_string(in.rank) +
                                            ", expected " + std::to_string(info.rank));
    for (int32_t d = 0; d < in.rank; ++d) {
      if (in.dims[d] < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has a negative dimension");
      if (info.rank >= 0 && info.dims[d] >= 0 && in.dims[d] != info.dims[d])
        fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has extent " + std::to_string(in.dims[d]) +
                                              " in dimension " + std::to_string(d) + ", expected " +
                                              std::to_string(info.dims[d]));
    }
    std::optional<size_t> needed =
        sdk::try_byte_size(sdk::element_count(in), sdk::dtype_size(in.dtype));
    if (!needed) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has a shape too large to address");
    if (*needed > 0 && (!in.data || in.byte_size < *needed))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           what + " has no host data or fewer bytes than its shape needs");
    scope.values[index] = borrowed(in);
    scope.present[index] = true;
  }
  // Only this top-level graph's nodes are reported: a Loop, If or Scan node's step spans its
  // bodies' nodes, whose indices refer to their own graphs, not to the compiled subgraph.
  const sdk::RunControl profiler(control);
  return execute(cg, scope, profiler.profiling() ? &profiler : nullptr);
}

std::vector<Tensor> Executable::run_nested(const loom_graph_t& graph,
                                           std::span<const Tensor* const> inputs,
                                           const Scope& parent) {
  auto it = graphs_.find(&graph);
  if (it == graphs_.end())
    fail(LOOM_ERROR_INTERNAL, "run_subgraph: the graph is not a nested graph of this executable");
  const CompiledGraph& cg = *it->second;
  if (inputs.size() != graph.num_inputs)
    fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("nested graph '") + graph.name + "' takes " +
                                          std::to_string(graph.num_inputs) + " inputs, " +
                                          std::to_string(inputs.size()) + " given");
  PooledScope pooled(cg, &parent);
  Scope& scope = *pooled;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    auto index = static_cast<size_t>(graph.inputs[i]);
    scope.values[index] = *inputs[i];
    scope.present[index] = true;
  }
  return execute(cg, scope);
}

std::vector<Tensor> Executable::execute(const CompiledGraph& cg, Scope& scope,
                                        const sdk::RunControl* profile) {
  const loom_graph_t& g = *cg.graph;
  // Constants are bound already: PooledScope binds them and never releases them.
  for (int32_t v : cg.outer_scope_values) {
    auto index = static_cast<size_t>(v);
    if (scope.present[index]) continue;
    const Tensor* t = scope.parent ? scope.parent->lookup(g.values[index]->name) : nullptr;
    if (!t)
      fail(LOOM_ERROR_RUNTIME, std::string("outer-scope value '") + g.values[index]->name +
                                   "' of graph '" + g.name + "' is not available");
    scope.values[index] = *t;
    scope.present[index] = true;
  }
  for (const CompiledNode& cn : cg.nodes) {
    if (profile) {
      // One step per node: the cpu device fuses nothing and drops no node at compile.
      const uint64_t start = sdk::RunControl::now_ns();
      run_node(cg, cn, scope);
      const auto index = static_cast<int32_t>(&cn - cg.nodes.data());
      profile->profile(cn.node->name, cn.detail.c_str(), std::span<const int32_t>(&index, 1), start,
                       sdk::RunControl::now_ns());
    } else {
      run_node(cg, cn, scope);
    }
    for (int32_t v : cn.release_after) {
      scope.values[static_cast<size_t>(v)] = Tensor{};
      scope.present[static_cast<size_t>(v)] = false;
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(g.num_outputs);
  for (size_t i = 0; i < g.num_outputs; ++i) {
    auto index = static_cast<size_t>(g.outputs[i]);
    if (!scope.present[index]) {
      const Tensor* t = scope.parent ? scope.parent->lookup(g.values[index]->name) : nullptr;
      if (!t)
        fail(LOOM_ERROR_RUNTIME, std::string("output '") + g.values[index]->name + "' of graph '" +
                                     g.name + "' was not computed");
      outputs.push_back(*t);
      continue;
    }
    outputs.push_back(scope.values[index]);
  }
  return outputs;
}

void Executable::run_node(const CompiledGraph& cg, const CompiledNode& cn, Scope& scope) {
  // Cancellation and deadlines end the run between nodes (nested graphs' nodes included).
  if (const std::shared_ptr<RunBudget>& budget = current_run_budget()) budget->control.poll();
  NodeContext ctx(*this, cg, cn, scope);
  // The node's name only on errors: building it for every node cost a small kernel's time.
  auto named = [&](const std::string& message) {
    const std::string where = ctx.where();
    return message.rfind(where, 0) == 0 ? message : where + ": " + message;
  };
  try {
    if (cn.kernel.builtin) {
      cn.kernel.builtin->fn(ctx);
    } else {
      loom_kernel_context_t c{&ctx};
      sdk::check(cn.kernel.plugin->compute(cn.plugin_state, cn.node, &kContextApi, &c));
    }
  } catch (const Error& e) {
    throw Error(e.code(), named(e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(LOOM_ERROR_OUT_OF_MEMORY, ctx.where() + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(LOOM_ERROR_RUNTIME, named(e.what()));
  }
  const loom_node_t& node = *cn.node;
  for (size_t i = 0; i < node.num_outputs; ++i) {
    if (node.outputs[i] < 0) continue;
    Tensor& out = ctx.outputs()[i];
    if (out.view.dtype == LOOM_DTYPE_UNDEFINED)
      fail(LOOM_ERROR_INTERNAL,
           ctx.where() + ": the kernel produced no output " + std::to_string(i));
    auto index = static_cast<size_t>(node.outputs[i]);
    scope.values[index] = std::move(out);
    scope.present[index] = true;
  }
}

// ---- the ABI's run ------------------------------------------------------------------------

namespace {

// A result as a buffer the caller owns. Memory the interpreter owns is shared, not copied;
// borrowed memory (a graph input or constant passed through) is copied.
std::unique_ptr<sdk::kit::HostBuffer> output_buffer(const Tensor& t) {
  if (t.owner) {
    auto buffer = sdk::kit::HostBuffer::share(t.owner, t.view.data, t.view.byte_size);
    buffer->keep = t.strings;
    return buffer;
  }
  if (t.view.dtype == LOOM_DTYPE_STRING) {
    size_t count = static_cast<size_t>(sdk::element_count(t.view));
    auto strings = std::make_shared<std::vector<std::string>>();
    const auto* src = static_cast<const loom_string_t*>(t.view.data);
    for (size_t i = 0; i < count; ++i)
      strings->emplace_back(src[i].data ? std::string(src[i].data, src[i].size) : "");
    auto* views = new loom_string_t[count ? count : 1]();
    for (size_t i = 0; i < count; ++i) views[i] = {(*strings)[i].data(), (*strings)[i].size()};
    auto buffer = sdk::kit::HostBuffer::share(
        std::shared_ptr<void>(views, [](void* p) { delete[] static_cast<loom_string_t*>(p); }),
        views, count * sizeof(loom_string_t));
    buffer->keep = std::move(strings);
    return buffer;
  }
  const size_t bytes = t.view.byte_size;
  auto buffer = sdk::kit::HostBuffer::allocate(bytes, "copying an output");
  if (bytes) std::memcpy(buffer->data, t.view.data, bytes);
  return buffer;
}

}  // namespace

void Executable::run(const loom_run_args_t& args) {
  std::vector<loom_tensor_t> inputs(args.inputs, args.inputs + args.num_inputs);
  if (!host_memory_)  // the core hands "device" tensors over by buffer only
    for (loom_tensor_t& t : inputs)
      if (!t.data && t.buffer)
        t.data = static_cast<char*>(sdk::kit::buffer_of(t.buffer).data) + t.offset;
  const sdk::RunControl control(&args);
  std::vector<Tensor> results = run_graph(std::span<const loom_tensor_t>(inputs), control.raw());
  for (size_t i = 0; i < results.size(); ++i) {
    const loom_tensor_t& view = results[i].view;
    sdk::kit::hand_over(output_buffer(results[i]), view.dtype,
                        std::span<const int64_t>(view.dims, static_cast<size_t>(view.rank)),
                        args.outputs[i], host_memory_);
  }
}

}  // namespace loom::cpu
