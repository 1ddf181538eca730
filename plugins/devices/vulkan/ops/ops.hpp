// The op table: for each supported ONNX op, a capability check (shown by --explain when it
// refuses) and a builder that turns one node into dispatches. One op family per file.
#pragma once

#include <loom/op_registry.hpp>
#include <loom/op_semantics.hpp>
#include <loom/plugin.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "builder.hpp"

namespace loom::vulkan {

struct OpDef {
  // "" when the node is supported; else why not. Shapes may be unknown (-1) here.
  std::string (*check)(const loom_graph_t& graph, const loom_node_t& node);
  void (*build)(Builder& b, const loom_node_t& node);
};

using OpTable = sdk::OpRegistry<OpDef>;
void add_elementwise_ops(OpTable& table);
void add_conv_ops(OpTable& table);
void add_gemm_ops(OpTable& table);
void add_pool_ops(OpTable& table);
void add_normalization_ops(OpTable& table);
void add_reduce_ops(OpTable& table);
void add_movement_ops(OpTable& table);
void add_resize_ops(OpTable& table);

const OpDef* find_op(std::string_view domain, std::string_view op_type);
// "" when the device can run the node.
std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node);

// The epilogue equivalent of an activation node (Relu, Clip with constant bounds, ...), if it
// is one the kernels can fuse.
std::optional<Epilogue> as_epilogue(const loom_graph_t& graph, const loom_node_t& node);

// ---- helpers shared by the op files ----------------------------------------------------------

// "" if value is float32 (or absent and optional); else a reason naming the value.
std::string require_dtype(const loom_value_info_t* value, const char* role,
                          std::initializer_list<loom_dtype_t> allowed);
// "" if the value's rank is known and at most max_rank.
std::string require_rank(const loom_value_info_t* value, const char* role, int max_rank);
// Integer data of a constant input (int64 or int32), or nullopt when it is not a constant.
std::optional<std::vector<int64_t>> constant_ints(const loom_value_info_t* value);
std::optional<std::vector<float>> constant_floats(const loom_value_info_t* value);

// Row-major strides of dims, in elements.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

}  // namespace loom::vulkan
