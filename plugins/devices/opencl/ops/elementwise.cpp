// Elementwise ops: activations and other unary math, binary arithmetic with broadcasting,
// variadic Sum/Max/Min/Mean, comparisons, Where, Cast, and inference BatchNormalization (as a
// per-channel affine map with the statistics folded at compile time).
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "ops.hpp"

namespace loom::opencl {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- unary ----------------------------------------------------------------------------------

struct UnaryKernel {
  const char* kernel;
  const char* p0_attr;  // attribute feeding p0 (nullptr: none)
  float p0_default;
  const char* p1_attr;
  float p1_default;
};

const std::map<std::string, UnaryKernel>& unary_ops() {
  static const std::map<std::string, UnaryKernel> ops = {
      {"Relu", {"unary_relu", nullptr, 0, nullptr, 0}},
      {"Sigmoid", {"unary_sigmoid", nullptr, 0, nullptr, 0}},
      {"Tanh", {"unary_tanh", nullptr, 0, nullptr, 0}},
      {"Exp", {"unary_exp", nullptr, 0, nullptr, 0}},
      {"Log", {"unary_log", nullptr, 0, nullptr, 0}},
      {"Sqrt", {"unary_sqrt", nullptr, 0, nullptr, 0}},
      {"Abs", {"unary_abs", nullptr, 0, nullptr, 0}},
      {"Neg", {"unary_neg", nullptr, 0, nullptr, 0}},
      {"Erf", {"unary_erf", nullptr, 0, nullptr, 0}},
      {"Reciprocal", {"unary_reciprocal", nullptr, 0, nullptr, 0}},
      {"Floor", {"unary_floor", nullptr, 0, nullptr, 0}},
      {"Ceil", {"unary_ceil", nullptr, 0, nullptr, 0}},
      {"Round", {"unary_round", nullptr, 0, nullptr, 0}},
      {"Sin", {"unary_sin", nullptr, 0, nullptr, 0}},
      {"Cos", {"unary_cos", nullptr, 0, nullptr, 0}},
      {"Tan", {"unary_tan", nullptr, 0, nullptr, 0}},
      {"Atan", {"unary_atan", nullptr, 0, nullptr, 0}},
      {"Sign", {"unary_sign", nullptr, 0, nullptr, 0}},
      {"Softplus", {"unary_softplus", nullptr, 0, nullptr, 0}},
      {"Softsign", {"unary_softsign", nullptr, 0, nullptr, 0}},
      {"HardSwish", {"unary_hard_swish", nullptr, 0, nullptr, 0}},
      {"Mish", {"unary_mish", nullptr, 0, nullptr, 0}},
      {"LeakyRelu", {"unary_leaky_relu", "alpha", 0.01f, nullptr, 0}},
      {"Elu", {"unary_elu", "alpha", 1.0f, nullptr, 0}},
      {"Celu", {"unary_celu", "alpha", 1.0f, nullptr, 0}},
      {"ThresholdedRelu", {"unary_thresholded_relu", "alpha", 1.0f, nullptr, 0}},
      {"Selu",
       {"unary_selu", "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f}},
      {"HardSigmoid", {"unary_hard_sigmoid", "alpha", 0.2f, "beta", 0.5f}},
  };
  return ops;
}

std::string check_unary(const NodeInfo& node) {
  return expect_all_float(node);
}

void lower_unary(Executable& exe, const NodeInfo& node, const Fusion&) {
  const UnaryKernel& k = unary_ops().at(node.op());
  float p0 = k.p0_attr ? node.attrs.get_float(k.p0_attr, k.p0_default) : 0.0f;
  float p1 = k.p1_attr ? node.attrs.get_float(k.p1_attr, k.p1_default) : 0.0f;
  int64_t n = exe.value(node.output_id(0)).elements;
  KernelCall(exe, k.kernel, node.describe())
      .buffer(node.input_id(0))
      .buffer(node.output_id(0))
      .i32(n)
      .f32(p0)
      .f32(p1)
      .launch_1d(n);
}

// Clip's bounds when they are known at compile time: attributes before opset 11, constant
// scalar inputs (or Constant nodes of the graph) since. False when a bound is a tensor.
bool clip_bounds(const NodeInfo& node, float& lo, float& hi) {
  lo = -kInf;
  hi = kInf;
  if (node.node.opset < 11) {
    lo = node.attrs.get_float("min", -kInf);
    hi = node.attrs.get_float("max", kInf);
    return true;
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!node.input(i)) continue;
    auto values = node.folded_floats(i);
    if (!values || values->size() != 1) return false;
    (i == 1 ? lo : hi) = (*values)[0];
  }
  return true;
}

std::string check_clip(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  for (size_t i = 1; i <= 2; ++i) {
    const loom_value_info_t* v = node.input(i);
    if (v && v->rank > 0 && sdk::element_count(v->rank, v->dims) != 1)
      return "min/max must be scalars";
  }
  return "";
}

// Known bounds: one clamp with immediate values. Bounds computed at run time: the kernel
// reads them from device memory.
void lower_clip(Executable& exe, const NodeInfo& node, const Fusion&) {
  int64_t n = exe.value(node.output_id(0)).elements;
  float lo, hi;
  if (clip_bounds(node, lo, hi)) {
    KernelCall(exe, "unary_clip", node.describe())
        .buffer(node.input_id(0))
        .buffer(node.output_id(0))
        .i32(n)
        .f32(lo)
        .f32(hi)
        .launch_1d(n);
    return;
  }
  int x = node.input_id(0);
  int lo_id = node.input(1) ? node.input_id(1) : x, hi_id = node.input(2) ? node.input_id(2) : x;
  KernelCall(exe, "clip_tensor", node.describe())
      .buffer(x)
      .buffer(lo_id)
      .i32(node.input(1) ? 1 : 0)
      .buffer(hi_id)
      .i32(node.input(2) ? 1 : 0)
      .buffer(node.output_id(0))
      .i32(n)
      .launch_1d(n);
}

// ---- binary ---------------------------------------------------------------------------------

const std::map<std::string, std::string>& binary_ops() {
  static const std::map<std::string, std::string> ops = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"},     {"Div", "div"}, {"Pow", "pow"},
      {"Max", "max"}, {"Min", "min"}, {"PRelu", "prelu"}, {"Sum", "add"}, {"Mean", "add"}};
  return ops;
}

// Whether `in` broadcasts to `out` (numpy rules, right-aligned).
bool broadcasts_to(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in.size() > out.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t d = in[in.size() - 1 - i], o = out[out.size() - 1 - i];
    if (d != 1 && d != o) return false;
  }
  return true;
}

