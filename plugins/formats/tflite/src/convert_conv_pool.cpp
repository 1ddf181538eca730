// CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D,
// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: the layout-sensitive image operators, emitted in NCHW.
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

// TRANSPOSE_CONV: inputs (output_shape, weights [O, KH, KW, I], input, optional bias). TFLite
// derives its padding from the requested output size as if it were the input of a forward
// convolution, and writes input pixel y to outputs y * stride - pad_before + ky. ONNX
// ConvTranspose does exactly that with pads [before, before, after, after] where "after" makes
// the output the requested size; output rows no input pixel reaches (a requested size larger
// than the kernel covers) come from output_padding when it is below the stride, else from a
// zero Pad before the bias is added. Quantized forms compute in float: ONNX has no quantized
// ConvTranspose, and TFLite's integer kernel matches the float one to within one step.
void convert_transpose_conv(Converter& c) {
  const TensorView& shape_t = c.input(0);
  const TensorView& w = c.input(1);
  const TensorView& x = c.input(2);
  const TensorView* bias = c.has_input(3) ? &c.input(3) : nullptr;
  const TensorView& y = c.output();
  require_rank4(c, x, "input");
  require_rank4(c, w, "filter");
  require_rank4(c, y, "output");
  const std::vector<int64_t> out_shape = c.constant_ints(shape_t);
  if (out_shape.size() != 4)
    c.invalid("output_shape must hold 4 values (NHWC), not " + std::to_string(out_shape.size()));
  for (size_t i = 0; i < 4; ++i)
    if (out_shape[i] != y.shape[i] && !(i == 0 && y.shape[0] < 0))
      c.invalid("output_shape [" + std::to_string(out_shape[0]) + ", " +
                std::to_string(out_shape[1]) + ", " + std::to_string(out_shape[2]) + ", " +
                std::to_string(out_shape[3]) + "] disagrees with the output tensor's shape");
  if (w.shape[3] != x.shape[3])
    c.invalid("filter input channels " + std::to_string(w.shape[3]) + " differ from the input's " +
              std::to_string(x.shape[3]));
  if (w.shape[0] != y.shape[3])
    c.invalid("filter output channels " + std::to_string(w.shape[0]) +
              " differ from the output's " + std::to_string(y.shape[3]));
  if (bias && (bias->rank() != 1 || bias->shape[0] != w.shape[0]))
    c.invalid("the bias must have shape [" + std::to_string(w.shape[0]) + "]");
  const auto* o = options_of<fb::TransposeConvOptions>(c);
  if (!o) c.invalid("TRANSPOSE_CONV without options");
  const int activation = static_cast<int>(o->fused_activation_function());
  const Window win{w.shape[1], w.shape[2], o->stride_h(), o->stride_w(), 1, 1, o->padding()};
  // Padding of the forward convolution from the output (TFLite's ComputePaddingHeightWidth).
  const std::vector<int64_t> forward = onnx_pads(c, y, win);
  const int64_t stride[2] = {win.stride_h, win.stride_w};
  const int64_t kernel[2] = {win.kernel_h, win.kernel_w};
  std::vector<int64_t> pads = {forward[0], forward[1], 0, 0}, output_padding = {0, 0},
                       extra = {0, 0};
  bool pad_after = false;
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.shape[1 + d], out = y.shape[1 + d];
    if (in < 1 || out < 1) c.invalid("empty input or output image");
    const int64_t covered = (in - 1) * stride[d] + kernel[d] - pads[d];
    if (covered >= out) {
      pads[2 + d] = covered - out;
    } else if (out - covered < stride[d]) {
      output_padding[d] = out - covered;
    } else {
      extra[d] = out - covered;
      pad_after = true;
    }
  }
  std::vector<Attr> attrs = {Attr::Ints("kernel_shape", {kernel[0], kernel[1]}),
                             Attr::Ints("strides", {stride[0], stride[1]}),
                             Attr::Ints("pads", pads),
                             Attr::Ints("output_padding", output_padding)};
  // ConvTranspose weights are [C_in, C_out, KH, KW].
  constexpr int64_t kPerm[4] = {3, 0, 1, 2};
  std::vector<std::string> inputs = {c.float_value(x, Layout::kNchw), c.permuted(w, kPerm, true)};
  const std::string out = c.float_output(y, Layout::kNchw, activation);
  if (!pad_after) {
    if (bias) inputs.push_back(c.float_value(*bias, Layout::kNative));
    c.emit("ConvTranspose", inputs, {out}, attrs);
  } else {
    const std::string conv = c.fresh(y.name + "/conv_transpose");
    c.emit("ConvTranspose", inputs, {conv}, attrs);
    const std::string padded = bias ? c.fresh(y.name + "/padded") : out;
    c.emit("Pad", {conv, c.constant_i64("pads", {0, 0, 0, 0, 0, 0, extra[0], extra[1]})}, {padded});
    if (bias) {
      // The bias reaches every output pixel, also those no input pixel reaches.
      const std::string column = c.fresh(y.name + "/bias_column");
      c.emit("Reshape",
             {c.float_value(*bias, Layout::kNative), c.constant_i64("bias_shape", {-1, 1, 1})},
             {column});
      c.emit("Add", {padded, column}, {out});
    }
  }
  c.finish_output(y, Layout::kNchw, out, activation);
}

enum class Pool { kMax, kAverage, kL2 };

void convert_pool(Converter& c, Pool kind) {
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
  const std::string in = c.float_value(x, Layout::kNchw);
  if (kind == Pool::kL2) {
    // TFLite's L2 pool is sqrt(mean of squares over the valid pixels), which ONNX LpPool (a
    // plain sum, padding included) is not: Mul -> AveragePool -> Sqrt.
    const std::string squares = c.fresh(y.name + "/squares");
    const std::string mean = c.fresh(y.name + "/mean_square");
    c.emit("Mul", {in, in}, {squares});
    c.emit("AveragePool", {squares}, {mean}, attrs);
    c.emit("Sqrt", {mean}, {out});
  } else {
    c.emit(kind == Pool::kMax ? "MaxPool" : "AveragePool", {in}, {out}, attrs);
  }
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
  // TFLite's kernels refuse the combination (TensorFlow defines no meaning for it).
  if (align_corners && half_pixel)
    c.invalid("align_corners and half_pixel_centers cannot both be set");
  std::vector<Attr> attrs = {Attr::String("mode", bilinear ? "linear" : "nearest")};
  if (align_corners) {
    attrs.push_back(Attr::String("coordinate_transformation_mode", "align_corners"));
    // TensorFlow rounds half away from zero: for the non-negative source indices, ceil.
    if (!bilinear) attrs.push_back(Attr::String("nearest_mode", "round_prefer_ceil"));
  } else if (half_pixel) {
    // TFLite's nearest takes floor((x + 0.5) * in / out), which is ONNX half_pixel's
    // (x + 0.5) * in / out - 0.5 rounded half up (opset 13 dropped tf_half_pixel_for_nn).
    attrs.push_back(Attr::String("coordinate_transformation_mode", "half_pixel"));
    if (!bilinear) attrs.push_back(Attr::String("nearest_mode", "round_prefer_ceil"));
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
      convert_pool(c, Pool::kMax);
      return true;
    case BuiltinOp::kAveragePool2d:
      convert_pool(c, Pool::kAverage);
      return true;
    case BuiltinOp::kL2Pool2d:
      convert_pool(c, Pool::kL2);
      return true;
    case BuiltinOp::kTransposeConv:
      convert_transpose_conv(c);
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
