// The op table: for each ONNX op the device runs, a support check (shapes may be unknown
// there) and a lowering to kernel launches (every shape is static there). One op family per
// ops_*.cpp file; each adds its entries through an add_*_ops function.
#pragma once

#include <limits>
#include <loom/op_registry.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "executable.hpp"
#include "node_info.hpp"

namespace loom::opencl {

struct OpEntry {
  // "" when the device runs the node, else why not (shown by --explain).
  std::string (*check)(const NodeInfo& node);
  void (*lower)(Executable& exe, const NodeInfo& node, const Fusion& fusion);
};
using OpTable = sdk::OpRegistry<OpEntry>;

// The entry for a node of the ONNX domain (the entries handle the opset versions themselves).
const OpEntry* find_op(std::string_view op_type);
// "" when supported; applies the checks common to every op first.
std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node);

void add_elementwise_ops(OpTable& table);
void add_conv_ops(OpTable& table);
void add_gemm_ops(OpTable& table);
void add_pool_ops(OpTable& table);
void add_normalization_ops(OpTable& table);
void add_reduce_ops(OpTable& table);
void add_movement_ops(OpTable& table);
void add_resize_ops(OpTable& table);

// ---- helpers shared by the op families ----

inline constexpr int kMaxRank = 8;  // shapes travel to kernels as int8 vectors

// "" if input i is present with one of the dtypes (or its dtype is not known yet).
std::string expect_dtype(const NodeInfo& node, size_t input,
                         std::initializer_list<loom_dtype_t> ok);
// "" if every present input and output is float32 (or not known yet).
std::string expect_all_float(const NodeInfo& node);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
// Strides that read `in` (right-aligned numpy broadcasting) at the coordinates of `out`.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out);
// Kernel name suffix for an element size: "s1", "s2", "s4", "s8"; nullptr otherwise.
const char* size_suffix(size_t elem_size);
// A flat copy of src into dst (same element count and size).
void copy_value(Executable& exe, int src, int dst, const std::string& label);
// One batched GEMM launch (see kernels/gemm.cl for the meaning of the strides):
//   C[b](m, n) = clamp(alpha * sum_k A[b](m, k) B[b](k, n) + beta * bias[b](m, n))
struct GemmCall {
  int a = -1, b = -1, c = -1, bias = -1;                          // values; bias -1: none
  int64_t a_extra = 0, b_extra = 0, c_extra = 0, bias_extra = 0;  // elements past the start
  int64_t batch = 1, M = 0, N = 0, K = 0;
  int64_t sab = 0, sam = 0, sak = 0;  // A strides: batch, row, depth
  int64_t sbb = 0, sbk = 0, sbn = 0;  // B strides: batch, depth, column
  int64_t scb = 0, ldc = 0;           // C strides: batch, row (columns are contiguous)
  int64_t sqb = 0, sqm = 0, sqn = 0;  // bias strides (0 broadcasts)
  float alpha = 1.0f, beta = 1.0f;
  float act_min = -std::numeric_limits<float>::infinity();
  float act_max = std::numeric_limits<float>::infinity();
};
void emit_gemm(Executable& exe, const GemmCall& call, const std::string& label);

}  // namespace loom::opencl
