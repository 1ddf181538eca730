// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9) through oneDNN's resampling primitive,
// claimed only where oneDNN computes exactly what ONNX defines.
//
// oneDNN 2.6 samples output index o of an axis resized from I to O pixels at the half-pixel
// centre c = (o + 0.5) * I / O - 0.5, clamped to the edges (it ignores any given factor: the
// ratio is always O / I):
//  - resampling_linear interpolates between floor(c) and floor(c) + 1. That is ONNX linear with
//    half_pixel, pytorch_half_pixel (while O > 1) and half_pixel_symmetric, as long as ONNX's
//    scale is O / I: sizes are given, or the scale makes a whole number of output pixels.
//    exclude_outside changes nothing for linear (both taps past an edge are the edge pixel);
//    antialias changes nothing unless an axis is downsampled.
//  - resampling_nearest takes round-half-up(c) = floor((2o + 1) * I / (2O)). ONNX's index
//    depends on the coordinate mode, the nearest_mode and the scale: it is the same for
//    half_pixel + round_prefer_ceil, tf_half_pixel_for_nn + floor, asymmetric + floor with
//    whole upsampling factors (Upsample, Resize-10), and half_pixel + round_prefer_floor unless
//    the ratio makes ties (e.g. halving). Rather than trust such a table, placement computes
//    both index maps of every axis and claims the node only when they are equal.
// Everything else (cubic, align_corners, tf_crop_and_resize, asymmetric linear, uneven scales
// for linear, resizing N or C, scales or sizes known only at run time) stays on the cpu device
// with its reason.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "builder.hpp"

