// Resampling: Resize (opset 10 scales input; 11+ roi/scales/sizes; 18 axes and
// keep_aspect_ratio_policy), the deprecated Upsample (scales attribute in 7, input in 9) and
// GridSample.
#include <algorithm>
#include <cmath>
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

// output extent = floor(input extent * scale), as the spec defines for scales.
Dims scaled(const NodeView& v, const Dims& in, const std::vector<double>& scales,
            const Dims& axes) {
  if (scales.size() != axes.size())
    v.fail("scales has " + std::to_string(scales.size()) + " values for " +
           std::to_string(axes.size()) + " axes of input " + dims_to_string(in));
  Dims out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (!(scales[k] > 0) || !std::isfinite(scales[k]))
      v.fail("scale " + std::to_string(scales[k]) + " must be positive and finite");
    size_t axis = static_cast<size_t>(axes[k]);
    if (in[axis] < 0) continue;
    double extent = std::floor(static_cast<double>(in[axis]) * scales[k]);
    if (extent > 9.0e18) v.fail("scale " + std::to_string(scales[k]) + " gives an absurd extent");
    out[axis] = static_cast<int64_t>(extent);
  }
  return out;
}

Dims all_axes(size_t rank) {
  Dims axes(rank);
  for (size_t k = 0; k < rank; ++k) axes[k] = static_cast<int64_t>(k);
  return axes;
}

// The enumerated attributes, against the names the spec lists for the node's opset: a typo
// or a mode from a newer opset would otherwise surface only when a device compiles the node.
void check_resize_modes(const NodeView& v) {
  const int64_t opset = v.node().opset;
  std::string mode = v.attrs().get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && !(mode == "cubic" && opset >= 11))
    v.fail("unknown mode '" + mode + "' (expected nearest, linear" +
           (opset >= 11 ? ", cubic)" : ")"));
  if (opset < 11) return;  // Resize-10 has no other enumerated attributes
  std::string coord = v.attrs().get_string("coordinate_transformation_mode", "half_pixel");
  if (coord != "half_pixel" && coord != "pytorch_half_pixel" && coord != "align_corners" &&
      coord != "asymmetric" && coord != "tf_crop_and_resize" &&
      !(coord == "tf_half_pixel_for_nn" && opset < 13) &&
      !(coord == "half_pixel_symmetric" && opset >= 19))
    v.fail("unknown coordinate_transformation_mode '" + coord + "' for opset " +
           std::to_string(opset));
  std::string nearest = v.attrs().get_string("nearest_mode", "round_prefer_floor");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" &&
      nearest != "ceil")
    v.fail("unknown nearest_mode '" + nearest + "'");
}

