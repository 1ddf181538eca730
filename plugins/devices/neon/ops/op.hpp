// The NEON device's op interface. Each op family (ops/*.cpp) registers an OpDef: a planning
// check (supports: which attributes, dtypes and constant inputs its kernels really handle; the
// scheduler sends everything else to another device) and a factory that prepares the node once
// at compile time (reads attributes, packs constant weights) into an Op that runs it.
#pragma once

#include <cstddef>
#include <functional>
#include <loom/plugin.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/tensor.hpp"

namespace loom::neon {

using sdk::Attributes;
using sdk::fail;

// What an op sees while it runs: the device's threads.
class Runtime {
 public:
  virtual ~Runtime() = default;
  // fn(begin, end) over chunks of [0, n), none smaller than `grain`, on the device's threads;
  // returns when all are done. fn must not throw.
  virtual void parallel_for(size_t n, size_t grain,
                            const std::function<void(size_t, size_t)>& fn) const = 0;
  virtual int threads() const = 0;
};

class Op {
 public:
  virtual ~Op() = default;
  // inputs[i] is nullptr for an omitted optional input; fills every requested output.
  virtual void run(std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                   const Runtime& rt) = 0;
  // The op's NC4HW4 variant: true for the inputs it reads packed when the executor runs it
  // packed (then those inputs arrive with Tensor::packed4 set and the op produces its rank-4
  // outputs packed); false for every input when the op has no pack4 variant for this node.
  // Decided at compile time from the static shapes; run() dispatches on the inputs' packed4.
  virtual bool pack4_input(size_t /*input*/) const { return false; }
};

// How the device compiles: precision=f16 on a CPU with ARMv8.2 FP16 arithmetic makes the GEMM
// based ops (Conv, Gemm, MatMul) pack their operands in fp16 and use the fp16 kernels, and the
// packed (NC4HW4) depthwise Conv compute in fp16.
struct CompileOptions {
  bool fp16 = false;
};

using SupportFn = std::string (*)(const loom_graph_t& graph, const loom_node_t& node);
using CreateFn = std::unique_ptr<Op> (*)(const loom_graph_t& graph, const loom_node_t& node,
                                         const CompileOptions& options);

struct OpDef {
  const char* op_type;  // ONNX default domain
  int since_version;    // first opset this definition serves
  SupportFn supports;   // "" = supported, else the reason (shown by --explain)
  CreateFn create;
};

// Registers an op at load time (static registrar).
struct OpRegistrar {
  explicit OpRegistrar(const OpDef& def);
};
#define LOOM_NEON_CONCAT_INNER(a, b) a##b
#define LOOM_NEON_CONCAT(a, b) LOOM_NEON_CONCAT_INNER(a, b)
#define LOOM_NEON_OP(op, since, supports, create)          \
  static const ::loom::neon::OpRegistrar LOOM_NEON_CONCAT( \
      loom_neon_op_, __LINE__)(::loom::neon::OpDef{op, since, supports, create})

// The definition serving `node` (highest since_version <= its opset), or nullptr.
const OpDef* find_op(const loom_node_t& node);
// "" if the neon device runs `node`, else why not.
std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node);
// Sorted "Add, AveragePool, ..." of every registered op type, for docs and --explain.
std::string registered_ops();

// ---- helpers for supports/create ---------------------------------------------------------

// "<OpType> node '<name>'" for messages.
std::string where(const loom_node_t& node);
// "" if every present input and output is float32 (or of unknown type), else the reason.
std::string require_float32(const loom_graph_t& graph, const loom_node_t& node);
// The value of input i if it is a constant with data, else nullptr.
const loom_value_info_t* constant_input(const loom_graph_t& graph, const loom_node_t& node,
                                        size_t i);
// True if output i is requested.
bool output_requested(const loom_node_t& node, size_t i);
// Known static rank of input i, or -1.
int32_t input_rank(const loom_graph_t& graph, const loom_node_t& node, size_t i);

}  // namespace loom::neon
