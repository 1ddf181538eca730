// The cpu device's internal kernel interface. Every op family lives in its own file under
// kernels/ and registers its kernels with LOOM_CPU_KERNEL; the interpreter looks them up by
// (domain, op_type, opset). Kernels throw loom::sdk::Error (code + one-line message) on bad
// input; the device turns that into a status at the ABI boundary.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <loom/op_registry.hpp>
#include <loom/plugin.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::cpu {

using sdk::Attributes;
using sdk::Error;
using sdk::fail;

// A host tensor that owns (or shares ownership of) its memory. `view.data` points into
// `owner`'s allocation or into memory that outlives the tensor (arena, model constant).
struct Tensor {
  loom_tensor_t view = sdk::empty_tensor();
  std::shared_ptr<void> owner;
  // Backing bytes of a STRING tensor: view.data holds loom_string_t pointing into these.
  std::shared_ptr<std::vector<std::string>> strings;
};

// The limits of the run in progress on this thread (plugin ABI 1.4's loom_run_control_t):
// make_tensor checks every allocation against them, the interpreter polls between nodes and
// Loop bounds its iterations by them. Null outside a run (tests that call kernels directly).
struct RunBudget {
  sdk::RunControl control;
  std::atomic<uint64_t> live{0};  // bytes of this run's make_tensor allocations still held
};
std::shared_ptr<RunBudget>& current_run_budget();

// Sets the thread's run budget for its lifetime (nested runs keep the outer one).
class RunBudgetScope {
 public:
  explicit RunBudgetScope(const loom_run_control_t* control);
  ~RunBudgetScope();
  RunBudgetScope(const RunBudgetScope&) = delete;
  RunBudgetScope& operator=(const RunBudgetScope&) = delete;

 private:
  bool set_ = false;
};

// Fails with LOOM_ERROR_LIMIT_EXCEEDED, naming `what`, when a kernel's scratch buffer of
// `bytes` is more than the run allows one tensor to take. For scratch sized from the run's data
// that make_tensor does not allocate (tables, intermediates).
void check_scratch_bytes(uint64_t bytes, const std::string& what);

// Allocates a zero-initialised host tensor of the given type and shape. Fails with
// LOOM_ERROR_LIMIT_EXCEEDED when the run's budget does not allow it (before allocating).
Tensor make_tensor(loom_dtype_t dtype, std::span<const int64_t> dims);

// What a kernel sees while it computes one node. Implemented by the interpreter.
class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual const loom_graph_t& graph() const = 0;
  virtual const loom_node_t& node() const = 0;
  const Attributes& attrs() const { return attrs_; }
  int64_t opset() const { return node().opset; }
  // "<OpType> node '<name>'" for error messages.
  std::string where() const { return std::string(node().op_type) + " node '" + node().name + "'"; }

  size_t num_inputs() const { return node().num_inputs; }
  // nullptr for an omitted optional input (or an index past the end).
  virtual const loom_tensor_t* input(size_t i) const = 0;
  // Throws a clear error naming the node if the input is missing.
  const loom_tensor_t& required_input(size_t i) const {
    const loom_tensor_t* t = input(i);
    if (!t)
      fail(LOOM_ERROR_INVALID_MODEL,
           where() + ": required input " + std::to_string(i) + " is missing");
    return *t;
  }
  // The whole Tensor (with its owner) of an input, for kernels that pass data through
  // without copying (Identity, Reshape, control flow).
  virtual const Tensor* input_tensor(size_t i) const = 0;

  size_t num_outputs() const { return node().num_outputs; }
  // False for an omitted optional output; allocate_output still works but may be skipped.
  bool output_requested(size_t i) const { return i < node().num_outputs && node().outputs[i] >= 0; }
  // Allocates output i (zero-initialised) and returns its view. Dims must be >= 0.
  virtual loom_tensor_t& allocate_output(size_t i, loom_dtype_t dtype,
                                         std::span<const int64_t> dims) = 0;
  // Sets output i to an existing tensor (shares memory; e.g. Identity, Reshape).
  virtual void set_output(size_t i, Tensor tensor) = 0;

  // Splits [0, n) into chunks over the device's threads and waits for all of them.
  // `grain` = smallest chunk worth a thread. fn must not throw.
  virtual void parallel_for(size_t n, size_t grain,
                            const std::function<void(size_t begin, size_t end)>& fn) const = 0;
  virtual int threads() const = 0;

  // Control flow: runs a nested graph (If/Loop/Scan body) on this device. `inputs` follow the
  // nested graph's input order; OUTER_SCOPE values resolve from the current scope.
  virtual std::vector<Tensor> run_subgraph(const loom_graph_t& subgraph,
                                           std::span<const Tensor* const> inputs) = 0;

 protected:
  explicit KernelContext(const Attributes& attrs) : attrs_(attrs) {}

 private:
  const Attributes& attrs_;
};

using KernelFn = void (*)(KernelContext& ctx);
// Optional planning-time check (dtypes, attributes). Returns "" if supported, else the reason
// shown by --explain.
using SupportFn = std::string (*)(const loom_graph_t& graph, const loom_node_t& node);

struct KernelDef {
  const char* domain;  // "" = ONNX default domain
  const char* op_type;
  int since_version;  // applies to opsets >= since_version (until a newer def)
  KernelFn fn;
  SupportFn supports;  // may be nullptr
};

// Registry of built-in kernels: the SDK's op registry (by domain, op type and opset range),
// filled by LOOM_CPU_KERNEL's static registrars at load time.
class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(const KernelDef& def) { ops_.add(def.domain, def.op_type, def, def.since_version); }
  // Highest since_version <= opset for (domain, op_type), or nullptr.
  const KernelDef* find(std::string_view domain, std::string_view op_type, int64_t opset) const {
    return ops_.find(domain, op_type, opset);
  }

 private:
  sdk::OpRegistry<KernelDef> ops_;
};

struct KernelRegistrar {
  explicit KernelRegistrar(const KernelDef& def) { KernelRegistry::instance().add(def); }
};

#define LOOM_CPU_CONCAT_INNER(a, b) a##b
#define LOOM_CPU_CONCAT(a, b) LOOM_CPU_CONCAT_INNER(a, b)
// LOOM_CPU_KERNEL("Relu", 6, relu_kernel, nullptr); registers for the ONNX domain.
#define LOOM_CPU_KERNEL(op, since, fn, supports)             \
  static const ::loom::cpu::KernelRegistrar LOOM_CPU_CONCAT( \
      loom_cpu_reg_, __LINE__)(::loom::cpu::KernelDef{"", op, since, fn, supports})
#define LOOM_CPU_KERNEL_DOMAIN(domain, op, since, fn, supports) \
  static const ::loom::cpu::KernelRegistrar LOOM_CPU_CONCAT(    \
      loom_cpu_reg_, __LINE__)(::loom::cpu::KernelDef{domain, op, since, fn, supports})

}  // namespace loom::cpu