void resize_with(NodeView& v, size_t scales_index, size_t sizes_index) {
  check_resize_modes(v);
  std::optional<Dims> in = v.shape(0);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  int64_t rank = static_cast<int64_t>(in->size());
  Dims axes = all_axes(in->size());
  if (std::optional<Dims> given = v.ints_attr("axes")) {
    axes.clear();
    for (int64_t a : *given) axes.push_back(v.normalize_axis(a, rank));
  }
  std::optional<std::vector<double>> scales = v.const_doubles(scales_index);
  std::optional<Dims> sizes = v.const_ints(sizes_index);
  // An empty tensor means "not given". A non-constant input may be empty at run time, so
  // only constants decide here; otherwise the output keeps its rank alone.
  bool has_scales = v.has_input(scales_index) && scales && !scales->empty();
  bool has_sizes = v.has_input(sizes_index) && sizes && !sizes->empty();
  if (has_scales && has_sizes) v.fail("only one of scales and sizes may be given");
  if (has_scales && scales) return v.set_output(0, v.dtype(0), scaled(v, *in, *scales, axes));
  if (has_sizes && sizes) {
    if (sizes->size() != axes.size())
      v.fail("sizes " + dims_to_string(*sizes) + " has " + std::to_string(sizes->size()) +
             " values for " + std::to_string(axes.size()) + " axes of input " +
             dims_to_string(*in));
    for (int64_t s : *sizes)
      if (s < 0) v.fail("sizes " + dims_to_string(*sizes) + " has a negative extent");
    Dims out = *in;
    std::string policy = v.attrs().get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t k = 0; k < axes.size(); ++k) out[static_cast<size_t>(axes[k])] = (*sizes)[k];
      return v.set_output(0, v.dtype(0), out);
    }
    if (policy != "not_larger" && policy != "not_smaller")
      v.fail("unknown keep_aspect_ratio_policy '" + policy + "'");
    // One scale for all axes: the smallest (not_larger) or largest (not_smaller) ratio.
    double scale = policy == "not_larger" ? HUGE_VAL : 0.0;
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t extent = (*in)[static_cast<size_t>(axes[k])];
      if (extent <= 0) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank));
      double ratio = static_cast<double>((*sizes)[k]) / static_cast<double>(extent);
      scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
    }
    for (int64_t a : axes) {
      size_t axis = static_cast<size_t>(a);
      double extent = std::floor(static_cast<double>(out[axis]) * scale + 0.5);
      if (extent > 9.0e18) v.fail("sizes " + dims_to_string(*sizes) + " give an absurd extent");
      out[axis] = static_cast<int64_t>(extent);
    }
    return v.set_output(0, v.dtype(0), out);
  }
  // Scales or sizes known only at run time: every resized axis may change.
  Dims out = *in;
  for (int64_t a : axes) out[static_cast<size_t>(a)] = kUnknownDim;
  v.set_output(0, v.dtype(0), out);
}

// Resize-10 has (X, scales); later versions (X, roi, scales, sizes).
void resize_10(NodeView& v) {
  resize_with(v, 1, SIZE_MAX);
}
void resize(NodeView& v) {
  resize_with(v, 2, 3);
}

void upsample(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  std::optional<std::vector<double>> scales;
  if (std::optional<std::vector<float>> attr = v.floats_attr("scales"))
    scales = std::vector<double>(attr->begin(), attr->end());
  else
    scales = v.const_doubles(1);
  if (!scales) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(in->size()));
  // Upsample only enlarges: the spec requires every scale >= 1 (onnxruntime enforces it).
  for (size_t k = 0; k < scales->size(); ++k)
    if (!((*scales)[k] >= 1.0))
      v.fail("scales[" + std::to_string(k) + "] = " + std::to_string((*scales)[k]) +
             " is below 1 (Upsample requires scales >= 1; use Resize to downsample)");
  v.set_output(0, v.dtype(0), scaled(v, *in, *scales, all_axes(in->size())));
}

// GridSample(X [N, C, H, W], grid [N, H_out, W_out, 2]): [N, C, H_out, W_out].
void grid_sample(NodeView& v) {
  std::optional<Dims> x = v.shape(0), grid = v.shape(1);
  if (x && x->size() != 4) v.fail("X " + dims_to_string(*x) + " must be 4-D (N, C, H, W)");
  if (grid && grid->size() != 4)
    v.fail("grid " + dims_to_string(*grid) + " must be 4-D (N, H, W, 2)");
  int64_t n = infer::merge_dim(v, x ? (*x)[0] : kUnknownDim, grid ? (*grid)[0] : kUnknownDim,
                               "batch extents of X and grid");
  v.set_output(0, v.dtype(0),
               Dims{n, x ? (*x)[1] : kUnknownDim, grid ? (*grid)[1] : kUnknownDim,
                    grid ? (*grid)[2] : kUnknownDim});
}

