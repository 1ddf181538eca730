// Element-wise ops: unary activations (one shader, the op a specialization constant) and binary
// arithmetic with numpy broadcasting (shapes coalesced on the host to at most 6 dims).
#include <cmath>
#include <limits>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

struct UnaryDef {
  const char* op_type;
  uint32_t code;  // shaders/activation.glsl
  float alpha, beta;
};

const float kInf = std::numeric_limits<float>::infinity();
const UnaryDef kUnary[] = {
    {"Relu", 1, 0, 0},
    {"Sigmoid", 2, 0, 0},
    {"Tanh", 3, 0, 0},
    {"Exp", 4, 0, 0},
    {"Log", 5, 0, 0},
    {"Sqrt", 6, 0, 0},
    {"Neg", 7, 0, 0},
    {"Abs", 8, 0, 0},
    {"Erf", 9, 0, 0},
    {"Clip", 10, -kInf, kInf},
    {"LeakyRelu", 11, 0.01f, 0},
    {"Elu", 12, 1.0f, 0},
    {"HardSigmoid", 13, 0.2f, 0.5f},
    {"HardSwish", 14, 0, 0},
    {"Reciprocal", 15, 0, 0},
    {"Floor", 16, 0, 0},
    {"Ceil", 17, 0, 0},
    {"Sin", 18, 0, 0},
    {"Cos", 19, 0, 0},
    {"Softplus", 20, 0, 0},
    {"Softsign", 21, 0, 0},
    {"Selu", 22, 1.67326319217681884765625f, 1.05070102214813232421875f},
    {"Round", 23, 0, 0},
    {"Sign", 24, 0, 0},
    {"Celu", 25, 1.0f, 0},
    {"ThresholdedRelu", 26, 1.0f, 0},
};

const UnaryDef* unary_def(const char* op_type) {
  for (const UnaryDef& d : kUnary)
    if (std::strcmp(d.op_type, op_type) == 0) return &d;
  return nullptr;
}

// Float data of a value known at compile time: a constant, or the output of a Constant node
// of the same graph (models exported by torch feed Clip's bounds that way).
std::optional<std::vector<float>> known_floats(const loom_graph_t& graph,
                                               const loom_value_info_t* v) {
  if (auto c = constant_floats(v)) return c;
  if (!v || v->dtype != LOOM_DTYPE_FLOAT32) return std::nullopt;
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    if (std::strcmp(node.op_type, "Constant") != 0 || node.num_outputs < 1 || node.outputs[0] < 0 ||
        graph.values[node.outputs[0]] != v)
      continue;
    sdk::Attributes a(node);
    if (const loom_value_info_t* t = a.get_tensor("value")) return constant_floats(t);
    if (a.has("value_float")) return std::vector<float>{a.get_float("value_float", 0)};
    return std::nullopt;
  }
  return std::nullopt;
}

// The epilogue of a unary node with its attributes and bounds; nullopt if a Clip bound is not
// known at compile time (then Clip runs as Max and Min with the bound tensors).
std::optional<Epilogue> unary_epilogue(const loom_graph_t& graph, const loom_node_t& node) {
  const UnaryDef* d = unary_def(node.op_type);
  if (!d) return std::nullopt;
  sdk::Attributes attrs(node);
  Epilogue e{d->code, d->alpha, d->beta};
  std::string op = node.op_type;
  if (op == "Clip") {
    if (attrs.has("min") || attrs.has("max")) {  // opset < 11
      e.alpha = attrs.get_float("min", -kInf);
      e.beta = attrs.get_float("max", kInf);
    }
    for (size_t i = 1; i <= 2; ++i) {
      const loom_value_info_t* v = sdk::node_input(graph, node, i);
      if (!v) continue;
      auto f = known_floats(graph, v);
      if (!f || f->size() != 1) return std::nullopt;
      (i == 1 ? e.alpha : e.beta) = (*f)[0];
    }
  } else if (op == "Selu") {
    e.alpha = attrs.get_float("alpha", d->alpha);
    e.beta = attrs.get_float("gamma", d->beta);
  } else {
    e.alpha = attrs.get_float("alpha", d->alpha);
    e.beta = attrs.get_float("beta", d->beta);
  }
  if (op == "Celu" && e.alpha == 0) return std::nullopt;
  return e;
}

