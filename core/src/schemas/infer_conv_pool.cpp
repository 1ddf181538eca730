// Sliding-window ops: Conv (+ ConvInteger, QLinearConv), ConvTranspose, the pools (with
// auto_pad, ceil_mode, dilations), global pools, MaxUnpool and the RoI pools.
#include <cstdint>
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

constexpr int64_t kMaxWindowAttribute = int64_t{1} << 31;

struct Window {
  Dims kernel, strides, dilations, pads;  // pads: n begins then n ends
  std::string auto_pad;
  bool ceil_mode = false;
};

// Reads kernel_shape (or `kernel` when the weights give it), strides, dilations, pads, auto_pad
// for `n` spatial dimensions, failing on attributes of the wrong length or value.
Window read_window(const NodeView& v, size_t n, const std::optional<Dims>& kernel_from_weights,
                   bool kernel_required) {
  Window w;
  auto sized = [&](const char* name, size_t expected, int64_t fallback) {
    std::optional<Dims> a = v.ints_attr(name);
    if (!a) return Dims(expected, fallback);
    if (a->size() != expected)
      v.fail(std::string("attribute ") + name + " has " + std::to_string(a->size()) +
             " values, expected " + std::to_string(expected) + " for " + std::to_string(n) +
             " spatial dimensions");
    return *a;
  };
  if (v.attrs().has("kernel_shape")) {
    w.kernel = sized("kernel_shape", n, 0);
    if (kernel_from_weights)
      for (size_t k = 0; k < n; ++k)
        if ((*kernel_from_weights)[k] >= 0 && (*kernel_from_weights)[k] != w.kernel[k])
          v.fail("kernel_shape " + dims_to_string(w.kernel) + " disagrees with the weights' " +
                 dims_to_string(*kernel_from_weights));
  } else if (kernel_from_weights) {
    w.kernel = *kernel_from_weights;
  } else if (kernel_required) {
    v.fail("attribute kernel_shape is required");
  } else {
    w.kernel = Dims(n, kUnknownDim);
  }
  w.strides = sized("strides", n, 1);
  w.dilations = sized("dilations", n, 1);
  w.pads = sized("pads", 2 * n, 0);
  // The spec requires all of these positive (pads non-negative); a zero stride or dilation
  // would divide by zero or repeat one window forever, a negative pad would crop.
  auto entry = [](const char* name, size_t k, int64_t value) {
    return std::string(name) + "[" + std::to_string(k) + "] = " + std::to_string(value);
  };
  for (size_t k = 0; k < n; ++k) {
    if (w.strides[k] <= 0) v.fail(entry("strides", k, w.strides[k]) + " must be positive");
    if (w.dilations[k] <= 0) v.fail(entry("dilations", k, w.dilations[k]) + " must be positive");
    // Unknown extents (-1) only come from weights of unknown shape.
    if (w.kernel[k] == 0 || w.kernel[k] < kUnknownDim)
      v.fail(v.attrs().has("kernel_shape")
                 ? entry("kernel_shape", k, w.kernel[k]) + " must be positive"
                 : "the weights' kernel extent " + std::to_string(w.kernel[k]) +
                       " on spatial axis " + std::to_string(k) + " must be positive");
  }
  for (size_t i = 0; i < w.pads.size(); ++i)
    if (w.pads[i] < 0) v.fail(entry("pads", i, w.pads[i]) + " must not be negative");
  // Bounding the attributes keeps all window arithmetic below far from int64 overflow.
  for (const Dims* values : {&w.kernel, &w.strides, &w.dilations, &w.pads})
    for (int64_t x : *values)
      if (x > kMaxWindowAttribute)
        v.fail("window attribute value " + std::to_string(x) + " is implausibly large");
  w.auto_pad = v.attrs().get_string("auto_pad", "NOTSET");
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID")
    v.fail("unknown auto_pad '" + w.auto_pad + "'");
  w.ceil_mode = v.attrs().get_int("ceil_mode", 0) != 0;
  return w;
}

int64_t div_round(int64_t a, int64_t b, bool ceil) {
  return ceil ? (a + b - 1) / b : a / b;
}