// GridSample-20+ (X [N, C, d_1..d_r], grid [N, o_1..o_r, r]): [N, C, o_1..o_r] for any r >= 1.
void grid_sample_20(NodeView& v) {
  std::optional<Dims> x = v.shape(0), grid = v.shape(1);
  if (x && x->size() < 3)
    v.fail("X " + dims_to_string(*x) + " must be [N, C, d_1, ...] (rank >= 3)");
  if (grid && grid->size() < 3)
    v.fail("grid " + dims_to_string(*grid) + " must be [N, o_1, ..., r] (rank >= 3)");
  if (x && grid && x->size() != grid->size())
    v.fail("grid " + dims_to_string(*grid) + " must have the rank of X " + dims_to_string(*x));
  if (!x && !grid) return v.set_output_dtype(0, v.dtype(0));
  const size_t rank = x ? x->size() : grid->size();
  if (grid && x && grid->back() >= 0 && grid->back() != static_cast<int64_t>(rank - 2))
    v.fail("the last extent of grid " + dims_to_string(*grid) + " must be the " +
           std::to_string(rank - 2) + " spatial axes of X " + dims_to_string(*x));
  Dims out(rank, kUnknownDim);
  out[0] = infer::merge_dim(v, x ? (*x)[0] : kUnknownDim, grid ? (*grid)[0] : kUnknownDim,
                            "batch extents of X and grid");
  if (x) out[1] = (*x)[1];
  if (grid)
    for (size_t k = 2; k < rank; ++k) out[k] = (*grid)[k - 1];
  v.set_output(0, v.dtype(0), out);
}

// AffineGrid(theta [N, 2, 3] or [N, 3, 4], size [N, C, (D,) H, W]): [N, (D,) H, W, 2 or 3].
void affine_grid(NodeView& v) {
  std::optional<Dims> theta = v.shape(0), size_shape = v.shape(1);
  if (theta && theta->size() != 3)
    v.fail("theta " + dims_to_string(*theta) + " must be [N, 2, 3] or [N, 3, 4]");
  if (size_shape && size_shape->size() != 1)
    v.fail("size " + dims_to_string(*size_shape) + " must be 1-D");
  std::optional<Dims> size = v.const_ints(1);
  if (!size) {
    int64_t r = kUnknownDim;
    if (size_shape && (*size_shape)[0] >= 0) r = (*size_shape)[0] - 2;
    if (r < 0 && theta && (*theta)[1] >= 0) r = (*theta)[1];
    if (r != 2 && r != 3) return v.set_output_dtype(0, v.dtype(0));
    Dims out(static_cast<size_t>(r + 2), kUnknownDim);
    out.back() = r;
    return v.set_output(0, v.dtype(0), out);
  }
  if (size->size() != 4 && size->size() != 5)
    v.fail("size " + dims_to_string(*size) + " must be [N, C, H, W] or [N, C, D, H, W]");
  for (int64_t e : *size)
    if (e < 0) v.fail("size " + dims_to_string(*size) + " is negative");
  const int64_t r = static_cast<int64_t>(size->size()) - 2;
  if (theta &&
      (((*theta)[1] >= 0 && (*theta)[1] != r) || ((*theta)[2] >= 0 && (*theta)[2] != r + 1)))
    v.fail("theta " + dims_to_string(*theta) + " does not match size " + dims_to_string(*size));
  Dims out = {infer::merge_dim(v, theta ? (*theta)[0] : kUnknownDim, (*size)[0],
                               "batch extents of theta and size")};
  for (int64_t k = 0; k < r; ++k) out.push_back((*size)[static_cast<size_t>(2 + k)]);
  out.push_back(r);
  v.set_output(0, v.dtype(0), out);
}

const InferEntry kEntries[] = {
    {"", "AffineGrid", adapt<affine_grid>},
    {"", "GridSample", adapt<grid_sample>, 16, 19},
    {"", "GridSample", adapt<grid_sample_20>, 20},
    {"", "Resize", adapt<resize_10>, 10, 10},
    {"", "Resize", adapt<resize>, 11},
    {"", "Upsample", adapt<upsample>},
};

}  // namespace

std::span<const InferEntry> resize_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