// Strides reading b at the coordinates of y. PRelu of old exporters gives a 1-D slope per
// channel (axis 1) that does not broadcast the numpy way; it is read along axis 1 then.
std::vector<int64_t> operand_strides(const std::vector<int64_t>& b, const std::vector<int64_t>& y,
                                     bool per_channel_ok, const std::string& label) {
  if (broadcasts_to(b, y)) return broadcast_strides(b, y);
  if (per_channel_ok && b.size() == 1 && y.size() >= 2 && b[0] == y[1]) {
    std::vector<int64_t> strides(y.size(), 0);
    strides[1] = 1;
    return strides;
  }
  sdk::fail(LOOM_ERROR_INVALID_MODEL, label + ": an operand does not broadcast to the output");
}

// One broadcasting binary kernel: y = a op b, where y has the output's shape.
void emit_binary(Executable& exe, const std::string& name, int a, int b, int y,
                 const std::string& label) {
  const Value& va = exe.value(a);
  const Value& vb = exe.value(b);
  const Value& vy = exe.value(y);
  int64_t n = vy.elements;
  std::vector<int64_t> sa = operand_strides(va.shape, vy.shape, false, label);
  std::vector<int64_t> sb = operand_strides(vb.shape, vy.shape, name == "prelu", label);
  if (va.shape == vy.shape && vb.shape == vy.shape) {  // same shapes: no index arithmetic
    std::string kernel = "binary_" + name + "_flat";
    KernelCall(exe, kernel.c_str(), label).buffer(a).buffer(b).buffer(y).i32(n).launch_1d(n);
    return;
  }
  std::string kernel = "binary_" + name + "_bcast";
  KernelCall(exe, kernel.c_str(), label)
      .buffer(a)
      .buffer(b)
      .buffer(y)
      .i32(n)
      .vec8(vy.shape, 1)
      .vec8(sa, 0)
      .vec8(sb, 0)
      .launch_1d(n);
}