std::string check_unary(const loom_graph_t& graph, const loom_node_t& node) {
  if (auto r = require_dtype(sdk::node_input(graph, node, 0), "input", {LOOM_DTYPE_FLOAT32});
      !r.empty())
    return r;
  if (std::string(node.op_type) == "Clip")
    for (size_t i = 1; i <= 2; ++i)
      if (const loom_value_info_t* v = sdk::node_input(graph, node, i)) {
        if (auto r = require_dtype(v, "Clip bound", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
        if (v->rank > 0 && sdk::element_count(v->rank, v->dims) != 1)
          return "Clip bounds must be scalars";
      }
  if (std::string(node.op_type) != "Clip" && !unary_epilogue(graph, node))
    return std::string(node.op_type) + " parameters are not supported";
  return "";
}

void build_binary_on(Builder& b, const char* op, const Loc& a, const std::vector<int64_t>& ad,
                     const Loc& bl, const std::vector<int64_t>& bd, const TensorInfo& y);

void build_unary(Builder& b, const loom_node_t& node) {
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  std::optional<Epilogue> e = unary_epilogue(b.graph(), node);
  if (!e) {  // Clip with bounds computed at run time: Max with the lower, Min with the upper
    Loc current = x.loc;
    for (size_t i = 1; i <= 2; ++i) {
      if (!b.has_input(node, i)) continue;
      const TensorInfo& bound = b.input(node, i);
      build_binary_on(b, i == 1 ? "Max" : "Min", current, x.dims, bound.loc, bound.dims, y);
      current = y.loc;
    }
    if (current.region == x.loc.region && current.offset == x.loc.offset &&
        current.value == x.loc.value)
      b.copy(x.loc, y.loc, y.loc.bytes);
    return;
  }
  b.dispatch_1d(
      "unary", {0, u32(y.elements(), "elements"), e->op, float_bits(e->alpha), float_bits(e->beta)},
      {x.loc, y.loc}, static_cast<uint64_t>(y.elements()));
}

// ---- binary -------------------------------------------------------------------------------

struct BinaryDef {
  const char* op_type;
  uint32_t code;
};
const BinaryDef kBinary[] = {{"Add", 0}, {"Sub", 1}, {"Mul", 2},   {"Div", 3}, {"Pow", 4},
                             {"Max", 5}, {"Min", 6}, {"PRelu", 7}, {"Sum", 0}};

uint32_t binary_code(const char* op_type) {
  for (const BinaryDef& d : kBinary)
    if (std::strcmp(d.op_type, op_type) == 0) return d.code;
  return UINT32_MAX;
}

// Output dims and both inputs' element strides, broadcast and coalesced: dims that are
// contiguous for both inputs merge, size-1 dims vanish. Empty optional when the shapes do not
// broadcast.
struct Broadcast {
  std::vector<int64_t> dims, sa, sb;
};
std::optional<Broadcast> broadcast(std::vector<int64_t> a, std::vector<int64_t> b,
                                   const std::vector<int64_t>& out) {
  size_t r = out.size();
  if (a.size() > r || b.size() > r) return std::nullopt;
  a.insert(a.begin(), r - a.size(), 1);
  b.insert(b.begin(), r - b.size(), 1);
  auto sa_full = strides_of(a), sb_full = strides_of(b);
  Broadcast raw;
  for (size_t i = 0; i < r; ++i) {
    if ((a[i] != out[i] && a[i] != 1) || (b[i] != out[i] && b[i] != 1)) return std::nullopt;
    if (out[i] == 1) continue;
    raw.dims.push_back(out[i]);
    raw.sa.push_back(a[i] == 1 ? 0 : sa_full[i]);
    raw.sb.push_back(b[i] == 1 ? 0 : sb_full[i]);
  }
  Broadcast c;
  for (size_t i = 0; i < raw.dims.size(); ++i) {
    if (!c.dims.empty() && c.sa.back() == raw.sa[i] * raw.dims[i] &&
        c.sb.back() == raw.sb[i] * raw.dims[i]) {
      c.dims.back() *= raw.dims[i];
      c.sa.back() = raw.sa[i];
      c.sb.back() = raw.sb[i];
      continue;
    }
    c.dims.push_back(raw.dims[i]);
    c.sa.push_back(raw.sa[i]);
    c.sb.push_back(raw.sb[i]);
  }
  return c;
}

std::vector<int64_t> dims_of(const loom_value_info_t* v) {
  return std::vector<int64_t>(v->dims, v->dims + v->rank);
}
bool static_shape(const loom_value_info_t* v) {
  if (!v || v->rank < 0) return false;
  for (int32_t i = 0; i < v->rank; ++i)
    if (v->dims[i] < 0) return false;
  return true;
}

std::string check_binary(const loom_graph_t& graph, const loom_node_t& node) {
  std::string op = node.op_type;
  if ((op == "Sum" || op == "Max" || op == "Min") && node.num_inputs != 2)
    return op + " with " + std::to_string(node.num_inputs) + " inputs runs on vulkan only with 2";
  const loom_value_info_t* a = sdk::node_input(graph, node, 0);
  const loom_value_info_t* bv = sdk::node_input(graph, node, 1);
  const loom_value_info_t* y = sdk::node_output(graph, node, 0);
  for (auto [v, role] : {std::pair{a, "input A"}, {bv, "input B"}, {y, "output"}})
    if (auto r = require_dtype(v, role, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (static_shape(a) && static_shape(bv) && static_shape(y)) {
    auto bc = broadcast(dims_of(a), dims_of(bv), dims_of(y));
    if (!bc) return "the input shapes do not broadcast to the output";
    if (bc->dims.size() > 6) return "the broadcast needs more than 6 dims";
  }
  return "";
}

void emit_binary(Builder& b, const char* op, const Loc& a, const std::vector<int64_t>& ad,
                 const Loc& bl, const std::vector<int64_t>& bd, const TensorInfo* y,
                 const Epilogue& epilogue) {
  auto bc = broadcast(ad, bd, y->dims);
  if (!bc || bc->dims.size() > 6)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              std::string("vulkan: ") + op + " broadcast not supported for these shapes");
  std::vector<uint32_t> spec = {0, u32(y->elements(), "elements"), binary_code(op)};
  size_t pad = 6 - bc->dims.size();
  for (size_t i = 0; i < 6; ++i) spec.push_back(i < pad ? 1 : u32(bc->dims[i - pad], "dim"));
  for (size_t i = 0; i < 6; ++i) spec.push_back(i < pad ? 0 : u32(bc->sa[i - pad], "stride"));
  for (size_t i = 0; i < 6; ++i) spec.push_back(i < pad ? 0 : u32(bc->sb[i - pad], "stride"));
  spec.push_back(epilogue.op);
  spec.push_back(float_bits(epilogue.alpha));
  spec.push_back(float_bits(epilogue.beta));
  b.dispatch_1d("binary", spec, {a, bl, y->loc}, static_cast<uint64_t>(y->elements()));
}

void build_binary_on(Builder& b, const char* op, const Loc& a, const std::vector<int64_t>& ad,
                     const Loc& bl, const std::vector<int64_t>& bd, const TensorInfo& y) {
  emit_binary(b, op, a, ad, bl, bd, &y, Epilogue{});
}

void build_binary(Builder& b, const loom_node_t& node) {
  const TensorInfo& a = b.input(node, 0);
  const TensorInfo& bt = b.input(node, 1);
  auto [epilogue, y] = b.fuse_activation(node);
  emit_binary(b, node.op_type, a.loc, a.dims, bt.loc, bt.dims, y, epilogue);
}

// Max / Min / Sum with one input are copies.
std::string check_variadic_one(const loom_graph_t& graph, const loom_node_t& node) {
  if (node.num_inputs == 2) return check_binary(graph, node);
  if (node.num_inputs != 1)
    return std::string(node.op_type) + " with " + std::to_string(node.num_inputs) +
           " inputs runs on vulkan only with 1 or 2";
  return require_dtype(sdk::node_input(graph, node, 0), "input", {LOOM_DTYPE_FLOAT32});
}
void build_variadic(Builder& b, const loom_node_t& node) {
  if (node.num_inputs == 2) return build_binary(b, node);
  const TensorInfo& x = b.input(node, 0);
  const TensorInfo& y = b.output(node, 0);
  b.copy(x.loc, y.loc, y.loc.bytes);
}

}  // namespace

std::optional<Epilogue> as_epilogue(const loom_graph_t& graph, const loom_node_t& node) {
  if (node.domain && *node.domain && std::strcmp(node.domain, "ai.onnx") != 0) return std::nullopt;
  const loom_value_info_t* x = sdk::node_input(graph, node, 0);
  if (!x || x->dtype != LOOM_DTYPE_FLOAT32) return std::nullopt;
  return unary_epilogue(graph, node);
}

void add_elementwise_ops(OpTable& t) {
  for (const UnaryDef& d : kUnary) t.add(d.op_type, {check_unary, build_unary});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "PRelu"})
    t.add(op, {check_binary, build_binary});
  for (const char* op : {"Sum", "Max", "Min"}) t.add(op, {check_variadic_one, build_variadic});
}

}  // namespace loom::vulkan
