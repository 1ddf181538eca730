// Convolution, ConvolutionDepthWise, Deconvolution, DeconvolutionDepthWise -> Conv /
// ConvTranspose (+ the fused activation as explicit nodes).
#include "conversion.hpp"

namespace loom::ncnnfmt {
namespace {

struct ConvParams {
  int64_t num_output, kernel_w, kernel_h, dilation_w, dilation_h, stride_w, stride_h;
  int64_t pad_left, pad_right, pad_top, pad_bottom;
  int64_t group, weight_size;
  bool bias;
};

ConvParams read_conv_params(const Layer& layer, bool depthwise) {
  const ParamDict& p = layer.params;
  ConvParams c{};
  c.num_output = p.get_int(0, 0);
  c.kernel_w = p.get_int(1, 0);
  c.kernel_h = p.get_int(11, static_cast<int32_t>(c.kernel_w));
  c.dilation_w = p.get_int(2, 1);
  c.dilation_h = p.get_int(12, static_cast<int32_t>(c.dilation_w));
  c.stride_w = p.get_int(3, 1);
  c.stride_h = p.get_int(13, static_cast<int32_t>(c.stride_w));
  c.pad_left = p.get_int(4, 0);
  c.pad_right = p.get_int(15, static_cast<int32_t>(c.pad_left));
  c.pad_top = p.get_int(14, static_cast<int32_t>(c.pad_left));
  c.pad_bottom = p.get_int(16, static_cast<int32_t>(c.pad_top));
  c.bias = p.get_int(5, 0) != 0;
  c.weight_size = p.get_int(6, 0);
  c.group = depthwise ? p.get_int(7, 1) : 1;
  if (c.num_output <= 0 || c.kernel_w <= 0 || c.kernel_h <= 0 || c.dilation_w <= 0 ||
      c.dilation_h <= 0 || c.stride_w <= 0 || c.stride_h <= 0 || c.group <= 0)
    layer_error(layer, "num_output, kernel, dilation, stride and group must be positive");
  if (c.num_output > (1 << 20) || c.kernel_w > 4096 || c.kernel_h > 4096 || c.group > (1 << 20))
    layer_error(layer, "num_output, kernel or group is absurdly large");
  if (c.weight_size <= 0) layer_error(layer, "weight_data_size (param 6) must be positive");
  if (c.num_output % c.group != 0)
    layer_error(layer, "num_output " + std::to_string(c.num_output) +
                           " is not divisible by group " + std::to_string(c.group));
  if (p.get_int(8, 0) != 0)
    layer_unsupported(layer, "int8 quantized convolution (int8_scale_term) is not supported");
  if (p.get_int(19, 0) != 0)
    layer_unsupported(layer,
                      "dynamic weights (a second input holding the kernel) are not supported");
  return c;
}

// Input channels per group, from the weight size ncnn stores.
int64_t input_channels_per_group(const Layer& layer, const ConvParams& c) {
  int64_t per_output = c.kernel_w * c.kernel_h * (c.num_output / c.group) * c.group;
  if (c.weight_size % per_output != 0)
    layer_error(layer, "weight_data_size " + std::to_string(c.weight_size) +
                           " does not match num_output x kernel (" + std::to_string(per_output) +
                           " per input channel)");
  return c.weight_size / per_output;
}

// Sets pads or auto_pad; ncnn marks SAME_UPPER with -233 and SAME_LOWER with -234.
void set_padding(Context& ctx, loom_node_builder_t* n, const Layer& layer, const ConvParams& c) {
  int64_t pads[4] = {c.pad_top, c.pad_left, c.pad_bottom, c.pad_right};
  bool same_upper = true, same_lower = true, explicit_pads = true;
  for (int64_t v : pads) {
    same_upper &= v == -233;
    same_lower &= v == -234;
    explicit_pads &= v >= 0 && v <= 65536;
  }
  if (same_upper)
    ctx.attr(n, "auto_pad", std::string("SAME_UPPER"));
  else if (same_lower)
    ctx.attr(n, "auto_pad", std::string("SAME_LOWER"));
  else if (explicit_pads)
    ctx.attr(n, "pads", std::vector<int64_t>{pads[0], pads[1], pads[2], pads[3]});
  else
    layer_error(layer,
                "padding values must be non-negative, or all -233 (SAME_UPPER) or -234 "
                "(SAME_LOWER)");
}

int64_t conv_extent(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  if (in < 0 || p0 < 0 || p1 < 0) return -1;
  int64_t span = in + p0 + p1 - d * (k - 1) - 1;
  return span < 0 ? -1 : span / s + 1;
}

void emit_conv_node(Context& ctx, const Layer& layer, const ConvParams& c, bool transpose,
                    const std::string& weight, const std::string& bias) {
  std::string conv_out = layer.params.get_int(9, 0) == 0 ? layer.tops[0] : ctx.temp(layer.name);
  std::vector<std::string> inputs = {layer.bottoms[0], weight};
  if (!bias.empty()) inputs.push_back(bias);
  auto* n = ctx.node(transpose ? "ConvTranspose" : "Conv", layer.name, inputs, {conv_out});
  ctx.attr(n, "kernel_shape", std::vector<int64_t>{c.kernel_h, c.kernel_w});
  ctx.attr(n, "strides", std::vector<int64_t>{c.stride_h, c.stride_w});
  ctx.attr(n, "dilations", std::vector<int64_t>{c.dilation_h, c.dilation_w});
  ctx.attr(n, "group", c.group);
  if (transpose) {
    int64_t out_pad_w = layer.params.get_int(18, 0),
            out_pad_h = layer.params.get_int(19, out_pad_w);
    if (out_pad_w < 0 || out_pad_h < 0 || out_pad_w >= c.stride_w || out_pad_h >= c.stride_h)
      layer_error(layer, "output_pad must be in [0, stride)");
    if (out_pad_w || out_pad_h)
      ctx.attr(n, "output_padding", std::vector<int64_t>{out_pad_h, out_pad_w});
    if (layer.params.get_int(20, 0) > 0 || layer.params.get_int(21, 0) > 0)
      layer_unsupported(layer, "an explicit output size (params 20/21) is not supported");
  }
  set_padding(ctx, n, layer, c);
  if (conv_out != layer.tops[0]) emit_fused_activation(ctx, layer, conv_out, layer.tops[0]);
}

}  // namespace

void convert_convolution(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  bool depthwise = layer.type == "ConvolutionDepthWise";
  ConvParams c = read_conv_params(layer, depthwise);
  if (layer.params.get_float(18, 0.f) != 0.f)
    layer_unsupported(layer, "a non-zero pad_value (param 18) is not supported");
  int64_t in_per_group = input_channels_per_group(layer, c);
  std::vector<float> w =
      ctx.weights().read(c.weight_size, BlobStorage::kTagged, layer.name + " weight");
  std::string weight =
      ctx.constant(layer.name + "/weight", {c.num_output, in_per_group, c.kernel_h, c.kernel_w}, w);
  std::string bias;
  if (c.bias)
    bias = ctx.constant(
        layer.name + "/bias", {c.num_output},
        ctx.weights().read(c.num_output, BlobStorage::kRawFloat, layer.name + " bias"));
  if (ctx.rank(layer.bottoms[0], layer.name) != 3)
    layer_unsupported(layer, "only 3-D (c,h,w) inputs are supported");
  const Shape& in = ctx.shape(layer.bottoms[0]);
  if (in[1] >= 0 && in[1] != in_per_group * c.group)
    layer_error(layer, "the input has " + std::to_string(in[1]) +
                           " channels but the weights expect " +
                           std::to_string(in_per_group * c.group));
  bool same = c.pad_left < 0;
  ctx.set_shape(
      layer.tops[0],
      {1, c.num_output,
       same ? -1
            : conv_extent(in[2], c.kernel_h, c.stride_h, c.dilation_h, c.pad_top, c.pad_bottom),
       same ? -1
            : conv_extent(in[3], c.kernel_w, c.stride_w, c.dilation_w, c.pad_left, c.pad_right)});
  emit_conv_node(ctx, layer, c, false, weight, bias);
}

void convert_deconvolution(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  bool depthwise = layer.type == "DeconvolutionDepthWise";
  ConvParams c = read_conv_params(layer, depthwise);
  if (c.pad_left < 0 || c.pad_right < 0 || c.pad_top < 0 || c.pad_bottom < 0)
    layer_unsupported(layer, "automatic (SAME) padding of deconvolution is not supported");
  int64_t in_per_group = input_channels_per_group(layer, c);
  int64_t out_per_group = c.num_output / c.group;
  std::vector<float> w =
      ctx.weights().read(c.weight_size, BlobStorage::kTagged, layer.name + " weight");
  // ncnn stores [group][out/group][in/group][kh][kw]; ConvTranspose wants
  // [group][in/group][out/group][kh][kw].
  std::vector<float> t(w.size());
  int64_t k = c.kernel_h * c.kernel_w;
  for (int64_t g = 0; g < c.group; ++g)
    for (int64_t o = 0; o < out_per_group; ++o)
      for (int64_t i = 0; i < in_per_group; ++i)
        for (int64_t x = 0; x < k; ++x)
          t[((g * in_per_group + i) * out_per_group + o) * k + x] =
              w[((g * out_per_group + o) * in_per_group + i) * k + x];
  std::string weight = ctx.constant(
      layer.name + "/weight", {c.group * in_per_group, out_per_group, c.kernel_h, c.kernel_w}, t);
  std::string bias;
  if (c.bias)
    bias = ctx.constant(
        layer.name + "/bias", {c.num_output},
        ctx.weights().read(c.num_output, BlobStorage::kRawFloat, layer.name + " bias"));
  if (ctx.rank(layer.bottoms[0], layer.name) != 3)
    layer_unsupported(layer, "only 3-D (c,h,w) inputs are supported");
  const Shape& in = ctx.shape(layer.bottoms[0]);
  auto extent = [&](int64_t n, int64_t kk, int64_t s, int64_t d, int64_t p0, int64_t p1,
                    int64_t op) {
    return n < 0 ? -1 : (n - 1) * s + d * (kk - 1) + 1 + op - p0 - p1;
  };
  int64_t opw = layer.params.get_int(18, 0),
          oph = layer.params.get_int(19, static_cast<int32_t>(opw));
  ctx.set_shape(
      layer.tops[0],
      {1, c.num_output,
       extent(in[2], c.kernel_h, c.stride_h, c.dilation_h, c.pad_top, c.pad_bottom, oph),
       extent(in[3], c.kernel_w, c.stride_w, c.dilation_w, c.pad_left, c.pad_right, opw)});
  emit_conv_node(ctx, layer, c, true, weight, bias);
}

}  // namespace loom::ncnnfmt
