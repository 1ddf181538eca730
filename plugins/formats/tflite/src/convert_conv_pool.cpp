// CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D, MAX_POOL_2D, RESIZE_BILINEAR,
// RESIZE_NEAREST_NEIGHBOR: the layout-sensitive image operators, emitted in NCHW.
#include <algorithm>
#include <cmath>
#include <loom/plugin.hpp>

#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

struct Window {
  int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h = 1, dilation_w = 1;
  fb::Padding padding;
};

// ONNX pads [top, left, bottom, right] for TFLite's SAME/VALID: SAME puts the odd pixel at the
// end, like TensorFlow.
std::vector<int64_t> onnx_pads(const Converter& c, const TensorView& x, const Window& w) {
  if (w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 || w.dilation_w < 1 || w.kernel_h < 1 ||
      w.kernel_w < 1)
    c.invalid("strides, dilations and window sizes must be positive");
  if (w.padding == fb::Padding::VALID) return {0, 0, 0, 0};
  auto total = [](int64_t in, int64_t k, int64_t stride, int64_t dilation) {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t effective = (k - 1) * dilation + 1;
    return std::max<int64_t>((out - 1) * stride + effective - in, 0);
  };
  const int64_t th = total(x.shape[1], w.kernel_h, w.stride_h, w.dilation_h);
  const int64_t tw = total(x.shape[2], w.kernel_w, w.stride_w, w.dilation_w);
  return {th / 2, tw / 2, th - th / 2, tw - tw / 2};
}

std::vector<Attr> window_attrs(const Converter& c, const TensorView& x, const Window& w,
                               bool dilations) {
  std::vector<Attr> attrs = {Attr::Ints("kernel_shape", {w.kernel_h, w.kernel_w}),
                             Attr::Ints("strides", {w.stride_h, w.stride_w}),
                             Attr::Ints("pads", onnx_pads(c, x, w))};
  if (dilations) attrs.push_back(Attr::Ints("dilations", {w.dilation_h, w.dilation_w}));
  return attrs;
}

void require_rank4(const Converter& c, const TensorView& t, const char* what) {
  if (t.rank() != 4)
    c.invalid(std::string(what) + " '" + t.name + "' must have rank 4 (NHWC), not " +
              std::to_string(t.rank()));
}

bool is_8bit(loom_dtype_t t) {
  return t == LOOM_DTYPE_INT8 || t == LOOM_DTYPE_UINT8;
}

// The quantized clip bounds of a fused activation on a quantized output, or false when the
// activation has no integer form.
bool quantized_bounds(const TensorView& y, int activation, int64_t& lo, int64_t& hi) {
  const int64_t qmin = y.dtype == LOOM_DTYPE_INT8 ? -128 : 0;
  const int64_t qmax = y.dtype == LOOM_DTYPE_INT8 ? 127 : 255;
  const float scale = y.quant.scales[0];
  const int64_t zp = y.quant.zero_points[0];
  auto q = [&](float v) { return zp + static_cast<int64_t>(std::nearbyint(v / scale)); };
  lo = qmin;
  hi = qmax;
  switch (activation) {
    case 0:
      return true;
    case 1:
      lo = std::max(qmin, q(0.f));
      return true;
    case 2:
      lo = std::max(qmin, q(-1.f));
      hi = std::min(qmax, q(1.f));
      return true;
    case 3:
      lo = std::max(qmin, q(0.f));
      hi = std::min(qmax, q(6.f));
      return true;
    default:
      return false;
  }
}

