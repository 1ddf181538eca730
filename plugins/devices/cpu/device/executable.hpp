// A compiled subgraph of the cpu device and the interpreter that runs it.
//
// compile: deep-copies the view (graph_mirror.hpp), resolves every node's kernel (built-in
// registry first, then kernels that kernel plugins registered for "cpu"), also for nested
// graphs, and computes when each value dies so run can drop intermediates early.
// run: binds inputs and constants without copying, runs the nodes in order through a
// KernelContext, and hands the outputs over in kit::HostBuffer's the core frees with
// free_buffer (sharing the interpreter's memory where it owns it).
#pragma once

#include <loom/plugin.h>

#include <loom/device_kit.hpp>
#include <loom/thread_pool.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "../kernel.hpp"
#include "graph_mirror.hpp"

namespace loom::cpu {

using sdk::ThreadPool;

// The kernel chosen for a node: a built-in one or a kernel plugin's.
struct ResolvedKernel {
  const KernelDef* builtin = nullptr;
  const loom_kernel_t* plugin = nullptr;
};

// Finds the kernel for a node: built-in first, then host->find_kernel("cpu", ...). Returns an
// empty ResolvedKernel if there is none.
ResolvedKernel find_kernel(loom_host_t* host, const loom_node_t& node);

// "" if the cpu device can run `node` (including all nodes of its nested graphs), else why not.
std::string why_unsupported(loom_host_t* host, const loom_graph_t& graph, const loom_node_t& node);

struct CompiledNode {
  const loom_node_t* node = nullptr;
  ResolvedKernel kernel;
  std::string detail;                  // how it runs, for profiled runs: the kernel's name
  void* plugin_state = nullptr;        // from loom_kernel_t::create
  std::vector<int32_t> release_after;  // values whose last use is this node
};

struct Scope;

struct CompiledGraph {
  const loom_graph_t* graph = nullptr;  // the mirror's view
  std::vector<CompiledNode> nodes;
  std::vector<Tensor> constants;         // per value index; view.dtype UNDEFINED if not constant
  std::vector<int32_t> constant_values;  // the indices of constants
  std::unordered_map<std::string, int32_t> value_by_name;
  std::vector<int32_t> outer_scope_values;  // values flagged OUTER_SCOPE
  // Scopes of finished runs of this graph, constants still bound (PooledScope).
  static constexpr size_t kSpareScopes = 4;
  mutable std::mutex spare_mutex;
  mutable std::vector<std::unique_ptr<Scope>> spare_scopes;
};

// The values of one running (sub)graph, chained to the enclosing graph's scope so that nested
// graphs resolve OUTER_SCOPE names.
struct Scope {
  const CompiledGraph* graph = nullptr;
  std::vector<Tensor> values;
  std::vector<bool> present;
  const Scope* parent = nullptr;
  // The tensor of `name` in this scope or an enclosing one, or nullptr.
  const Tensor* lookup(const std::string& name) const;
};

// A scope for one run of `cg`: a spare one of an earlier run, or a new one with the constants
// bound. Given back on destruction with every value but the constants released.
class PooledScope {
 public:
  PooledScope(const CompiledGraph& cg, const Scope* parent);
  ~PooledScope();
  PooledScope(const PooledScope&) = delete;
  PooledScope& operator=(const PooledScope&) = delete;
  Scope& operator*() { return *scope_; }

 private:
  const CompiledGraph& cg_;
  std::unique_ptr<Scope> scope_;
};

class Executable final : public sdk::kit::Executable {
 public:
  // `host_memory`: the device's buffers are host memory the core may address (false for the
  // test-only "remote" variants: inputs then arrive by buffer only, outputs without data).
  Executable(loom_host_t* host, ThreadPool& pool, const loom_graph_t& graph,
             bool host_memory = true);
  ~Executable() override;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // The ABI's run (the kit has checked counts, dtypes and buffer ranges): runs the graph and
  // hands its outputs over.
  void run(const loom_run_args_t& args) override;

  // Runs the top-level graph: inputs follow graph.inputs; returns graph.outputs in order.
  // `control`: the run's limits and cancellation (ABI 1.4), NULL for none.
  std::vector<Tensor> run_graph(std::span<const loom_tensor_t> inputs,
                                const loom_run_control_t* control = nullptr);
  // Runs a nested graph of this executable inside `parent` (control-flow kernels).
  std::vector<Tensor> run_nested(const loom_graph_t& graph, std::span<const Tensor* const> inputs,
                                 const Scope& parent);

  const loom_graph_t& graph() const { return root_->view; }
  ThreadPool& pool() const { return pool_; }

 private:
  void compile_graph(const loom_graph_t& graph);
  void destroy_plugin_states();
  // `profile`: the run's control when it is profiled and `cg` is the top-level graph (only its
  // node indices mean anything to the host), else null.
  std::vector<Tensor> execute(const CompiledGraph& cg, Scope& scope,
                              const sdk::RunControl* profile = nullptr);
  void run_node(const CompiledGraph& cg, const CompiledNode& cn, Scope& scope);

  loom_host_t* host_;
  ThreadPool& pool_;
  bool host_memory_;
  std::unique_ptr<MirrorGraph> root_;
  std::map<const loom_graph_t*, std::unique_ptr<CompiledGraph>> graphs_;
};

}  // namespace loom::cpu