// Output extents of a forward window op (Conv, pools) over `in` spatial extents.
Dims window_output(const NodeView& v, const Dims& in, const Window& w) {
  Dims out(in.size(), kUnknownDim);
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] < 0) continue;
    if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
      out[k] = div_round(in[k], w.strides[k], true);
      continue;
    }
    if (w.kernel[k] < 0) continue;
    int64_t effective = (w.kernel[k] - 1) * w.dilations[k] + 1;
    int64_t padded = in[k];
    if (w.auto_pad == "NOTSET" &&
        __builtin_add_overflow(padded, w.pads[k] + w.pads[k + in.size()], &padded))
      v.fail("padded extent of input dimension " + std::to_string(k) + " overflows");
    if (padded < effective)
      v.fail("window of extent " + std::to_string(effective) + " (kernel " +
             dims_to_string(w.kernel) + ", dilations " + dims_to_string(w.dilations) +
             ") is larger than the padded input extent " + std::to_string(padded) +
             " of spatial dimension " + std::to_string(k));
    out[k] = div_round(padded - effective, w.strides[k], w.ceil_mode) + 1;
    // ceil_mode: a last window that would start in the right padding is dropped (ONNX 1.16's
    // clarification; onnxruntime and PyTorch do the same). Devices size their outputs from here.
    const int64_t begin_pad = w.auto_pad == "NOTSET" ? w.pads[k] : 0;
    if (w.ceil_mode && out[k] > 1 && (out[k] - 1) * w.strides[k] >= in[k] + begin_pad) --out[k];
  }
  return out;
}

// Conv-like op with data at x_index, weights at w_index and an optional bias at b_index.
void conv_like(NodeView& v, size_t x_index, size_t w_index, size_t b_index, loom_dtype_t dtype) {
  std::optional<Dims> x = v.shape(x_index), w = v.shape(w_index);
  int32_t rank = x ? static_cast<int32_t>(x->size()) : w ? static_cast<int32_t>(w->size()) : -1;
  if (rank < 0) return v.set_output_dtype(0, dtype);
  if (x && w && x->size() != w->size())
    v.fail("input " + dims_to_string(*x) + " and weights " + dims_to_string(*w) +
           " have different ranks");
  if (rank < 3)
    v.fail("input must have rank >= 3 (N, C, spatial...), got " + dims_to_string(x ? *x : *w));
  int64_t group = v.attrs().get_int("group", 1);
  if (group <= 0) v.fail("group " + std::to_string(group) + " must be positive");
  int64_t channels = x ? (*x)[1] : kUnknownDim;
  int64_t maps = w ? (*w)[0] : kUnknownDim;
  if (channels >= 0 && channels % group != 0)
    v.fail("input " + dims_to_string(*x) + " has " + std::to_string(channels) +
           " channels, not divisible by group " + std::to_string(group));
  if (w && channels >= 0 && (*w)[1] >= 0 && channels != infer::checked_mul(v, (*w)[1], group))
    v.fail("input " + dims_to_string(*x) + " has " + std::to_string(channels) +
           " channels but weights " + dims_to_string(*w) + " with group " + std::to_string(group) +
           " expect " + std::to_string((*w)[1] * group));
  if (maps >= 0 && maps % group != 0)
    v.fail("weights " + dims_to_string(*w) + " have " + std::to_string(maps) +
           " output channels, not divisible by group " + std::to_string(group));
  if (auto bias = v.shape(b_index); bias && maps >= 0) {
    if (bias->size() != 1 || ((*bias)[0] >= 0 && (*bias)[0] != maps))
      v.fail("bias " + dims_to_string(*bias) + " does not match the " + std::to_string(maps) +
             " output channels of weights " + dims_to_string(*w));
  }
  size_t n = static_cast<size_t>(rank) - 2;
  std::optional<Dims> kernel;
  if (w) kernel = Dims(w->begin() + 2, w->end());
  Window win = read_window(v, n, kernel, false);
  Dims spatial = x ? Dims(x->begin() + 2, x->end()) : Dims(n, kUnknownDim);
  Dims out{x ? (*x)[0] : kUnknownDim, maps};
  for (int64_t d : window_output(v, spatial, win)) out.push_back(d);
  v.set_output(0, dtype, out);
}

void conv(NodeView& v) {
  conv_like(v, 0, 1, 2, v.dtype(0));
}
void conv_integer(NodeView& v) {
  conv_like(v, 0, 1, SIZE_MAX, LOOM_DTYPE_INT32);
}
// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): y has y_zp's type.
void qlinear_conv(NodeView& v) {
  loom_dtype_t y = v.has_input(7) ? v.dtype(7) : v.dtype(0);
  conv_like(v, 0, 3, 8, y);
}

