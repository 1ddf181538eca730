// FULLY_CONNECTED (Gemm with the [N, K] weights transposed by the op, never copied) and
// BATCH_MATMUL (MatMul, adj_x/adj_y as transposes of the last two dimensions). Quantized
// variants compute in float between DequantizeLinear and QuantizeLinear; constant weights and
// int32 biases are dequantized once at load.
#include <loom/plugin.hpp>
#include <numeric>

#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

// Float input with int8 weights is TFLite's hybrid kernel: each input row is quantized at run
// time (symmetric, scale max|x| / 127, rounded half away from zero), multiplied with the int8
// weights in integers, and scaled back. A float product would differ by the input's
// quantization error, so the same steps are emitted; the integer products are exact in float
// (|q| <= 127 * 127 per term).
void check_hybrid(const Converter& c, const fb::FullyConnectedOptions* o, const TensorView& w,
                  const TensorView* bias) {
  if (w.dtype != LOOM_DTYPE_INT8 || !w.quantized || !w.is_constant())
    c.unsupported("hybrid FULLY_CONNECTED (float input) needs constant int8 weights, not " +
                  std::string(w.is_constant() ? "" : "non-constant ") + sdk::dtype_name(w.dtype));
  if (w.quant.per_channel())
    c.unsupported("hybrid FULLY_CONNECTED with per-channel weight scales is not supported");
  if (w.quant.zero_points[0] != 0)
    c.invalid("hybrid FULLY_CONNECTED weights must be symmetric (zero point 0)");
  if (o && o->asymmetric_quantize_inputs())
    c.unsupported("hybrid FULLY_CONNECTED with asymmetric_quantize_inputs is not supported");
  if (bias && bias->dtype != LOOM_DTYPE_FLOAT32)
    c.invalid("a hybrid FULLY_CONNECTED's bias must be float32");
}

void emit_hybrid(Converter& c, const std::string& a, const TensorView& w, const TensorView* bias,
                 const std::string& result) {
  const std::string base = c.output().name + "/hybrid";
  auto node = [&](const char* op, std::vector<std::string> inputs, std::vector<Attr> attrs = {}) {
    const std::string out = c.fresh(base);
    c.emit(op, inputs, {out}, attrs);
    return out;
  };
  auto scalar = [&](float v) { return c.constant_f32("hybrid_constant", {v}, {}); };
  const std::string range =
      node("ReduceMax", {node("Abs", {a})}, {Attr::Ints("axes", {1}), Attr::Int("keepdims", 1)});
  // TFLite multiplies by 127 / range; an all-zero row quantizes to zeros either way.
  const std::string inverse = node("Div", {scalar(127.f), node("Max", {range, scalar(1e-30f)})});
  const std::string scaled = node("Mul", {a, inverse});
  const std::string rounded =
      node("Mul", {node("Sign", {scaled}),
                   node("Floor", {node("Add", {node("Abs", {scaled}), scalar(0.5f)})})});
  const std::string q = node("Clip", {rounded, scalar(-127.f), scalar(127.f)});
  // The int8 weights' integer values as float, used transposed by Gemm.
  std::vector<float> ints(w.data.size());
  for (size_t i = 0; i < ints.size(); ++i)
    ints[i] = static_cast<float>(static_cast<int8_t>(w.data[i]));
  const std::string acc = node("Gemm", {q, c.constant_f32(w.name + "/int_values", ints, w.shape)},
                               {Attr::Int("transB", 1)});
  const std::string factor =
      node("Mul", {node("Div", {range, scalar(127.f)}), scalar(w.quant.scales[0])});
  if (!bias) {
    c.emit("Mul", {acc, factor}, {result});
    return;
  }
  c.emit("Add", {c.float_value(*bias, Layout::kNative), node("Mul", {acc, factor})}, {result});
}

