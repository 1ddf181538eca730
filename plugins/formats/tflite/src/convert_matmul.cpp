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
  // Float input with 8-bit weights is TFLite's hybrid kernel, which quantizes the input at run
  // time; computing in float instead differs by up to the input's quantization error, so it
  // is refused rather than answered differently.
  if (x.dtype == LOOM_DTYPE_FLOAT32 && w.dtype != LOOM_DTYPE_FLOAT32)
    c.unsupported("hybrid FULLY_CONNECTED (float input, " + std::string(sdk::dtype_name(w.dtype)) +
                  " weights) is not supported");
  std::string a = c.float_value(x, Layout::kNative);
  if (x.rank() != 2) {  // TFLite flattens every leading dimension into the batch
    const std::string flat = c.fresh(x.name + "/2d");
    c.emit("Reshape", {a, c.constant_i64("fc_shape", {-1, k})}, {flat});
    a = flat;
  }
  std::vector<std::string> inputs = {a, c.float_value(w, Layout::kNative)};
  if (bias) inputs.push_back(c.float_value(*bias, Layout::kNative));
  if (y.rank() == 2) {
    const std::string out = c.float_output(y, Layout::kNative, activation);
    c.emit("Gemm", inputs, {out}, {Attr::Int("transB", 1)});
    c.finish_output(y, Layout::kNative, out, activation);
    return;
  }
  const std::string product = c.fresh(y.name + "/gemm");
  c.emit("Gemm", inputs, {product}, {Attr::Int("transB", 1)});
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
