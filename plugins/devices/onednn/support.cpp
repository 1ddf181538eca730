// Which nodes the onednn device claims. The answer only depends on what the placement view
// shows (types, shapes where known, attributes, constants): every claimed node must compile,
// so anything oneDNN cannot express exactly is left to the cpu device with a reason.
#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "ir.hpp"

namespace loom::onednn {

namespace {

using Info = const loom_value_info_t*;

bool known_shape(Info v) {
  if (!v || v->rank < 0) return false;
  for (int32_t i = 0; i < v->rank; ++i)
    if (v->dims[i] < 0) return false;
  return true;
}

std::vector<int64_t> dims_of(Info v) {
  return {v->dims, v->dims + v->rank};
}

bool is_constant(Info v) {
  return v && (v->flags & LOOM_VALUE_CONSTANT) && v->data;
}

// True when value `v` is made by a Constant node of `graph` (compile turns those into
// constants too).
bool from_constant_node(const loom_graph_t& graph, Info v) {
  if (!v) return false;
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    const loom_node_t* n = graph.nodes[k];
    if (std::string(n->op_type) == "Constant" && n->num_outputs == 1 && n->outputs[0] >= 0 &&
        graph.values[n->outputs[0]] == v)
      return true;
  }
  return false;
}

// One element of a float constant (an initializer, a folded value or a Constant node's).
bool scalar_float_constant(const loom_graph_t& graph, Info v) {
  if (!v || (v->dtype != LOOM_DTYPE_FLOAT32 && v->dtype != LOOM_DTYPE_FLOAT64)) return false;
  bool scalar = v->rank == 0 || (v->rank >= 0 && sdk::element_count(v->rank, v->dims) == 1);
  if (is_constant(v)) return v->data_size == sdk::dtype_size(v->dtype);
  return scalar && from_constant_node(graph, v);
}

// Erf inside x * 0.5 * (1 + erf(x / sqrt(2))): compile turns the pattern into one GELU
// (rewrite_patterns); oneDNN has no standalone erf. The answer comes from running that same
// rewrite on the graph, so an Erf is claimed exactly when compile will absorb it: any other
// order or constant leaves it to the cpu device instead of failing to compile.
bool in_gelu_pattern(const loom_graph_t& graph, const loom_node_t& node) {
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    if (graph.nodes[k] != &node) continue;
    try {
      IrGraph ir = build_ir(graph);
      rewrite_patterns(ir);
      return ir.nodes[k].absorbed;
    } catch (const std::exception&) {
      return false;  // a graph the rewrites refuse: compile would refuse it too
    }
  }
  return false;
}

const std::set<std::string>& activation_ops() {
  static const std::set<std::string> ops{
      "Relu", "LeakyRelu",  "Sigmoid",  "Tanh", "Elu",       "Exp",  "Sqrt", "Abs",
      "Neg",  "Reciprocal", "Softplus", "Mish", "HardSwish", "Clip", "Pow",  "HardSigmoid"};
  return ops;
}

const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops{"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"};
  return ops;
}

const std::set<std::string>& layout_ops() {
  static const std::set<std::string> ops{"Reshape",  "Flatten", "Squeeze",   "Unsqueeze",
                                         "Identity", "Dropout", "Transpose", "Concat"};
  return ops;
}

const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> ops{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                         "ReduceProd", "ReduceL1",  "ReduceL2",  "ReduceSumSquare"};
  return ops;
}

// An extent that stays unknown until the data is there (no symbolic name binds it from the
// inputs' shapes): compile could not create the primitive.
bool data_dependent_shape(Info v) {
  if (!v || v->rank < 0) return true;
  for (int32_t d = 0; d < v->rank; ++d)
    if (v->dims[d] < 0 && !(v->dim_params && v->dim_params[d])) return true;
  return false;
}

