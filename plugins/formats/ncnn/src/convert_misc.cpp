// Input, MemoryData, Dropout, Softmax and Interp.
#include "conversion.hpp"

namespace loom::ncnnfmt {
namespace {

// Loom dims for ncnn's (w, h, d, c) params, where 0 means "absent": [1, c, d, h, w] trimmed to
// the given rank; `unknown` marks extents that are absent but implied by the rank.
Shape dims_from_whdc(int64_t w, int64_t h, int64_t d, int64_t c) {
  if (c > 0 && d > 0) return {1, c, d, h, w};
  if (c > 0) return {1, c, h, w};
  if (h > 0) return {1, h, w};
  if (w > 0) return {1, w};
  return {};
}

}  // namespace

void convert_input(Context& ctx, const Layer& layer) {
  if (!layer.bottoms.empty() || layer.tops.empty())
    layer_error(layer, "needs no input and an output");
  const ParamDict& p = layer.params;
  int64_t w = p.get_int(0, 0), h = p.get_int(1, 0), d = p.get_int(11, 0), c = p.get_int(2, 0);
  for (int64_t v : {w, h, d, c})
    if (v < 0 || v > (1 << 24)) layer_error(layer, "w, h, d and c must be in 0..16777216");
  Shape shape = dims_from_whdc(w, h, d, c);
  if (shape.empty()) {
    // No size given (the common case): an image-like c,h,w blob whose extents come with the data.
    shape = {1, -1, -1, -1};
  } else {
    for (size_t i = 1; i < shape.size(); ++i)
      if (shape[i] == 0) shape[i] = -1;
  }
  for (const std::string& top : layer.tops) {
    ctx.add_input(top, shape);
    ctx.set_shape(top, shape);
  }
}

void convert_memory_data(Context& ctx, const Layer& layer) {
  expect_io(layer, 0, 1);
  const ParamDict& p = layer.params;
  int64_t w = p.get_int(0, 0), h = p.get_int(1, 0), d = p.get_int(11, 0), c = p.get_int(2, 0);
  for (int64_t v : {w, h, d, c})
    if (v < 0 || v > (1 << 24)) layer_error(layer, "w, h, d and c must be in 0..16777216");
  Shape shape = dims_from_whdc(w, h, d, c);
  if (shape.empty()) shape = {1, 1};
  int64_t count = 1;
  for (size_t i = 1; i < shape.size(); ++i) {
    if (shape[i] <= 0) layer_error(layer, "an inner dimension is 0");
    if (count > (int64_t{1} << 40) / shape[i]) layer_error(layer, "is absurdly large");
    count *= shape[i];
  }
  int load_type = p.get_int(21, 1);
  if (load_type != 0 && load_type != 1) layer_unsupported(layer, "load_type must be 0 or 1");
  std::vector<float> data = ctx.weights().read(
      count, load_type == 0 ? BlobStorage::kTagged : BlobStorage::kRawFloat, layer.name + " data");
  ctx.add_constant(layer.tops[0], shape, data);
  ctx.set_shape(layer.tops[0], shape);
}

void convert_dropout(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  float scale = layer.params.get_float(0, 1.f);
  if (scale == 1.f)
    ctx.node("Identity", layer.name, layer.bottoms, layer.tops);
  else
    ctx.node("Mul", layer.name,
             {layer.bottoms[0], ctx.constant(layer.name + "/scale", {}, {scale})}, layer.tops);
  ctx.set_shape(layer.tops[0], ctx.shape(layer.bottoms[0]));
}

void convert_softmax(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  int64_t axis = layer.params.get_int(0, 0);
  if (axis != 0 && layer.params.get_int(1, 0) == 0)
    layer_unsupported(layer,
                      "the param predates ncnn's softmax axis fix (fixbug0 is 0); "
                      "regenerate it with a current ncnn converter");
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  if (axis < -rank || axis >= rank)
    layer_error(layer, "axis " + std::to_string(axis) + " is out of range");
  ctx.attr(ctx.node("Softmax", layer.name, layer.bottoms, layer.tops), "axis",
           int64_t{(axis < 0 ? axis + rank : axis) + 1});
  ctx.set_shape(layer.tops[0], ctx.shape(layer.bottoms[0]));
}

void convert_interp(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  int type = p.get_int(0, 0);
  float hs = p.get_float(1, 1.f), ws = p.get_float(2, 1.f);
  int64_t oh = p.get_int(3, 0), ow = p.get_int(4, 0);
  bool align_corner = p.get_int(6, 0) != 0;
  if (p.get_int(5, 0) != 0)
    layer_unsupported(layer, "a dynamic target size (second input) is not supported");
  if (type < 1 || type > 3)
    layer_error(layer, "resize_type must be 1 (nearest), 2 (bilinear) or 3 (bicubic)");
  if (ctx.rank(layer.bottoms[0], layer.name) != 3)
    layer_unsupported(layer, "only 3-D (c,h,w) inputs are supported");
  const Shape& in = ctx.shape(layer.bottoms[0]);
  std::string roi = ctx.constant(layer.name + "/roi", {0}, {});
  Shape out = in;
  std::vector<std::string> inputs = {layer.bottoms[0], roi};
  if (oh > 0 && ow > 0) {
    if (oh > (1 << 20) || ow > (1 << 20)) layer_error(layer, "the output size is absurdly large");
    // sizes = shape(x)[0:2] ++ [oh, ow]: the channel count may only be known at run time.
    std::string shape = ctx.temp(layer.name + "/shape"), lead = ctx.temp(layer.name + "/lead"),
                sizes = ctx.temp(layer.name + "/sizes");
    ctx.node("Shape", layer.name + "/shape", {layer.bottoms[0]}, {shape});
    ctx.node("Slice", layer.name + "/lead",
             {shape, ctx.constant_ints(layer.name + "/s", {0}),
              ctx.constant_ints(layer.name + "/e", {2}), ctx.constant_ints(layer.name + "/a", {0})},
             {lead});
    ctx.attr(ctx.node("Concat", layer.name + "/sizes",
                      {lead, ctx.constant_ints(layer.name + "/hw", {oh, ow})}, {sizes}),
             "axis", int64_t{0});
    inputs.push_back("");
    inputs.push_back(sizes);
    out[2] = oh;
    out[3] = ow;
  } else {
    if (!(hs > 0.f && ws > 0.f && hs < 65536.f && ws < 65536.f))
      layer_error(layer, "height_scale and width_scale must be positive");
    inputs.push_back(ctx.constant(layer.name + "/scales", {4}, {1.f, 1.f, hs, ws}));
    out[2] = in[2] < 0 ? -1 : static_cast<int64_t>(static_cast<float>(in[2]) * hs);
    out[3] = in[3] < 0 ? -1 : static_cast<int64_t>(static_cast<float>(in[3]) * ws);
  }
  auto* n = ctx.node("Resize", layer.name, inputs, layer.tops);
  if (type == 1) {
    ctx.attr(n, "mode", std::string("nearest"));
    ctx.attr(n, "coordinate_transformation_mode", std::string("asymmetric"));
    ctx.attr(n, "nearest_mode", std::string("floor"));
  } else {
    ctx.attr(n, "mode", std::string(type == 2 ? "linear" : "cubic"));
    ctx.attr(n, "coordinate_transformation_mode",
             std::string(align_corner ? "align_corners" : "half_pixel"));
    if (type == 3) ctx.attr(n, "cubic_coeff_a", -0.75f);
  }
  ctx.set_shape(layer.tops[0], out);
}

}  // namespace loom::ncnnfmt
