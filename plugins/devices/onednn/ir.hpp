// The onednn device's view of one subgraph at compile time: values with their static shapes and
// constant data, nodes in topological order with their consumers, and the small helpers the
// op emitters share to read attributes and constants. Built from the core's loom_graph_t view
// (valid during compile only); constants' data is borrowed (the ABI keeps it valid while the
// executable lives) except for Constant nodes' tensors, which are copied.
#pragma once

#include <cstdint>
#include <loom/op_semantics.hpp>  // sdk::normalize_axis, sdk::auto_pad_of, ...
#include <loom/plugin.hpp>
#include <optional>
#include <string>
#include <vector>

namespace loom::onednn {

struct IrValue {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
  const void* data = nullptr;  // constant data (borrowed or owned_data)
  size_t data_size = 0;
  // The host's identity of the constant's bytes (ABI 1.7; 0: none): shared_constants.hpp keys
  // by it instead of hashing the bytes again. Only for `data` as the core handed it.
  uint64_t content_id = 0;
  std::vector<unsigned char> owned_data;  // Constant nodes' tensors
  bool graph_input = false;
  bool graph_output = false;
  int producer = -1;           // node index, -1 for inputs and constants
  std::vector<int> consumers;  // node indices, in order, one entry per use

  bool constant() const { return data != nullptr; }
  int64_t elements() const;
};

// The constant parameters of a quantized tensor (ONNX QuantizeLinear/DequantizeLinear): real =
// scale * (q - zero), per tensor (one entry) or per slice along `axis`.
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero;
  int64_t axis = 1;
  loom_dtype_t dtype = LOOM_DTYPE_UINT8;  // of q
  bool per_tensor() const { return scale.size() == 1; }
};

// A Conv, MatMul or Gemm computed in int8 (quantized.cpp): its quantized input, constant
// int8 weights and, when a QuantizeLinear follows, its quantized output. Made from a
// DequantizeLinear -> op -> QuantizeLinear pattern (QDQ models) or from QLinearConv /
// QLinearMatMul (QOperator models); the DequantizeLinear and QuantizeLinear nodes it reads
// through are folded into it.
struct QuantizedOp {
  int x = -1;  // the quantized input (uint8 or int8)
  QuantParams xq;
  int w = -1;               // the constant int8 weights, in the op's ONNX layout
  QuantParams wq;           // per tensor or per output channel; zero points all 0
  std::vector<float> bias;  // real-valued, one per output channel; empty: none
  int y = -1;               // the output: quantized when yq is set, else float32
  std::optional<QuantParams> yq;
  bool relu = false;  // a Relu between the op and its QuantizeLinear
  // Dynamic quantization (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by the
  // product of the scales): x's scale and zero point are these run-time scalars; xq is unused
  // and the float result y is scaled by dynamic_scale * wq.scale.
  int dynamic_scale = -1, dynamic_zero = -1;
  // A residual added to the result (ResNet's y = Q(Relu(DQ(Q(conv)) + DQ(residual))), TFLite's
  // int8 ADD after a convolution): the quantized residual, its parameters, the sum's
  // QuantizeLinear (y is then its output) and a Relu after the sum. yq stays the op's own
  // QuantizeLinear, whose rounding and saturation run before the sum as post-ops, so the
  // fused result is the graph's.
  int residual = -1;
  QuantParams rq;
  std::optional<QuantParams> sum_q;
  bool relu_after_sum = false;
  // Computed in float (x dequantized by a reorder, a float convolution with the dequantized
  // weights, the result quantized by a reorder): a QLinearConv with int8 (signed) activations on
  // a CPU where oneDNN's int8-source kernels are inexact (quantized.cpp, exact_signed_source).
  bool float_form = false;
  // A Clip of the quantized result by constant quantized bounds (TFLite's fused RELU6/RELU_N1_TO_1
  // after a QLinearConv), folded in.
  std::optional<std::pair<int32_t, int32_t>> clip;
};