std::string check_op(const loom_graph_t& graph, const loom_node_t& node) {
  const std::string op = node.op_type;
  sdk::Attributes attrs(node);
  auto in = [&](size_t i) { return sdk::node_input(graph, node, i); };
  auto out = [&](size_t i) { return sdk::node_output(graph, node, i); };
  auto extra_outputs = [&](size_t keep) {
    for (size_t i = keep; i < node.num_outputs; ++i)
      if (node.outputs[i] >= 0) return true;
    return false;
  };
  if (op == "Conv" || op == "ConvTranspose") {
    Info x = in(0), w = in(1), b = in(2);
    // Weights and bias may come through a DequantizeLinear of a constant (QDQ models).
    if (!is_constant(w) && !dequantized_constant(graph, node.inputs[1]))
      return "the weights are not a constant";
    if (b && !is_constant(b) && !dequantized_constant(graph, node.inputs[2]))
      return "the bias is not a constant";
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) return "only 1D, 2D and 3D " + op;
    int64_t group = attrs.get_int("group", 1);
    if (group < 1 || w->dims[0] % (op == "Conv" ? group : 1) != 0) return "bad group count";
    std::optional<sdk::AutoPad> auto_pad =
        sdk::parse_auto_pad(attrs.get_string("auto_pad", "NOTSET"));
    if (!auto_pad) return "unknown auto_pad";
    if (op == "ConvTranspose" &&
        ((*auto_pad != sdk::AutoPad::kNotSet && *auto_pad != sdk::AutoPad::kValid) ||
         attrs.has("output_shape")))
      return "ConvTranspose with auto_pad SAME or output_shape";
    if (op == "ConvTranspose") {
      // oneDNN has no negative padding: output_padding must fit in the end pads.
      auto pads = attrs.get_ints("pads");
      auto extra = attrs.get_ints("output_padding");
      size_t sr = static_cast<size_t>(x->rank - 2);
      for (size_t i = 0; extra && i < extra->size() && i < sr; ++i) {
        int64_t end = pads && pads->size() == 2 * sr ? (*pads)[sr + i] : 0;
        if ((*extra)[i] > end) return "ConvTranspose output_padding beyond the end padding";
      }
    }
    return "";
  }
  if (op == "MatMul") {
    if (in(0)->rank < 2 || in(1)->rank < 2) return "MatMul of a vector";
    return "";
  }
  if (op == "Gemm") {
    float alpha = attrs.get_float("alpha", 1.f), beta = attrs.get_float("beta", 1.f);
    if (alpha == 0.f) return "Gemm with alpha 0";
    Info c = in(2);
    if (c && beta != 0.f) {
      bool bias_like = (is_constant(c) || dequantized_constant(graph, node.inputs[2])) &&
                       c->rank >= 1 && known_shape(out(0)) &&
                       c->dims[c->rank - 1] == out(0)->dims[1];
      for (int32_t i = 0; bias_like && i + 1 < c->rank; ++i) bias_like = c->dims[i] == 1;
      if (!bias_like && (beta != 1.f || c->rank > 2)) return "Gemm with a scaled full C";
    }
    return "";
  }
  if (op == "MaxPool" || op == "AveragePool") {
    if (extra_outputs(1)) return "MaxPool with Indices";
    if (in(0)->rank < 3 || in(0)->rank > 5) return "only 1D, 2D and 3D pooling";
    if (!attrs.get_ints("kernel_shape")) return "no kernel_shape";
    if (op == "AveragePool" && attrs.get_int("ceil_mode", 0) &&
        attrs.get_int("count_include_pad", 0))
      return "AveragePool with ceil_mode and count_include_pad";
    return "";
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return in(0)->rank >= 3 && in(0)->rank <= 5 ? "" : "only 1D, 2D and 3D pooling";
  if (activation_ops().count(op)) {
    if (op == "Pow" && !scalar_float_constant(graph, in(1)))
      return "Pow by a non-constant exponent";
    if (op == "Clip")
      for (size_t i = 1; i < 3; ++i)
        if (in(i) && !scalar_float_constant(graph, in(i))) return "Clip with non-constant bounds";
    return "";
  }
  if (binary_ops().count(op)) {
    Info y = out(0);
    if (!known_shape(y)) return "broadcast shapes unknown at placement";
    std::vector<int64_t> yd = dims_of(y);
    size_t full = 0;
    for (size_t i = 0; i < node.num_inputs; ++i) {
      if (!known_shape(in(i))) return "broadcast shapes unknown at placement";
      if (dims_of(in(i)) == yd)
        ++full;
      else if (in(i)->rank > y->rank)
        return "input rank above the output's";
    }
    if (node.num_inputs > 2 && full != node.num_inputs)
      return op + " of more than two broadcast inputs";
    bool first_full = dims_of(in(0)) == yd;
    bool commutative = op != "Sub" && op != "Div";
    bool scalar_minus = op == "Sub" && scalar_float_constant(graph, in(0)) && dims_of(in(1)) == yd;
    if (!first_full && !(commutative && full > 0) && !scalar_float_constant(graph, in(1)) &&
        !scalar_minus)
      return op + " broadcasting its first input";
    return "";
  }
  if (op == "BatchNormalization") {
    if (extra_outputs(1) || attrs.get_int("training_mode", 0)) return "training mode";
    for (size_t i = 1; i < 5; ++i)
      if (!is_constant(in(i))) return "statistics are not constants";
    return in(0)->rank >= 2 ? "" : "rank below 2";
  }
  if (op == "LayerNormalization") return extra_outputs(1) ? "Mean/InvStdDev outputs" : "";
  if (op == "Softmax" || op == "LogSoftmax") return "";
  if (reduce_ops().count(op)) {
    if (in(1) && !is_constant(in(1))) return "axes are not a constant";
    return attrs.get_int("keepdims", 1) == 0 && !known_shape(out(0)) ? "unknown output shape" : "";
  }
  if (op == "Dropout") {
    if (extra_outputs(1)) return "Dropout mask output";
    // An identity in inference (a training_mode input that is a constant false), and in
    // training mode with a constant ratio of 0 (Swin-T's attention exports that: nothing is
    // dropped and the scale is 1).
    Info training = in(2), ratio = in(1);
    auto all_zero = [](Info v) {
      if (!is_constant(v) || v->data_size == 0) return false;
      const auto* bytes = static_cast<const unsigned char*>(v->data);
      return std::all_of(bytes, bytes + v->data_size, [](unsigned char b) { return b == 0; });
    };
    if (training && !all_zero(training) && !(ratio && all_zero(ratio)))
      return "Dropout in training mode";
    return "";
  }
  if (op == "Constant") {
    Info v = out(0);
    if (!v || sdk::dtype_size(v->dtype) == 0 || v->dtype == LOOM_DTYPE_STRING)
      return "non-numeric constant";
    return attrs.has("value") || attrs.has("value_float") || attrs.has("value_floats") ||
                   attrs.has("value_int") || attrs.has("value_ints")
               ? ""
               : "Constant without a numeric value";
  }
  if (auto why = why_quantized_unsupported(graph, node)) return *why;
  if (op == "Erf") return in_gelu_pattern(graph, node) ? "" : "Erf outside the GELU pattern";
  if (layout_ops().count(op)) return "";
  if (op == "Resize" || op == "Upsample") return why_resize_unsupported(graph, node);
  if (op == "LSTM") return why_lstm_unsupported(graph, node);
  if (op == "Pad") return why_pad_unsupported(graph, node);
  if (op == "PRelu") return why_prelu_unsupported(graph, node);
  if (op == "Slice" || op == "Split" || op == "Gather") return why_slice_unsupported(graph, node);
  return "no oneDNN mapping for " + op;
}

}  // namespace