namespace loom::onednn {

namespace {

using tag = dnnl::memory::format_tag;

// An optional input as either view (placement or compile) shows it.
struct Operand {
  bool present = false;   // given, and not an empty tensor (which ONNX reads as omitted)
  bool constant = false;  // its data is known now
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  const void* data = nullptr;
  size_t bytes = 0;
};

// What the analysis reads from the node.
struct ResizeQuery {
  const loom_node_t* node = nullptr;
  std::vector<int64_t> in, out;  // -1: extent not known now
  std::function<Operand(size_t)> input;
};

struct ResizePlan {
  std::string reason;  // "" when oneDNN computes this node exactly
  dnnl::algorithm alg = dnnl::algorithm::undef;
};

// The ONNX sampling parameters, as the cpu reference device reads them.
struct Sampling {
  bool linear = false;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
};

// oneDNN's nearest index math runs in float: exact for every index while 2 * I * O stays well
// inside float's 24-bit mantissa (ties are exact integers; other values are at least 1 / (2O)
// away from a rounding boundary).
constexpr int64_t kMaxExactNearestProduct = int64_t{1} << 22;
// Output extents beyond this are refused before any arithmetic could overflow (the cpu device
// reports them).
constexpr double kMaxExtent = 1e15;

std::vector<double> read_floats(const Operand& o) {
  std::vector<double> out;
  if (o.dtype == LOOM_DTYPE_FLOAT32) {
    out.resize(o.bytes / sizeof(float));
    for (size_t i = 0; i < out.size(); ++i) {
      float f;
      std::memcpy(&f, static_cast<const char*>(o.data) + i * sizeof f, sizeof f);
      out[i] = f;
    }
  } else if (o.dtype == LOOM_DTYPE_FLOAT64) {
    out.resize(o.bytes / sizeof(double));
    if (!out.empty()) std::memcpy(out.data(), o.data, out.size() * sizeof(double));
  }
  return out;
}

std::vector<int64_t> read_ints(const Operand& o) {
  std::vector<int64_t> out;
  if (o.dtype == LOOM_DTYPE_INT64) {
    out.resize(o.bytes / sizeof(int64_t));
    if (!out.empty()) std::memcpy(out.data(), o.data, out.size() * sizeof(int64_t));
  }
  return out;
}

std::string axis_text(size_t axis, int64_t in, int64_t out) {
  auto extent = [](int64_t v) { return v < 0 ? std::string("?") : std::to_string(v); };
  return "axis " + std::to_string(axis) + ": " + extent(in) + " -> " + extent(out);
}

// ONNX's nearest index of output pixel x (the cpu reference device's arithmetic, in double).
int64_t onnx_nearest_index(const Sampling& s, int64_t x, double scale, int64_t in) {
  const double xd = static_cast<double>(x), real_out = scale * static_cast<double>(in);
  double c = 0;
  if (s.coord == "asymmetric")
    c = xd / scale;
  else if (s.coord == "tf_half_pixel_for_nn")
    c = (xd + 0.5) / scale;
  else if (s.coord == "pytorch_half_pixel")
    c = real_out > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
  else  // half_pixel; half_pixel_symmetric only reaches here with a scale of exactly O / I
    c = (xd + 0.5) / scale - 0.5;
  int64_t i;
  if (c == std::floor(c))
    i = static_cast<int64_t>(c);
  else if (s.nearest == "round_prefer_ceil")
    i = static_cast<int64_t>(std::floor(c + 0.5));
  else if (s.nearest == "floor")
    i = static_cast<int64_t>(std::floor(c));
  else if (s.nearest == "ceil")
    i = static_cast<int64_t>(std::ceil(c));
  else
    i = static_cast<int64_t>(std::ceil(c - 0.5));
  return std::clamp<int64_t>(i, 0, in - 1);
}

// True when ONNX's scale for an axis is oneDNN's ratio O / I (up to float rounding of a
// given scale, far below the tolerance of any interpolated value).
bool scale_is_ratio(double scale, int64_t in, int64_t out) {
  double real_out = scale * static_cast<double>(in);
  return std::abs(real_out - static_cast<double>(out)) <= 1e-6 * static_cast<double>(out);
}

// Why oneDNN samples this axis differently from ONNX ("" when it samples it the same way).
std::string axis_mismatch(const Sampling& s, size_t axis, int64_t in, int64_t out, double scale) {
  if (in == out && scale == 1.0) {
    // Every mode maps x to x at scale 1, except tf_half_pixel_for_nn rounding x + 0.5 up.
    if (!s.linear && s.coord == "tf_half_pixel_for_nn" &&
        (s.nearest == "ceil" || s.nearest == "round_prefer_ceil"))
      return "tf_half_pixel_for_nn with nearest_mode=" + s.nearest + " shifts " +
             axis_text(axis, in, out) + " by one pixel";
    return "";
  }
  if (in <= 0 || out <= 0)
    return "the extent of " + axis_text(axis, in, out) + " is not known or empty";
  bool exact_ratio = scale_is_ratio(scale, in, out);
  if (s.linear || s.coord == "half_pixel_symmetric") {
    if (!exact_ratio) {
      char text[64];
      std::snprintf(text, sizeof text, "scale %g gives %g output pixels on ", scale,
                    scale * static_cast<double>(in));
      return text + axis_text(axis, in, out) + "; oneDNN resamples by the whole-pixel ratio";
    }
    if (s.coord == "pytorch_half_pixel" && out == 1 && in > 1)
      return "pytorch_half_pixel samples pixel 0 for a single output pixel (" +
             axis_text(axis, in, out) + "); oneDNN samples the centre";
    if (s.linear) return "";
  }
  if (out > kMaxExactNearestProduct / in)
    return axis_text(axis, in, out) + " is too large for oneDNN's float nearest-index math";
  for (int64_t x = 0; x < out; ++x) {
    int64_t onednn = (2 * x + 1) * in / (2 * out);
    if (onnx_nearest_index(s, x, scale, in) != onednn)
      return "nearest_mode=" + s.nearest + " with coordinate_transformation_mode=" + s.coord +
             " picks other pixels than oneDNN resampling on " + axis_text(axis, in, out);
  }
  return "";
}

ResizePlan plan_resize(const ResizeQuery& q) {
  const loom_node_t& node = *q.node;
  const std::string op = node.op_type;
  sdk::Attributes attrs(node);
  auto refuse = [&](const std::string& why) { return ResizePlan{op + ": " + why}; };
  const bool legacy = op == "Upsample" || node.opset < 11;
  Sampling s;
  std::string mode = attrs.get_string("mode", "nearest");
  if (mode == "linear" || (legacy && mode == "bilinear"))
    s.linear = true;
  else if (mode != "nearest")
    return refuse("mode=" + mode + " is not supported by oneDNN resampling");
  if (legacy) {
    s.coord = "asymmetric";
    s.nearest = "floor";
  } else {
    s.coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
    s.nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
  }
  if (legacy && s.linear)
    return refuse("linear samples at asymmetric coordinates in opset " +
                  std::to_string(node.opset) + "; oneDNN resampling samples at pixel centres");
  if (s.coord == "align_corners" || s.coord == "tf_crop_and_resize" ||
      (s.linear && (s.coord == "asymmetric" || s.coord == "tf_half_pixel_for_nn")))
    return refuse("coordinate_transformation_mode=" + s.coord + (s.linear ? " with linear" : "") +
                  " is not supported by oneDNN resampling");
  if (s.coord != "half_pixel" && s.coord != "pytorch_half_pixel" && s.coord != "asymmetric" &&
      !(s.coord == "tf_half_pixel_for_nn" && node.opset < 13) &&
      !(s.coord == "half_pixel_symmetric" && node.opset >= 19))
    return refuse("unknown coordinate_transformation_mode " + s.coord);
  if (s.nearest != "round_prefer_floor" && s.nearest != "round_prefer_ceil" &&
      s.nearest != "floor" && s.nearest != "ceil")
    return refuse("unknown nearest_mode " + s.nearest);
  const bool antialias = !legacy && node.opset >= 18 && attrs.get_int("antialias", 0) != 0;

  const size_t rank = q.in.size();
  if (rank < 3 || rank > 5 || q.out.size() != rank)
    return refuse("oneDNN resampling takes 3D to 5D tensors (N, C, spatial), not rank " +
                  std::to_string(rank));

  // The given scales or sizes, per axis (opset 18 may list only some axes).
  std::vector<double> given_scales;
  std::vector<int64_t> given_sizes;
  if (op == "Upsample" && node.opset < 9) {
    auto a = attrs.get_floats("scales");
    if (!a) return refuse("attribute scales is missing");
    given_scales.assign(a->begin(), a->end());
  } else {
    const size_t scales_index = legacy ? 1 : 2;
    Operand sc = q.input(scales_index), sz = legacy ? Operand{} : q.input(3);
    for (auto [o, name] : {std::pair{&sc, "scales"}, std::pair{&sz, "sizes"}})
      if (o->present && !o->constant)
        return refuse(std::string(name) +
                      " is not a constant (oneDNN needs the output extents when compiling)");
    if (sc.present) {
      if (sc.dtype != LOOM_DTYPE_FLOAT32 && sc.dtype != LOOM_DTYPE_FLOAT64)
        return refuse("scales of type " + std::string(sdk::dtype_name(sc.dtype)));
      given_scales = read_floats(sc);
    }
    if (sz.present) {
      if (sz.dtype != LOOM_DTYPE_INT64)
        return refuse("sizes of type " + std::string(sdk::dtype_name(sz.dtype)));
      given_sizes = read_ints(sz);
    }
  }
  if (given_scales.empty() == given_sizes.empty())
    return refuse("exactly one of scales and sizes must be given");
  std::vector<size_t> axes;
  if (auto a = legacy || node.opset < 18 ? std::nullopt : attrs.get_ints("axes")) {
    for (int64_t axis : *a) {
      if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank))
        return refuse("axis " + std::to_string(axis) + " is out of range");
      axes.push_back(static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis));
    }
  } else {
    for (size_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const size_t n = given_scales.empty() ? given_sizes.size() : given_scales.size();
  if (n != axes.size())
    return refuse(std::to_string(n) + " scales or sizes for " + std::to_string(axes.size()) +
                  " axes");

  // ONNX's scale (the divisor of its coordinate transform) and output extent of every axis.
  std::vector<double> scale(rank, 1.0);
  std::vector<int64_t> out = q.in;
  const std::string policy = !legacy && node.opset >= 18
                                 ? attrs.get_string("keep_aspect_ratio_policy", "stretch")
                                 : "stretch";
  if (!given_scales.empty()) {
    for (size_t k = 0; k < n; ++k) {
      const size_t a = axes[k];
      if (!(given_scales[k] > 0) || !std::isfinite(given_scales[k]))
        return refuse("scale on axis " + std::to_string(a) + " is not positive");
      scale[a] = given_scales[k];
      if (q.in[a] < 0) continue;
      double extent = std::floor(scale[a] * static_cast<double>(q.in[a]));
      if (extent > kMaxExtent)
        return refuse("scale on axis " + std::to_string(a) + " gives an absurd extent");
      out[a] = static_cast<int64_t>(extent);
    }
  } else {
    for (size_t k = 0; k < n; ++k)
      if (q.in[axes[k]] <= 0 || given_sizes[k] < 0 ||
          static_cast<double>(given_sizes[k]) > kMaxExtent)
        return refuse("sizes for " + axis_text(axes[k], q.in[axes[k]], given_sizes[k]) +
                      " (input extent not known now, or a negative or absurd size)");
    if (policy == "stretch") {
      for (size_t k = 0; k < n; ++k) {
        out[axes[k]] = given_sizes[k];
        scale[axes[k]] = static_cast<double>(given_sizes[k]) / static_cast<double>(q.in[axes[k]]);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double common = policy == "not_larger" ? HUGE_VAL : 0.0;
      for (size_t k = 0; k < n; ++k) {
        double r = static_cast<double>(given_sizes[k]) / static_cast<double>(q.in[axes[k]]);
        common = policy == "not_larger" ? std::min(common, r) : std::max(common, r);
      }
      for (size_t a : axes) {
        if (common * static_cast<double>(q.in[a]) > kMaxExtent)
          return refuse("sizes give an absurd extent on axis " + std::to_string(a));
        scale[a] = common;
        out[a] = static_cast<int64_t>(std::floor(common * static_cast<double>(q.in[a]) + 0.5));
      }
    } else {
      return refuse("unknown keep_aspect_ratio_policy " + policy);
    }
  }

  for (size_t a = 0; a < rank; ++a) {
    if (out[a] >= 0 && q.out[a] >= 0 && out[a] != q.out[a])
      return refuse("output extent " + std::to_string(q.out[a]) + " on axis " + std::to_string(a) +
                    " disagrees with the scales (" + std::to_string(out[a]) + ")");
    if (out[a] < 0) out[a] = q.out[a];
    std::string why = axis_mismatch(s, a, q.in[a], out[a], scale[a]);
    if (a < 2 && why.empty() && q.in[a] != out[a]) why = "resizes " + axis_text(a, q.in[a], out[a]);
    if (a < 2 && !why.empty())
      return refuse("oneDNN resamples spatial axes only, not N or C (" + why + ")");
    if (!why.empty()) return refuse(why);
    if (antialias && s.linear && out[a] < q.in[a])
      return refuse("antialias=1 widens the filter when downsampling (" +
                    axis_text(a, q.in[a], out[a]) + "); oneDNN resampling does not");
  }
  return ResizePlan{
      "", s.linear ? dnnl::algorithm::resampling_linear : dnnl::algorithm::resampling_nearest};
}

}  // namespace

std::string why_resize_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  auto dims = [](const loom_value_info_t* v) {
    std::vector<int64_t> d;
    if (v && v->rank >= 0) d.assign(v->dims, v->dims + v->rank);
    return d;
  };
  ResizeQuery q;
  q.node = &node;
  q.in = dims(sdk::node_input(graph, node, 0));
  q.out = dims(sdk::node_output(graph, node, 0));
  q.input = [&](size_t i) {
    Operand o;
    const loom_value_info_t* v = sdk::node_input(graph, node, i);
    if (!v || (v->rank >= 0 && sdk::element_count(v->rank, v->dims) == 0)) return o;
    o.present = true;
    o.constant = (v->flags & LOOM_VALUE_CONSTANT) && v->data;
    o.dtype = v->dtype;
    o.data = v->data;
    o.bytes = v->data_size;
    return o;
  };
  return plan_resize(q).reason;
}

