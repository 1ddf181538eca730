// InnerProduct -> Flatten + Gemm (+ the fused activation). A 2-D input whose width is
// num_input is multiplied row by row (MatMul), as ncnn does; any other input is flattened.
#include "conversion.hpp"

namespace loom::ncnnfmt {

void convert_inner_product(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  int64_t num_output = p.get_int(0, 0);
  bool bias_term = p.get_int(1, 0) != 0;
  int64_t weight_size = p.get_int(2, 0);
  if (num_output <= 0 || num_output > (1 << 24) || weight_size <= 0 || weight_size % num_output)
    layer_error(layer,
                "num_output (param 0) and weight_data_size (param 2) must be positive and "
                "weight_data_size a multiple of num_output");
  if (p.get_int(8, 0) != 0)
    layer_unsupported(layer, "int8 quantized inner product (int8_scale_term) is not supported");
  int64_t num_input = weight_size / num_output;
  std::vector<float> w =
      ctx.weights().read(weight_size, BlobStorage::kTagged, layer.name + " weight");
  std::vector<float> b;
  if (bias_term) b = ctx.weights().read(num_output, BlobStorage::kRawFloat, layer.name + " bias");

  int rank = ctx.rank(layer.bottoms[0], layer.name);
  const Shape& in = ctx.shape(layer.bottoms[0]);
  std::string out = p.get_int(9, 0) == 0 ? layer.tops[0] : ctx.temp(layer.name);
  if (rank == 2 && in[2] == num_input) {
    // Row-wise: [1,h,num_input] x [num_input,num_output] (+ bias).
    std::vector<float> wt(w.size());
    for (int64_t o = 0; o < num_output; ++o)
      for (int64_t i = 0; i < num_input; ++i) wt[i * num_output + o] = w[o * num_input + i];
    std::string weight = ctx.constant(layer.name + "/weight", {num_input, num_output}, wt);
    std::string product = bias_term ? ctx.temp(layer.name + "/matmul") : out;
    ctx.node("MatMul", layer.name, {layer.bottoms[0], weight}, {product});
    if (bias_term)
      ctx.node("Add", layer.name + "/bias",
               {product, ctx.constant(layer.name + "/bias", {num_output}, b)}, {out});
    ctx.set_shape(layer.tops[0], {1, in[1], num_output});
  } else {
    int64_t known = 1;
    for (size_t i = 1; i < in.size(); ++i) known = in[i] < 0 || known < 0 ? -1 : known * in[i];
    if (known >= 0 && known != num_input)
      layer_error(layer, "the input has " + std::to_string(known) +
                             " elements but the weights expect " + std::to_string(num_input));
    std::string flat = ctx.temp(layer.name + "/flat");
    ctx.attr(ctx.node("Flatten", layer.name + "/flatten", {layer.bottoms[0]}, {flat}), "axis",
             int64_t{1});
    std::vector<std::string> inputs = {
        flat, ctx.constant(layer.name + "/weight", {num_output, num_input}, w)};
    if (bias_term) inputs.push_back(ctx.constant(layer.name + "/bias", {num_output}, b));
    ctx.attr(ctx.node("Gemm", layer.name, inputs, {out}), "transB", int64_t{1});
    ctx.set_shape(layer.tops[0], {1, num_output});
  }
  if (out != layer.tops[0]) emit_fused_activation(ctx, layer, out, layer.tops[0]);
}

}  // namespace loom::ncnnfmt
