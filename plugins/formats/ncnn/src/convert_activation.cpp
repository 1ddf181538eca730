// Stand-alone activations: ReLU (with slope), Clip, Sigmoid, Swish, HardSwish, HardSigmoid,
// TanH, Mish, PReLU-free unary layers; the shape passes through unchanged.
#include <cmath>

#include "conversion.hpp"

namespace loom::ncnnfmt {

void convert_unary_activation(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  const std::string& t = layer.type;
  const std::string& in = layer.bottoms[0];
  const std::string& out = layer.tops[0];
  if (t == "ReLU")
    emit_activation(ctx, layer, 1, {p.get_float(0, 0.f)}, in, out);
  else if (t == "Clip")
    emit_activation(ctx, layer, 3, {p.get_float(0, -INFINITY), p.get_float(1, INFINITY)}, in, out);
  else if (t == "Sigmoid")
    emit_activation(ctx, layer, 4, {}, in, out);
  else if (t == "Mish")
    emit_activation(ctx, layer, 5, {}, in, out);
  else if (t == "HardSwish")
    emit_activation(ctx, layer, 6, {p.get_float(0, 0.2f), p.get_float(1, 0.5f)}, in, out);
  else if (t == "Swish")
    emit_activation(ctx, layer, 7, {}, in, out);
  else if (t == "HardSigmoid")
    emit_activation(ctx, layer, 8, {p.get_float(0, 0.2f), p.get_float(1, 0.5f)}, in, out);
  else if (t == "TanH")
    emit_activation(ctx, layer, 9, {}, in, out);
  else
    layer_unsupported(layer, "is not an activation");
  ctx.set_shape(out, ctx.shape(in));
}

}  // namespace loom::ncnnfmt