void convert_fully_connected(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& w = c.input(1);
  const TensorView* bias = c.has_input(2) ? &c.input(2) : nullptr;
  const TensorView& y = c.output();
  const auto* o = options_of<fb::FullyConnectedOptions>(c);
  if (o && o->weights_format() != fb::FullyConnectedOptionsWeightsFormat::DEFAULT)
    c.unsupported("shuffled FULLY_CONNECTED weights");
  const int activation = o ? static_cast<int>(o->fused_activation_function()) : 0;
  if (w.rank() != 2) c.invalid("the weights must have rank 2 ([units, inputs])");
  const int64_t units = w.shape[0], k = w.shape[1];
  if (x.rank() < 1 || k < 1 || units < 1) c.invalid("empty input or weights");
  if (x.shape.back() >= 0 && x.rank() >= 1) {
    int64_t elements = 1;
    bool known = true;
    for (int64_t d : x.shape) {
      if (d < 0)
        known = false;
      else
        elements *= d;
    }
    if (known && elements % k != 0)
      c.invalid("the input's " + std::to_string(elements) +
                " elements do not split into rows of the weights' " + std::to_string(k) +
                " inputs");
  }
  if (y.rank() < 1 || y.shape.back() != units)
    c.invalid("the output's last dimension must be the weights' " + std::to_string(units) +
              " units");
  if (bias && (bias->rank() != 1 || bias->shape[0] != units))
    c.invalid("the bias must have shape [" + std::to_string(units) + "]");
  const bool hybrid = x.dtype == LOOM_DTYPE_FLOAT32 && w.dtype != LOOM_DTYPE_FLOAT32;
  if (hybrid) check_hybrid(c, o, w, bias);
  std::string a = c.float_value(x, Layout::kNative);
  if (x.rank() != 2) {  // TFLite flattens every leading dimension into the batch
    const std::string flat = c.fresh(x.name + "/2d");
    c.emit("Reshape", {a, c.constant_i64("fc_shape", {-1, k})}, {flat});
    a = flat;
  }
  const bool direct = y.rank() == 2;
  const std::string product =
      direct ? c.float_output(y, Layout::kNative, activation) : c.fresh(y.name + "/gemm");
  if (hybrid) {
    emit_hybrid(c, a, w, bias, product);
  } else {
    std::vector<std::string> inputs = {a, c.float_value(w, Layout::kNative)};
    if (bias) inputs.push_back(c.float_value(*bias, Layout::kNative));
    c.emit("Gemm", inputs, {product}, {Attr::Int("transB", 1)});
  }
  if (direct) {
    c.finish_output(y, Layout::kNative, product, activation);
    return;
  }
  const std::string out = c.float_output(y, Layout::kNative, activation);
  c.emit("Reshape", {product, c.constant_i64("fc_out_shape", y.shape)}, {out});
  c.finish_output(y, Layout::kNative, out, activation);
}

// Float with 8-bit: TFLite's hybrid kernel, which quantizes the float side at run time.
bool x_hybrid(const TensorView& a, const TensorView& b) {
  return (a.dtype == LOOM_DTYPE_FLOAT32) != (b.dtype == LOOM_DTYPE_FLOAT32);
}

// `t` as float with its last two dimensions swapped when `adjoint`.
std::string matmul_operand(Converter& c, const TensorView& t, bool adjoint) {
  if (t.rank() < 2) c.invalid("BATCH_MATMUL operands need rank >= 2");
  if (!adjoint) return c.float_value(t, Layout::kNative);
  std::vector<int64_t> perm(t.rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return c.permuted(t, perm, true);
}

void convert_batch_matmul(Converter& c) {
  const TensorView& a = c.input(0);
  const TensorView& b = c.input(1);
  const TensorView& y = c.output();
  const auto* o = options_of<fb::BatchMatMulOptions>(c);
  if (a.rank() < 2 || b.rank() < 2) c.invalid("BATCH_MATMUL operands need rank >= 2");
  const bool adj_x = o && o->adj_x(), adj_y = o && o->adj_y();
  const int64_t inner_a = adj_x ? a.shape[a.rank() - 2] : a.shape.back();
  const int64_t inner_b = adj_y ? b.shape.back() : b.shape[b.rank() - 2];
  if (inner_a != inner_b)
    c.invalid("the operands' inner dimensions differ (" + std::to_string(inner_a) + " and " +
              std::to_string(inner_b) + ")");
  if (x_hybrid(a, b))
    c.unsupported("hybrid BATCH_MATMUL (float and 8-bit operands) is not supported");
  const std::string lhs = matmul_operand(c, a, o && o->adj_x());
  const std::string rhs = matmul_operand(c, b, o && o->adj_y());
  const std::string out = c.float_output(y, Layout::kNative);
  c.emit("MatMul", {lhs, rhs}, {out});
  c.finish_output(y, Layout::kNative, out);
}

}  // namespace

bool convert_matmul(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kFullyConnected:
      convert_fully_connected(c);
      return true;
    case BuiltinOp::kBatchMatmul:
      convert_batch_matmul(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
