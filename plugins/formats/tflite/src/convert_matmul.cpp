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
  const int64_t k = w.shape[1];
  if (x.rank() < 1 || k < 1) c.invalid("empty input or weights");
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