std::string check_binary(const NodeInfo& node) {
  if (node.present_inputs() < 1) return "no inputs";
  return expect_all_float(node);
}

// Add/Sub/... and the variadic Sum/Max/Min/Mean, folded left into the output.
void lower_binary(Executable& exe, const NodeInfo& node, const Fusion&) {
  const std::string& name = binary_ops().at(node.op());
  int y = node.output_id(0);
  size_t count = node.present_inputs();
  if (count == 1) {
    copy_value(exe, node.input_id(0), y, node.describe());
    return;
  }
  emit_binary(exe, name, node.input_id(0), node.input_id(1), y, node.describe());
  for (size_t i = 2; i < count; ++i)
    emit_binary(exe, name, y, node.input_id(i), y, node.describe());
  if (node.op() == "Mean") {
    int64_t n = exe.value(y).elements;
    KernelCall(exe, "unary_scale", node.describe())
        .buffer(y)
        .buffer(y)
        .i32(n)
        .f32(1.0f / static_cast<float>(count))
        .f32(0.0f)
        .launch_1d(n);
  }
}

// ---- comparisons, Where ----------------------------------------------------------------------

const std::map<std::string, std::string>& compare_ops() {
  static const std::map<std::string, std::string> ops = {{"Equal", "equal"},
                                                         {"Less", "less"},
                                                         {"LessOrEqual", "less_equal"},
                                                         {"Greater", "greater"},
                                                         {"GreaterOrEqual", "greater_equal"}};
  return ops;
}