// QLinearConv for an 8-bit convolution with per-tensor input/output quantization and constant
// (per-tensor or per-channel) weights; false when the operator does not fit that form.
bool emit_qlinear_conv(Converter& c, const TensorView& x, const TensorView& w,
                       const TensorView* bias, const TensorView& y,
                       std::span<const int64_t> weight_perm, std::vector<Attr> attrs,
                       int activation) {
  if (!is_8bit(x.dtype) || !is_8bit(w.dtype) || y.dtype != x.dtype || !x.quantized ||
      !w.quantized || !y.quantized || x.quant.per_channel() || y.quant.per_channel() ||
      !w.is_constant())
    return false;
  if (bias && (bias->dtype != LOOM_DTYPE_INT32 || !bias->is_constant())) return false;
  // Per-channel weight scales must follow the output channels (dimension 0 after the permute).
  if (w.quant.per_channel() && weight_perm[0] != w.quant.axis) return false;
  int64_t lo = 0, hi = 0;
  if (!quantized_bounds(y, activation, lo, hi)) return false;
  std::vector<std::string> inputs = {c.value(x, Layout::kNchw), c.scale_of(x), c.zero_point_of(x),
                                     c.permuted(w, weight_perm, false)};
  inputs.push_back(c.scale_of(w));
  inputs.push_back(c.zero_point_of(w));
  inputs.push_back(c.scale_of(y));
  inputs.push_back(c.zero_point_of(y));
  if (bias) inputs.push_back(c.value(*bias, Layout::kNative));
  const bool clip = activation != 0;
  const std::string conv_out = clip ? c.fresh(y.name + "/conv") : c.define(y, Layout::kNchw);
  c.emit("QLinearConv", inputs, {conv_out}, attrs);
  if (clip) {
    auto bound = [&](int64_t v) {
      uint8_t byte = static_cast<uint8_t>(y.dtype == LOOM_DTYPE_INT8 ? static_cast<int8_t>(v) : v);
      return c.constant_raw(y.name + "/clip_bound", y.dtype, {}, {&byte, 1});
    };
    c.emit("Clip", {conv_out, bound(lo), bound(hi)}, {c.define(y, Layout::kNchw)});
  }
  return true;
}

void convert_conv(Converter& c, bool depthwise) {
  const TensorView& x = c.input(0);
  const TensorView& w = c.input(1);
  const TensorView* bias = c.has_input(2) ? &c.input(2) : nullptr;
  const TensorView& y = c.output();
  require_rank4(c, x, "input");
  require_rank4(c, w, "filter");
  Window win{};
  int activation = 0;
  int64_t group = 1;
  std::vector<int64_t> perm;
  if (depthwise) {
    const auto* o = options_of<fb::DepthwiseConv2DOptions>(c);
    if (!o) c.invalid("DEPTHWISE_CONV_2D without options");
    win = {w.shape[1],
           w.shape[2],
           o->stride_h(),
           o->stride_w(),
           o->dilation_h_factor(),
           o->dilation_w_factor(),
           o->padding()};
    activation = static_cast<int>(o->fused_activation_function());
    // Filter [1, KH, KW, C*M] -> [C*M, 1, KH, KW], one group per input channel.
    if (w.shape[0] != 1) c.invalid("a depthwise filter must have shape [1, KH, KW, C*M]");
    group = x.shape[3];
    if (group < 1 || w.shape[3] % group != 0)
      c.invalid("filter channels " + std::to_string(w.shape[3]) +
                " are not a multiple of the input channels " + std::to_string(group));
    perm = {3, 0, 1, 2};
  } else {
    const auto* o = options_of<fb::Conv2DOptions>(c);
    if (!o) c.invalid("CONV_2D without options");
    win = {w.shape[1],
           w.shape[2],
           o->stride_h(),
           o->stride_w(),
           o->dilation_h_factor(),
           o->dilation_w_factor(),
           o->padding()};
    activation = static_cast<int>(o->fused_activation_function());
    // Filter [O, KH, KW, I] -> [O, I, KH, KW]; fewer filter input channels = grouped conv.
    if (w.shape[3] < 1 || x.shape[3] % w.shape[3] != 0)
      c.invalid("input channels " + std::to_string(x.shape[3]) +
                " are not a multiple of the filter's " + std::to_string(w.shape[3]));
    group = x.shape[3] / w.shape[3];
    perm = {0, 3, 1, 2};
  }
  std::vector<Attr> attrs = window_attrs(c, x, win, true);
  attrs.push_back(Attr::Int("group", group));
  if (emit_qlinear_conv(c, x, w, bias, y, perm, attrs, activation)) return;

  std::vector<std::string> inputs = {c.float_value(x, Layout::kNchw), c.permuted(w, perm, true)};
  if (bias) inputs.push_back(c.float_value(*bias, Layout::kNative));
  const std::string out = c.float_output(y, Layout::kNchw, activation);
  c.emit("Conv", inputs, {out}, attrs);
  c.finish_output(y, Layout::kNchw, out, activation);
}