// ConvTranspose: weights are [C, M/group, k...]; output channels M = W[1] * group.
void conv_transpose(NodeView& v) {
  std::optional<Dims> x = v.shape(0), w = v.shape(1);
  int32_t rank = x ? static_cast<int32_t>(x->size()) : w ? static_cast<int32_t>(w->size()) : -1;
  if (rank < 0) return v.set_output_dtype(0, v.dtype(0));
  if (x && w && x->size() != w->size())
    v.fail("input " + dims_to_string(*x) + " and weights " + dims_to_string(*w) +
           " have different ranks");
  if (rank < 3) v.fail("input must have rank >= 3 (N, C, spatial...)");
  int64_t group = v.attrs().get_int("group", 1);
  if (group <= 0) v.fail("group " + std::to_string(group) + " must be positive");
  if (x && w && (*x)[1] >= 0 && (*w)[0] >= 0 && (*x)[1] != (*w)[0])
    v.fail("input " + dims_to_string(*x) + " has " + std::to_string((*x)[1]) +
           " channels but weights " + dims_to_string(*w) + " expect " + std::to_string((*w)[0]));
  // Input channels split into `group` groups, each with W[1] output maps.
  int64_t channels = x && (*x)[1] >= 0 ? (*x)[1] : w ? (*w)[0] : kUnknownDim;
  if (channels >= 0 && channels % group != 0)
    v.fail("input has " + std::to_string(channels) + " channels, not divisible by group " +
           std::to_string(group));
  int64_t maps = w && (*w)[1] >= 0 ? infer::checked_mul(v, (*w)[1], group) : kUnknownDim;
  size_t n = static_cast<size_t>(rank) - 2;
  std::optional<Dims> kernel;
  if (w) kernel = Dims(w->begin() + 2, w->end());
  Window win = read_window(v, n, kernel, false);
  Dims output_padding = v.ints_attr("output_padding").value_or(Dims(n, 0));
  if (output_padding.size() != n)
    v.fail("output_padding " + dims_to_string(output_padding) + " does not have " +
           std::to_string(n) + " values");
  // output_padding only selects which computed values are kept; at or above the stride (and
  // the dilation) it would ask for output positions no input contributes to. Checked even with
  // output_shape, where it still enters the padding computation.
  for (size_t k = 0; k < n; ++k) {
    std::string padding =
        "output_padding[" + std::to_string(k) + "] = " + std::to_string(output_padding[k]);
    if (output_padding[k] < 0) v.fail(padding + " must not be negative");
    if (output_padding[k] >= win.strides[k] && output_padding[k] >= win.dilations[k])
      v.fail(padding + " is not smaller than strides[" + std::to_string(k) +
             "] = " + std::to_string(win.strides[k]) +
             (win.dilations[k] > 1
                  ? " or dilations[" + std::to_string(k) + "] = " + std::to_string(win.dilations[k])
                  : std::string()) +
             " (ONNX requires output_padding < stride or dilation)");
  }
  Dims out{x ? (*x)[0] : kUnknownDim, maps};
  if (std::optional<Dims> explicit_shape = v.ints_attr("output_shape")) {
    // Spatial extents, or (as some exporters write) the full N, C, spatial shape.
    if (explicit_shape->size() != n && explicit_shape->size() != n + 2)
      v.fail("output_shape " + dims_to_string(*explicit_shape) + " does not have " +
             std::to_string(n) + " spatial extents");
    out.insert(out.end(), explicit_shape->end() - static_cast<ptrdiff_t>(n), explicit_shape->end());
    return v.set_output(0, v.dtype(0), out);
  }
  for (size_t k = 0; k < n; ++k) {
    int64_t in = x ? (*x)[k + 2] : kUnknownDim;
    if (in < 0) {
      out.push_back(kUnknownDim);
    } else if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
      out.push_back(infer::checked_mul(v, in, win.strides[k]));
    } else if (win.kernel[k] < 0) {
      out.push_back(kUnknownDim);
    } else {
      int64_t pads = win.auto_pad == "VALID" ? 0 : win.pads[k] + win.pads[k + n];
      int64_t extent = infer::checked_mul(v, win.strides[k], in - 1);
      if (__builtin_add_overflow(
              extent, output_padding[k] + (win.kernel[k] - 1) * win.dilations[k] + 1 - pads,
              &extent))
        v.fail("output extent of spatial dimension " + std::to_string(k) + " overflows");
      if (extent <= 0)
        v.fail("pads " + dims_to_string(win.pads) + " leave no output for input " +
               dims_to_string(*x));
      out.push_back(extent);
    }
  }
  v.set_output(0, v.dtype(0), out);
}

