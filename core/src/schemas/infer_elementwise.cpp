// Element-wise ops: unary math and activations (output = input), numpy-broadcast binary and
// variadic arithmetic, comparisons and logic (bool outputs), Where, PRelu, Dropout.
#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::NodeView;

// Broadcasts every present input and gives the result `dtype`.
void broadcast_all(NodeView& v, size_t first, loom_dtype_t dtype) {
  std::optional<Dims> out = Dims{};
  for (size_t i = first; i < v.num_inputs(); ++i) {
    if (!v.has_input(i)) continue;
    std::optional<Dims> s = v.shape(i);
    if (!s) {
      out.reset();
      continue;
    }
    if (out) out = infer::broadcast(v, *out, *s);
  }
  // Even with an input of unknown rank, keep checking the known ones for a mismatch.
  if (!out) {
    Dims known;
    for (size_t i = first; i < v.num_inputs(); ++i)
      if (auto s = v.shape(i)) known = infer::broadcast(v, known, *s);
  }
  v.set_output(0, dtype, out);
}

// Arithmetic with numpy broadcasting; the result has the type of the first input.
void arithmetic(NodeView& v) {
  broadcast_all(v, 0, v.dtype(0));
}

// Comparisons and logic: broadcast, bool result.
void boolean_result(NodeView& v) {
  broadcast_all(v, 0, LOOM_DTYPE_BOOL);
}

// Opsets before 7: B is broadcast into A (attribute broadcast=1) or must equal it, so the
// output always has A's shape.
void legacy_binary(NodeView& v) {
  std::optional<Dims> a = v.shape(0), b = v.shape(1);
  if (a && b && !v.attrs().get_int("broadcast", 0)) {
    if (a->size() != b->size())
      v.fail("shapes " + infer::dims_to_string(*a) + " and " + infer::dims_to_string(*b) +
             " differ and attribute broadcast is not set");
    for (size_t k = 0; k < a->size(); ++k)
      (*a)[k] = infer::merge_dim(v, (*a)[k], (*b)[k], "input extents");
  }
  v.set_output(0, v.dtype(0), a);
}

void legacy_boolean(NodeView& v) {
  legacy_binary(v);
  v.set_output(0, LOOM_DTYPE_BOOL, v.shape(0));
}

// IsNaN, IsInf: same shape, bool.
void bool_same_shape(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_BOOL, v.shape(0));
}

// Where(condition, X, Y): three-way broadcast, type of X.
void where(NodeView& v) {
  broadcast_all(v, 0, v.dtype(1) ? v.dtype(1) : v.dtype(2));
}

// PRelu: slope broadcasts unidirectionally into X (opset 7+), so Y has X's shape; a slope
// that does not broadcast is an error.
void prelu(NodeView& v) {
  std::optional<Dims> x = v.shape(0), slope = v.shape(1);
  if (x && slope) infer::check_broadcasts_to(v, *slope, *x, "slope");
  v.propagate(0, 0);
}

// Dropout-1..7: optional mask of the input's type; Dropout-10+: bool mask.
void dropout_typed_mask(NodeView& v) {
  v.propagate(0, 0);
  v.set_output(1, v.dtype(0), v.shape(0));
}
void dropout_bool_mask(NodeView& v) {
  v.propagate(0, 0);
  v.set_output(1, LOOM_DTYPE_BOOL, v.shape(0));
}

constexpr auto kSame = adapt<infer::same_as_input>;
constexpr auto kArith = adapt<arithmetic>;
constexpr auto kBool = adapt<boolean_result>;
constexpr auto kLegacy = adapt<legacy_binary>;
constexpr auto kLegacyBool = adapt<legacy_boolean>;

const InferEntry kEntries[] = {
    // Output = input: unary math, activations, Identity and friends.
    {"", "Abs", kSame},
    {"", "Acos", kSame},
    {"", "Acosh", kSame},
    {"", "Asin", kSame},
    {"", "Asinh", kSame},
    {"", "Atan", kSame},
    {"", "Atanh", kSame},
    {"", "Ceil", kSame},
    {"", "Celu", kSame},
    {"", "Clip", kSame},
    {"", "Cos", kSame},
    {"", "Cosh", kSame},
    {"", "Elu", kSame},
    {"", "Erf", kSame},
    {"", "Exp", kSame},
    {"", "Floor", kSame},
    {"", "HardSigmoid", kSame},
    {"", "HardSwish", kSame},
    {"", "Identity", kSame},
    {"", "LeakyRelu", kSame},
    {"", "Log", kSame},
    {"", "Mish", kSame},
    {"", "Neg", kSame},
    {"", "Not", kSame},
    {"", "BitwiseNot", kSame},
    {"", "Reciprocal", kSame},
    {"", "Relu", kSame},
    {"", "Round", kSame},
    {"", "Selu", kSame},
    {"", "Shrink", kSame},
    {"", "Sigmoid", kSame},
    {"", "Sign", kSame},
    {"", "Sin", kSame},
    {"", "Sinh", kSame},
    {"", "Softplus", kSame},
    {"", "Softsign", kSame},
    {"", "Sqrt", kSame},
    {"", "Tan", kSame},
    {"", "Tanh", kSame},
    {"", "ThresholdedRelu", kSame},
    {"", "IsNaN", adapt<bool_same_shape>},
    {"", "IsInf", adapt<bool_same_shape>},
    {"", "PRelu", adapt<prelu>, 7},
    {"", "PRelu", kSame, 1, 6},
    {"", "Dropout", adapt<dropout_typed_mask>, 1, 9},
    {"", "Dropout", adapt<dropout_bool_mask>, 10},
    // Binary arithmetic: legacy broadcast before opset 7, numpy broadcast after.
    {"", "Add", kLegacy, 1, 6},
    {"", "Add", kArith, 7},
    {"", "Sub", kLegacy, 1, 6},
    {"", "Sub", kArith, 7},
    {"", "Mul", kLegacy, 1, 6},
    {"", "Mul", kArith, 7},
    {"", "Div", kLegacy, 1, 6},
    {"", "Div", kArith, 7},
    {"", "Pow", kLegacy, 1, 6},
    {"", "Pow", kArith, 7},
    {"", "Mod", kArith},
    {"", "BitShift", kArith},
    {"", "BitwiseAnd", kArith},
    {"", "BitwiseOr", kArith},
    {"", "BitwiseXor", kArith},
    // Variadic (equal shapes before opset 8, which broadcasting also accepts).
    {"", "Sum", kArith},
    {"", "Mean", kArith},
    {"", "Max", kArith},
    {"", "Min", kArith},
    // Logic and comparisons.
    {"", "And", kLegacyBool, 1, 6},
    {"", "And", kBool, 7},
    {"", "Or", kLegacyBool, 1, 6},
    {"", "Or", kBool, 7},
    {"", "Xor", kLegacyBool, 1, 6},
    {"", "Xor", kBool, 7},
    {"", "Equal", kLegacyBool, 1, 6},
    {"", "Equal", kBool, 7},
    {"", "Greater", kLegacyBool, 1, 6},
    {"", "Greater", kBool, 7},
    {"", "Less", kLegacyBool, 1, 6},
    {"", "Less", kBool, 7},
    {"", "GreaterOrEqual", kBool},
    {"", "LessOrEqual", kBool},
    {"", "Where", adapt<where>},
};

}  // namespace

std::span<const InferEntry> elementwise_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
