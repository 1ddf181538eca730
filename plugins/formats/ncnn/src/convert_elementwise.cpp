// BinaryOp and Eltwise -> Add/Sub/Mul/Div/Max/Min/Pow/Sum.
//
// ncnn broadcasts a lower-rank operand against the OUTER dimensions of the other (a 1-D blob of
// c values against a c,h,w blob is per channel), unlike numpy, which aligns the inner ones. So
// the lower-rank operand gets trailing unit dimensions before an ONNX (numpy-style) op.
#include <algorithm>

#include "conversion.hpp"

namespace loom::ncnnfmt {
namespace {

std::string align_rank(Context& ctx, const Layer& layer, const std::string& blob, int rank,
                       int target) {
  if (rank >= target) return blob;
  std::vector<int64_t> axes;
  for (int a = rank + 1; a <= target; ++a) axes.push_back(a);
  std::string out = ctx.temp(layer.name + "/unsqueeze");
  ctx.node("Unsqueeze", layer.name + "/unsqueeze_" + blob,
           {blob, ctx.constant_ints(layer.name + "/axes", axes)}, {out});
  return out;
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out = a.size() >= b.size() ? a : b;
  const Shape& other = a.size() >= b.size() ? b : a;
  for (size_t i = 0; i < other.size(); ++i) {
    if (out[i] == 1)
      out[i] = other[i];
    else if (out[i] >= 0 && other[i] >= 0 && other[i] != 1 && other[i] != out[i])
      out[i] = -1;
  }
  return out;
}

}  // namespace

void convert_binary_op(Context& ctx, const Layer& layer) {
  const ParamDict& p = layer.params;
  int op = p.get_int(0, 0);
  bool with_scalar = p.get_int(1, 0) != 0;
  static const char* const kOps[] = {"Add", "Sub", "Mul", "Div", "Max",
                                     "Min", "Pow", "Sub", "Div", "Pow"};
  if (op < 0 || op > 9)
    layer_unsupported(layer, "op_type " + std::to_string(op) + " is not supported (known: 0-9)");
  bool reversed = op >= 7;  // RSUB, RDIV, RPOW: b op a
  std::string a, b;
  Shape out_shape;
  if (with_scalar) {
    expect_io(layer, 1, 1);
    a = layer.bottoms[0];
    b = ctx.constant(layer.name + "/scalar", {}, {p.get_float(2, 0.f)});
    out_shape = ctx.shape(a);
  } else {
    expect_io(layer, 2, 1);
    int ra = ctx.rank(layer.bottoms[0], layer.name), rb = ctx.rank(layer.bottoms[1], layer.name);
    a = align_rank(ctx, layer, layer.bottoms[0], ra, rb);
    b = align_rank(ctx, layer, layer.bottoms[1], rb, ra);
    Shape sa = ctx.shape(layer.bottoms[0]), sb = ctx.shape(layer.bottoms[1]);
    sa.resize(std::max(sa.size(), sb.size()), 1);
    sb.resize(sa.size(), 1);
    out_shape = broadcast_shape(sa, sb);
  }
  if (reversed) std::swap(a, b);
  ctx.node(kOps[op], layer.name, {a, b}, {layer.tops[0]});
  ctx.set_shape(layer.tops[0], out_shape);
}

void convert_eltwise(Context& ctx, const Layer& layer) {
  if (layer.bottoms.size() < 2 || layer.tops.size() != 1)
    layer_error(layer, "needs at least two inputs and one output");
  const ParamDict& p = layer.params;
  int op = p.get_int(0, 0);  // ncnn's default is PROD
  std::vector<float> coeffs = p.get_floats(1);
  if (!coeffs.empty() && coeffs.size() != layer.bottoms.size())
    layer_error(layer, "has " + std::to_string(coeffs.size()) + " coefficients for " +
                           std::to_string(layer.bottoms.size()) + " inputs");
  std::vector<std::string> inputs = layer.bottoms;
  if (op == 1 && !coeffs.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (coeffs[i] == 1.f) continue;
      std::string scaled = ctx.temp(layer.name + "/scaled");
      ctx.node("Mul", layer.name + "/coeff" + std::to_string(i),
               {inputs[i], ctx.constant(layer.name + "/coeff", {}, {coeffs[i]})}, {scaled});
      inputs[i] = scaled;
    }
  }
  if (op == 0) {
    std::string acc = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) {
      std::string out = i + 1 == inputs.size() ? layer.tops[0] : ctx.temp(layer.name + "/prod");
      ctx.node("Mul", layer.name + (i + 1 == inputs.size() ? "" : "/mul" + std::to_string(i)),
               {acc, inputs[i]}, {out});
      acc = out;
    }
  } else if (op == 1 || op == 2) {
    ctx.node(op == 1 ? "Sum" : "Max", layer.name, inputs, {layer.tops[0]});
  } else {
    layer_unsupported(layer,
                      "op_type " + std::to_string(op) + " is not supported (0 prod, 1 sum, 2 max)");
  }
  ctx.set_shape(layer.tops[0], ctx.shape(layer.bottoms[0]));
}

}  // namespace loom::ncnnfmt