// MaxPool, AveragePool, LpPool: [N, C, windowed spatial...]; MaxPool's optional second output
// holds int64 indices of the same shape.
void pool(NodeView& v) {
  std::optional<Dims> x = v.shape(0);
  if (x && x->size() < 3)
    v.fail("input " + dims_to_string(*x) + " must have rank >= 3 (N, C, spatial...)");
  // Without the input's rank, kernel_shape tells the number of spatial axes: the attributes
  // are checked all the same, since they do not depend on the data.
  std::optional<Dims> kernel_shape = v.ints_attr("kernel_shape");
  if (!x && (!kernel_shape || kernel_shape->empty())) {
    v.set_output_dtype(0, v.dtype(0));
    v.set_output_dtype(1, LOOM_DTYPE_INT64);
    return;
  }
  size_t n = x ? x->size() - 2 : kernel_shape->size();
  Window win = read_window(v, n, std::nullopt, true);
  // A pad as large as the kernel makes windows that lie wholly in the padding: MaxPool would
  // give -inf there, AveragePool 0 or a division by zero. onnxruntime refuses it too.
  if (win.auto_pad == "NOTSET")
    for (size_t i = 0; i < win.pads.size(); ++i) {
      size_t k = i % n;
      if (win.pads[i] >= win.kernel[k])
        v.fail("pads[" + std::to_string(i) + "] = " + std::to_string(win.pads[i]) +
               " is not smaller than kernel_shape[" + std::to_string(k) +
               "] = " + std::to_string(win.kernel[k]) + " (ONNX requires pad < kernel)");
    }
  if (!x) {
    v.set_output_dtype(0, v.dtype(0));
    v.set_output_dtype(1, LOOM_DTYPE_INT64);
    return;
  }
  Dims out{(*x)[0], (*x)[1]};
  for (int64_t d : window_output(v, Dims(x->begin() + 2, x->end()), win)) out.push_back(d);
  v.set_output(0, v.dtype(0), out);
  v.set_output(1, LOOM_DTYPE_INT64, out);
}

// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: spatial extents become 1.
void global_pool(NodeView& v) {
  std::optional<Dims> x = v.shape(0);
  if (x) {
    if (x->size() < 2) v.fail("input " + dims_to_string(*x) + " must have rank >= 2 (N, C, ...)");
    for (size_t k = 2; k < x->size(); ++k) (*x)[k] = 1;
  }
  v.set_output(0, v.dtype(0), x);
}

// MaxUnpool(X, I, output_shape?): the given output shape, else the inverse pooling formula.
void max_unpool(NodeView& v) {
  if (auto shape = v.const_ints(2)) return v.set_output(0, v.dtype(0), *shape);
  std::optional<Dims> x = v.shape(0);
  if (!x) return v.set_output_dtype(0, v.dtype(0));
  if (x->size() < 3) v.fail("input " + dims_to_string(*x) + " must have rank >= 3");
  if (v.has_input(2)) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(x->size()));
  size_t n = x->size() - 2;
  Window win = read_window(v, n, std::nullopt, true);
  Dims out{(*x)[0], (*x)[1]};
  for (size_t k = 0; k < n; ++k) {
    int64_t in = (*x)[k + 2];
    out.push_back(in < 0 ? kUnknownDim
                         : infer::checked_add(v, infer::checked_mul(v, in - 1, win.strides[k]),
                                              win.kernel[k] - win.pads[k] - win.pads[k + n]));
  }
  v.set_output(0, v.dtype(0), out);
}

// MaxRoiPool(X, rois): [num_rois, C, pooled_shape...].
void max_roi_pool(NodeView& v) {
  std::optional<Dims> x = v.shape(0), rois = v.shape(1);
  std::optional<Dims> pooled = v.ints_attr("pooled_shape");
  if (!pooled) v.fail("attribute pooled_shape is required");
  Dims out{rois && !rois->empty() ? (*rois)[0] : kUnknownDim,
           x && x->size() > 1 ? (*x)[1] : kUnknownDim};
  out.insert(out.end(), pooled->begin(), pooled->end());
  v.set_output(0, v.dtype(0), out);
}

// RoiAlign(X, rois, batch_indices): [num_rois, C, output_height, output_width].
void roi_align(NodeView& v) {
  std::optional<Dims> x = v.shape(0), rois = v.shape(1);
  Dims out{rois && !rois->empty() ? (*rois)[0] : kUnknownDim,
           x && x->size() > 1 ? (*x)[1] : kUnknownDim, v.attrs().get_int("output_height", 1),
           v.attrs().get_int("output_width", 1)};
  v.set_output(0, v.dtype(0), out);
}

const InferEntry kEntries[] = {
    {"", "Conv", adapt<conv>},
    {"", "ConvInteger", adapt<conv_integer>},
    {"", "QLinearConv", adapt<qlinear_conv>},
    {"", "ConvTranspose", adapt<conv_transpose>},
    {"", "MaxPool", adapt<pool>},
    {"", "AveragePool", adapt<pool>},
    {"", "LpPool", adapt<pool>},
    {"", "GlobalAveragePool", adapt<global_pool>},
    {"", "GlobalMaxPool", adapt<global_pool>},
    {"", "GlobalLpPool", adapt<global_pool>},
    {"", "MaxUnpool", adapt<max_unpool>},
    {"", "MaxRoiPool", adapt<max_roi_pool>},
    {"", "RoiAlign", adapt<roi_align>},
};

}  // namespace

std::span<const InferEntry> nn_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