void convert_pool(Converter& c, bool max_pool) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  require_rank4(c, x, "input");
  const auto* o = options_of<fb::Pool2DOptions>(c);
  if (!o) c.invalid("pooling without options");
  Window win{o->filter_height(), o->filter_width(), o->stride_h(), o->stride_w(), 1, 1,
             o->padding()};
  const int activation = static_cast<int>(o->fused_activation_function());
  std::vector<Attr> attrs = window_attrs(c, x, win, false);
  // TFLite averages over the valid (unpadded) pixels only: count_include_pad = 0.
  const std::string out = c.float_output(y, Layout::kNchw, activation);
  c.emit(max_pool ? "MaxPool" : "AveragePool", {c.float_value(x, Layout::kNchw)}, {out}, attrs);
  c.finish_output(y, Layout::kNchw, out, activation);
}

void convert_resize(Converter& c, bool bilinear) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  require_rank4(c, x, "input");
  const std::vector<int64_t> size = c.constant_ints(c.input(1));
  if (size.size() != 2 || size[0] < 1 || size[1] < 1)
    c.invalid("the size operand must hold two positive values");
  bool align_corners = false, half_pixel = false;
  if (bilinear) {
    if (const auto* o = options_of<fb::ResizeBilinearOptions>(c)) {
      align_corners = o->align_corners();
      half_pixel = o->half_pixel_centers();
    }
  } else if (const auto* o = options_of<fb::ResizeNearestNeighborOptions>(c)) {
    align_corners = o->align_corners();
    half_pixel = o->half_pixel_centers();
  }
  std::vector<Attr> attrs = {Attr::String("mode", bilinear ? "linear" : "nearest")};
  if (align_corners) {
    attrs.push_back(Attr::String("coordinate_transformation_mode", "align_corners"));
    // TensorFlow rounds half away from zero: for the non-negative source indices, ceil.
    if (!bilinear) attrs.push_back(Attr::String("nearest_mode", "round_prefer_ceil"));
  } else if (half_pixel) {
    attrs.push_back(Attr::String("coordinate_transformation_mode",
                                 bilinear ? "half_pixel" : "tf_half_pixel_for_nn"));
    if (!bilinear) attrs.push_back(Attr::String("nearest_mode", "floor"));
  } else {
    attrs.push_back(Attr::String("coordinate_transformation_mode", "asymmetric"));
    if (!bilinear) attrs.push_back(Attr::String("nearest_mode", "floor"));
  }
  // Resize scales every dimension independently, so it works in either layout.
  const Layout layout = c.preferred_layout({&x});
  const std::vector<int64_t> sizes =
      layout == Layout::kNchw ? std::vector<int64_t>{x.shape[0], x.shape[3], size[0], size[1]}
                              : std::vector<int64_t>{x.shape[0], size[0], size[1], x.shape[3]};
  const std::string out = c.float_output(y, layout);
  c.emit("Resize", {c.float_value(x, layout), "", "", c.constant_i64("resize_sizes", sizes)}, {out},
         attrs);
  c.finish_output(y, layout, out);
}

}  // namespace

bool convert_conv_pool(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kConv2d:
      convert_conv(c, false);
      return true;
    case BuiltinOp::kDepthwiseConv2d:
      convert_conv(c, true);
      return true;
    case BuiltinOp::kMaxPool2d:
      convert_pool(c, true);
      return true;
    case BuiltinOp::kAveragePool2d:
      convert_pool(c, false);
      return true;
    case BuiltinOp::kResizeBilinear:
      convert_resize(c, true);
      return true;
    case BuiltinOp::kResizeNearestNeighbor:
      convert_resize(c, false);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