std::string check_compare(const NodeInfo& node) {
  for (size_t i = 0; i < 2; ++i)
    if (std::string r = expect_dtype(node, i, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  return "";
}

void lower_compare(Executable& exe, const NodeInfo& node, const Fusion&) {
  int a = node.input_id(0), b = node.input_id(1), y = node.output_id(0);
  const Value& vy = exe.value(y);
  std::string kernel = "compare_" + compare_ops().at(node.op());
  KernelCall(exe, kernel.c_str(), node.describe())
      .buffer(a)
      .buffer(b)
      .buffer(y)
      .i32(vy.elements)
      .vec8(vy.shape, 1)
      .vec8(broadcast_strides(exe.value(a).shape, vy.shape), 0)
      .vec8(broadcast_strides(exe.value(b).shape, vy.shape), 0)
      .launch_1d(vy.elements);
}

std::string check_where(const NodeInfo& node) {
  if (std::string r = expect_dtype(node, 0, {LOOM_DTYPE_BOOL}); !r.empty()) return r;
  const loom_value_info_t* a = node.input(1);
  if (a && a->dtype != LOOM_DTYPE_UNDEFINED && !size_suffix(sdk::dtype_size(a->dtype)))
    return std::string("Where of ") + sdk::dtype_name(a->dtype) + " is not supported";
  return "";
}

void lower_where(Executable& exe, const NodeInfo& node, const Fusion&) {
  int c = node.input_id(0), a = node.input_id(1), b = node.input_id(2), y = node.output_id(0);
  const Value& vy = exe.value(y);
  std::string kernel = std::string("where_") + size_suffix(vy.elem_size);
  KernelCall(exe, kernel.c_str(), node.describe())
      .buffer(c)
      .buffer(a)
      .buffer(b)
      .buffer(y)
      .i32(vy.elements)
      .vec8(vy.shape, 1)
      .vec8(broadcast_strides(exe.value(c).shape, vy.shape), 0)
      .vec8(broadcast_strides(exe.value(a).shape, vy.shape), 0)
      .vec8(broadcast_strides(exe.value(b).shape, vy.shape), 0)
      .launch_1d(vy.elements);
}

// ---- Cast -------------------------------------------------------------------------------------

const char* cast_name(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT32:
      return "f32";
    case LOOM_DTYPE_INT32:
      return "i32";
    case LOOM_DTYPE_INT64:
      return "i64";
    case LOOM_DTYPE_UINT8:
      return "u8";
    case LOOM_DTYPE_INT8:
      return "i8";
    case LOOM_DTYPE_BOOL:
      return "b8";
    default:
      return nullptr;
  }
}

std::string check_cast(const NodeInfo& node) {
  const loom_value_info_t* x = node.input(0);
  loom_dtype_t to = static_cast<loom_dtype_t>(node.attrs.get_int("to", 0));
  if (!cast_name(to)) return std::string("Cast to ") + sdk::dtype_name(to) + " is not supported";
  if (x && x->dtype != LOOM_DTYPE_UNDEFINED && !cast_name(x->dtype))
    return std::string("Cast from ") + sdk::dtype_name(x->dtype) + " is not supported";
  return "";
}

void lower_cast(Executable& exe, const NodeInfo& node, const Fusion&) {
  int x = node.input_id(0), y = node.output_id(0);
  loom_dtype_t from = exe.value(x).dtype, to = exe.value(y).dtype;
  if (!cast_name(from) || !cast_name(to))
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: " + node.describe() + ": unsupported types");
  if (from == to) {
    copy_value(exe, x, y, node.describe());
    return;
  }
  std::string kernel = std::string("cast_") + cast_name(from) + "_" + cast_name(to);
  int64_t n = exe.value(y).elements;
  KernelCall(exe, kernel.c_str(), node.describe()).buffer(x).buffer(y).i32(n).launch_1d(n);
}

// ---- BatchNormalization -------------------------------------------------------------------------

std::string check_batch_norm(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  if (node.attrs.get_int("training_mode", 0) != 0) return "training mode is not supported";
  if (node.present_outputs() != 1) return "the running statistics outputs are not supported";
  for (size_t i = 1; i <= 4; ++i)
    if (!node.constant_floats(i)) return "scale, bias, mean and variance must be constants";
  const loom_value_info_t* x = node.input(0);
  if (x && x->rank >= 0 && x->rank < 2) return "the input needs a channel axis (rank >= 2)";
  return "";
}

void lower_batch_norm(Executable& exe, const NodeInfo& node, const Fusion&) {
  int x = node.input_id(0), y = node.output_id(0);
  const Value& vx = exe.value(x);
  int64_t channels = vx.shape.at(1);
  std::vector<float> scale = *node.constant_floats(1), bias = *node.constant_floats(2);
  std::vector<float> mean = *node.constant_floats(3), var = *node.constant_floats(4);
  float eps = node.attrs.get_float("epsilon", 1e-5f);
  if (static_cast<int64_t>(scale.size()) != channels || bias.size() != scale.size() ||
      mean.size() != scale.size() || var.size() != scale.size())
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              node.describe() + ": parameters must hold " + std::to_string(channels) + " values");
  std::vector<float> a(scale.size()), b(scale.size());
  for (size_t c = 0; c < scale.size(); ++c) {
    a[c] = scale[c] / std::sqrt(var[c] + eps);
    b[c] = bias[c] - mean[c] * a[c];
  }
  int sa = exe.add_float_constant({channels}, a), sb = exe.add_float_constant({channels}, b);
  int64_t inner = vx.elements / std::max<int64_t>(1, vx.shape[0] * channels);
  KernelCall(exe, "channel_affine", node.describe())
      .buffer(x)
      .buffer(sa)
      .buffer(sb)
      .buffer(y)
      .i32(vx.elements)
      .i32(channels)
      .i32(std::max<int64_t>(inner, 1))
      .launch_1d(vx.elements);
}

}  // namespace

bool activation_bounds(const NodeInfo& node, float& lo, float& hi) {
  const loom_value_info_t* y = node.output(0);
  if (!y || y->dtype != LOOM_DTYPE_FLOAT32) return false;
  if (node.op() == "Relu") {
    lo = 0.0f;
    hi = kInf;
    return true;
  }
  if (node.op() == "Clip") return clip_bounds(node, lo, hi);
  return false;
}

void add_elementwise_ops(OpTable& table) {
  for (const auto& [op, kernel] : unary_ops()) table.add(op.c_str(), {check_unary, lower_unary});
  table.add("Clip", {check_clip, lower_clip});
  for (const auto& [op, name] : binary_ops()) table.add(op.c_str(), {check_binary, lower_binary});
  for (const auto& [op, name] : compare_ops())
    table.add(op.c_str(), {check_compare, lower_compare});
  table.add("Where", {check_where, lower_where});
  table.add("Cast", {check_cast, lower_cast});
  table.add("BatchNormalization", {check_batch_norm, lower_batch_norm});
}

}  // namespace loom::opencl