std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  std::string domain = node.domain ? node.domain : "";
  if (!domain.empty() && domain != "ai.onnx") return "domain '" + domain + "' is not ONNX";
  std::string op = node.op_type;
  size_t tensors = data_inputs(op, node.num_inputs);
  // Quantization ops read and write integer tensors: quantized.cpp checks their types.
  const bool quantized = op == "QuantizeLinear" || op == "DequantizeLinear" ||
                         op == "QLinearConv" || op == "QLinearMatMul" ||
                         op == "DynamicQuantizeLinear" || op == "MatMulInteger" || op == "Cast";
  // A Clip of an int8 tensor (TFLite's fused activation after a QLinearConv): quantized.cpp.
  if (op == "Clip" && node.num_inputs > 0 && node.inputs[0] >= 0) {
    Info x = sdk::node_input(graph, node, 0);
    if (x && (x->dtype == LOOM_DTYPE_UINT8 || x->dtype == LOOM_DTYPE_INT8))
      if (auto why = why_quantized_unsupported(graph, node)) return *why;
  }
  // Ops that only move bytes (Pad too), and MaxPool (a maximum of integers is exact), also take
  // the int8 tensors of quantized models (TFLite's int8 graphs transpose, reshape, pad and
  // concatenate them).
  const bool moves_bytes = (layout_ops().count(op) && op != "Dropout") || op == "Pad" ||
                           op == "MaxPool" || op == "GlobalMaxPool";
  auto wrong_type = [&](Info v) {
    if (quantized || v->dtype == LOOM_DTYPE_FLOAT32) return false;
    return !(moves_bytes && (v->dtype == LOOM_DTYPE_UINT8 || v->dtype == LOOM_DTYPE_INT8));
  };
  if (op != "Constant") {
    if (node.num_inputs == 0 || node.inputs[0] < 0) return "no data input";
    for (size_t i = 0; i < node.num_inputs && i < tensors; ++i) {
      Info v = sdk::node_input(graph, node, i);
      if (!v) continue;
      if (wrong_type(v)) return std::string("input of type ") + sdk::dtype_name(v->dtype);
      if (v->rank < 0 || v->rank > 12) return "input rank unknown or above 12";
      for (int32_t d = 0; d < v->rank; ++d)
        if (v->dims[d] == 0) return "empty tensor";
      if (data_dependent_shape(v)) return "input shape depends on data";
    }
  }
  for (size_t i = 0; i < node.num_outputs && op != "Constant"; ++i) {
    Info v = sdk::node_output(graph, node, i);
    if (!v) continue;
    if (wrong_type(v)) return std::string("output of type ") + sdk::dtype_name(v->dtype);
    if (v->rank < 0 || v->rank > 12) return "output rank unknown or above 12";
    for (int32_t d = 0; d < v->rank; ++d)
      if (v->dims[d] == 0) return "empty tensor";
    if (data_dependent_shape(v)) return "output shape depends on data";
  }
  return check_op(graph, node);
}

}  // namespace loom::onednn