void emit_resize(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  int x = n.inputs[0], y = n.outputs[0];
  ResizeQuery q;
  q.node = n.view;
  q.in = g.value(x).dims;
  q.out = g.value(y).dims;
  q.input = [&](size_t i) {
    Operand o;
    int id = g.in(n, i);
    if (id < 0 || g.value(id).elements() == 0) return o;
    const IrValue& v = g.value(id);
    o.present = true;
    o.constant = v.constant();
    o.dtype = v.dtype;
    o.data = v.data;
    o.bytes = v.data_size;
    return o;
  };
  // Placement saw the declared shapes; the real ones may make a difference (symbolic dims).
  ResizePlan plan = plan_resize(q);
  if (!plan.reason.empty())
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "onednn: " + n.op + " node '" + n.view->name + "': " + plan.reason);
  int src = b.slot_of(x);
  dnnl::memory::desc src_md = b.slot_md(src);
  // The output takes the layout oneDNN prefers for this input: a blocked conv output stays
  // blocked through the resize.
  dnnl::memory::desc dst_md(g.value(y).dims, src_md.data_type(), tag::any);
  dnnl::resampling_forward::desc d(dnnl::prop_kind::forward_inference, plan.alg, src_md, dst_md);
  dnnl::resampling_forward::primitive_desc pd(d, b.engine());
  int dst = b.define(y, pd.dst_desc());
  b.add_step(dnnl::resampling_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             n.op + " " + n.view->name + " [" + pd.impl_info_str() + "]");
}

LOOM_ONEDNN_OP("Resize", why_resize_unsupported, emit_resize);
LOOM_ONEDNN_OP("Upsample", why_resize_unsupported, emit_resize);

}  // namespace loom::onednn