struct IrNode {
  const loom_node_t* view = nullptr;  // attributes; valid during compile
  std::string op;
  int64_t opset = 0;
  std::vector<int> inputs;   // value indices, -1 = omitted
  std::vector<int> outputs;  // value indices, -1 = omitted
  bool absorbed = false;     // fused into another node's primitive; emits nothing
  // Nodes a rewrite pass (fusion.cpp) folded into this one, which its step then computes too
  // (what profiles report as the step's nodes).
  std::vector<int> folded;
  // Rewrites recorded by the fusion passes.
  std::vector<float> folded_weights;  // Conv after a BatchNormalization fold
  std::vector<float> folded_bias;
  std::optional<float> epsilon;      // a LayerNormalization made from the decomposed pattern
  std::optional<QuantizedOp> quant;  // computed in int8 (rewrite_quantized)
  // When >= 0, the node is emitted right after that later node instead of at its own place:
  // the residual it sums is made there (TFLite orders a block's shortcut Pad after the block's
  // last convolution). Set by quantized.cpp's take_residual and fusion.cpp's
  // defer_to_residuals; valid when nothing between reads the node's output.
  int emit_after = -1;
};

struct IrGraph {
  std::vector<IrValue> values;
  std::vector<IrNode> nodes;
  std::vector<int> inputs;   // graph inputs, in order
  std::vector<int> outputs;  // graph outputs, in order

  const IrValue& value(int id) const { return values.at(static_cast<size_t>(id)); }
  IrValue& value(int id) { return values.at(static_cast<size_t>(id)); }
  // The value of input `i`, or -1.
  int in(const IrNode& n, size_t i) const { return i < n.inputs.size() ? n.inputs[i] : -1; }
  // The single live consumer of `value`, or -1 if it has several, none, or is a graph output.
  int sole_consumer(int value) const;
};

// Pattern-matching helpers of the rewrite passes (fusion.cpp, quantized.cpp):
// the only live reader of `value` if it runs `op`, else -1;
int sole_reader(const IrGraph& g, int value, const char* op);
// the input of binary node `n` that is not `value`, or -1;
int other_input(const IrNode& n, int value);
// removes one use of `value` by `node` from its consumers.
void drop_consumer(IrGraph& g, int value, int node);

// Copies the view; throws LOOM_ERROR_UNSUPPORTED when a value the subgraph uses has an unknown
// shape or a rank beyond oneDNN's limit.
IrGraph build_ir(const loom_graph_t& graph);

// Fusion passes that rewrite the IR before emission: the decomposed-GELU pattern becomes one
// "Gelu" node, the decomposed LayerNorm one "LayerNormalization" node, BatchNormalization
// after a Conv is folded into the Conv's weights and bias, and a Conv whose residual Add reads
// a value made later is deferred to it (IrNode::emit_after).
void rewrite_patterns(IrGraph& g);

// Quantized patterns (quantized.cpp): Conv/MatMul/Gemm between DequantizeLinear and
// QuantizeLinear nodes, and QLinearConv/QLinearMatMul, become int8 ops (IrNode::quant);
// DequantizeLinear of constants left over become float constants.
void rewrite_quantized(IrGraph& g);
// Why a quantization node (QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul)
// cannot run here ("" when it can); nullopt for other ops.
std::optional<std::string> why_quantized_unsupported(const loom_graph_t& graph,
                                                     const loom_node_t& node);
// True when `value` is a DequantizeLinear of a constant with constant parameters: compile
// turns it into a constant (weights of QDQ models).
bool dequantized_constant(const loom_graph_t& graph, int32_t value);

// Reads constant value `id` as floats (float32 or float64 data) or integers (int32/int64).
std::vector<float> constant_floats(const IrGraph& g, int id);
std::vector<int64_t> constant_ints(const IrGraph& g, int id);
// The single float of a scalar-like constant (one element), or nullopt.
std::optional<float> scalar_constant(const IrGraph& g, int id);

// Why `node` cannot run on this device ("" when it can): types and shapes here, then the op's
// own check (builder.hpp, OpEntry).
std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node);

// Placement helpers of the ops' checks (support.cpp), on the view the core shows.
using Info = const loom_value_info_t*;
bool is_constant(Info v);  // a constant whose bytes are there
bool known_shape(Info v);  // every extent known
std::vector<int64_t> dims_of(Info v);
// One element of a float constant (an initializer, a folded value or a Constant node's).
bool scalar_float_constant(const loom_graph_t& graph, Info v);
// Whether the node has outputs past the first `keep` that something reads.
bool has_extra_outputs(const loom_node_t& node, size_t keep);
// Erf inside the exported GELU pattern, which compile turns into one Gelu (rewrite_patterns).
bool in_gelu_pattern(const loom_graph_t& graph, const loom_node_t& node);

// How many leading inputs of `op` carry tensor data (the rest are shapes, axes, bounds).
size_t data_inputs(const std::string& op, size_t num_inputs);

}  // namespace loom::onednn
