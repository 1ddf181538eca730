// Pooling -> MaxPool / AveragePool / GlobalMaxPool / GlobalAveragePool.
#include "conversion.hpp"

namespace loom::ncnnfmt {

void convert_pooling(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  int type = p.get_int(0, 0);
  if (type != 0 && type != 1) layer_error(layer, "pooling_type must be 0 (max) or 1 (average)");
  bool global = p.get_int(4, 0) != 0;
  bool adaptive = p.get_int(7, 0) != 0;
  if (adaptive) {
    int64_t out_w = p.get_int(8, 0), out_h = p.get_int(18, static_cast<int32_t>(out_w));
    if (out_w != 1 || out_h != 1)
      layer_unsupported(layer, "adaptive pooling to a size other than 1x1 is not supported");
    global = true;
  }
  if (ctx.rank(layer.bottoms[0], layer.name) != 3)
    layer_unsupported(layer, "only 3-D (c,h,w) inputs are supported");
  const Shape& in = ctx.shape(layer.bottoms[0]);

  if (global) {
    // ncnn's global pooling yields a 1-D blob of c values (adaptive 1x1 keeps c,1,1).
    std::string pooled = adaptive ? layer.tops[0] : ctx.temp(layer.name + "/pooled");
    ctx.node(type == 0 ? "GlobalMaxPool" : "GlobalAveragePool", layer.name, {layer.bottoms[0]},
             {pooled});
    if (adaptive) {
      ctx.set_shape(layer.tops[0], {1, in[1], 1, 1});
      return;
    }
    auto* f = ctx.node("Flatten", layer.name + "/flatten", {pooled}, {layer.tops[0]});
    ctx.attr(f, "axis", int64_t{1});
    ctx.set_shape(layer.tops[0], {1, in[1]});
    return;
  }

  int64_t kw = p.get_int(1, 0), kh = p.get_int(11, static_cast<int32_t>(kw));
  int64_t sw = p.get_int(2, 1), sh = p.get_int(12, static_cast<int32_t>(sw));
  int64_t pl = p.get_int(3, 0), pr = p.get_int(14, static_cast<int32_t>(pl));
  int64_t pt = p.get_int(13, static_cast<int32_t>(pl)),
          pb = p.get_int(15, static_cast<int32_t>(pt));
  int pad_mode = p.get_int(5, 0);
  if (kw <= 0 || kh <= 0 || sw <= 0 || sh <= 0 || kw > 4096 || kh > 4096)
    layer_error(layer, "kernel and stride must be positive (and kernel at most 4096)");
  if (pl < 0 || pr < 0 || pt < 0 || pb < 0 || pl >= kw || pr >= kw || pt >= kh || pb >= kh)
    layer_error(layer, "padding must be non-negative and smaller than the kernel");
  if (pad_mode < 0 || pad_mode > 3)
    layer_error(layer, "pad_mode must be 0 (full), 1 (valid), 2 (SAME_UPPER) or 3 (SAME_LOWER)");

  auto* n = ctx.node(type == 0 ? "MaxPool" : "AveragePool", layer.name, {layer.bottoms[0]},
                     {layer.tops[0]});
  ctx.attr(n, "kernel_shape", std::vector<int64_t>{kh, kw});
  ctx.attr(n, "strides", std::vector<int64_t>{sh, sw});
  if (type == 1) ctx.attr(n, "count_include_pad", int64_t{p.get_int(6, 0) != 0});
  int64_t oh = -1, ow = -1;
  if (pad_mode >= 2) {
    ctx.attr(n, "auto_pad", std::string(pad_mode == 2 ? "SAME_UPPER" : "SAME_LOWER"));
    if (in[2] >= 0) oh = (in[2] + sh - 1) / sh;
    if (in[3] >= 0) ow = (in[3] + sw - 1) / sw;
  } else {
    // pad_mode 0 ("full") pads the tail so the last window fits: ONNX's ceil_mode.
    ctx.attr(n, "pads", std::vector<int64_t>{pt, pl, pb, pr});
    bool ceil = pad_mode == 0;
    ctx.attr(n, "ceil_mode", int64_t{ceil});
    auto extent = [&](int64_t x, int64_t k, int64_t s, int64_t p0, int64_t p1) -> int64_t {
      if (x < 0 || x + p0 + p1 < k) return -1;
      int64_t span = x + p0 + p1 - k;
      return (ceil ? (span + s - 1) / s : span / s) + 1;
    };
    oh = extent(in[2], kh, sh, pt, pb);
    ow = extent(in[3], kw, sw, pl, pr);
  }
  ctx.set_shape(layer.tops[0], {1, in[1], oh, ow});
}

}  // namespace loom::ncnnfmt
