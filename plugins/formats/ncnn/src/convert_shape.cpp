// Layers that move data without arithmetic: Concat, Split, Slice, Crop, Reshape, Flatten,
// Permute, Padding. ncnn axes count from the outermost batch-free dimension, so ncnn axis k is
// Loom axis k+1.
#include <algorithm>
#include <limits>

#include "conversion.hpp"

namespace loom::ncnnfmt {
namespace {

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

int loom_axis(const Layer& layer, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    layer_error(layer, "axis " + std::to_string(axis) + " is out of range for a " +
                           std::to_string(rank) + "-D blob");
  return static_cast<int>(axis < 0 ? axis + rank : axis) + 1;
}

void emit_slice(Context& ctx, const Layer& layer, const std::string& in, const std::string& out,
                const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                const std::vector<int64_t>& axes, const std::string& suffix) {
  ctx.node("Slice", layer.name + suffix,
           {in, ctx.constant_ints(layer.name + "/starts", starts),
            ctx.constant_ints(layer.name + "/ends", ends),
            ctx.constant_ints(layer.name + "/axes", axes)},
           {out});
}

}  // namespace

void convert_concat(Context& ctx, const Layer& layer) {
  if (layer.bottoms.empty() || layer.tops.size() != 1)
    layer_error(layer, "needs inputs and one output");
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  int axis = loom_axis(layer, layer.params.get_int(0, 0), rank);
  ctx.attr(ctx.node("Concat", layer.name, layer.bottoms, layer.tops), "axis", int64_t{axis});
  Shape out = ctx.shape(layer.bottoms[0]);
  for (size_t i = 1; i < layer.bottoms.size(); ++i) {
    const Shape& s = ctx.shape(layer.bottoms[i]);
    if (s.size() != out.size()) layer_error(layer, "its inputs have different ranks");
    out[axis] = out[axis] < 0 || s[axis] < 0 ? -1 : out[axis] + s[axis];
  }
  ctx.set_shape(layer.tops[0], out);
}

void convert_split(Context& ctx, const Layer& layer) {
  if (layer.bottoms.size() != 1 || layer.tops.empty())
    layer_error(layer, "needs one input and outputs");
  for (size_t i = 0; i < layer.tops.size(); ++i) {
    ctx.node("Identity", layer.name + "/" + std::to_string(i), layer.bottoms, {layer.tops[i]});
    ctx.set_shape(layer.tops[i], ctx.shape(layer.bottoms[0]));
  }
}

void convert_slice(Context& ctx, const Layer& layer) {
  if (layer.bottoms.size() != 1 || layer.tops.empty())
    layer_error(layer, "needs one input and outputs");
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  int axis = loom_axis(layer, layer.params.get_int(1, 0), rank);
  std::vector<int32_t> slices = layer.params.get_ints(0);
  std::vector<int32_t> indices = layer.params.get_ints(2);
  size_t n = layer.tops.size();
  const Shape& in = ctx.shape(layer.bottoms[0]);
  int64_t extent = in[axis];
  std::vector<int64_t> starts(n), ends(n);
  if (!indices.empty()) {
    // Positions where each slice ends (the last runs to the end).
    if (indices.size() + 1 != n && indices.size() != n)
      layer_error(layer, "has " + std::to_string(indices.size()) + " indices for " +
                             std::to_string(n) + " outputs");
    int64_t start = 0;
    for (size_t i = 0; i < n; ++i) {
      starts[i] = start;
      ends[i] = i < indices.size() ? indices[i] : kToEnd;
      start = ends[i];
    }
  } else {
    if (slices.size() != n)
      layer_error(layer, "has " + std::to_string(slices.size()) + " slices for " +
                             std::to_string(n) + " outputs");
    bool all_even = true;
    for (int32_t s : slices) all_even &= s == kNotGiven;
    if (all_even) {
      // Equal parts: Split without sizes.
      std::vector<std::string> outs = layer.tops;
      ctx.attr(ctx.node("Split", layer.name, layer.bottoms, outs), "axis", int64_t{axis});
      for (const std::string& t : layer.tops) {
        Shape s = in;
        s[axis] = extent < 0 ? -1 : extent / static_cast<int64_t>(n);
        ctx.set_shape(t, s);
      }
      return;
    }
    int64_t start = 0;
    for (size_t i = 0; i < n; ++i) {
      int64_t size = slices[i];
      if (size == kNotGiven) {
        // ncnn: the rest of the axis shared by the remaining outputs.
        if (i + 1 == n) {
          size = -1;
        } else if (extent >= 0) {
          size = (extent - start) / static_cast<int64_t>(n - i);
        } else {
          layer_unsupported(
              layer, "a -233 slice before the last needs the input's extent, which is unknown");
        }
      } else if (size < 0) {
        layer_error(layer, "slice size " + std::to_string(size) + " is negative");
      }
      starts[i] = start;
      ends[i] = size < 0 ? kToEnd : start + size;
      if (size >= 0) start += size;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (starts[i] < 0 || ends[i] < starts[i]) layer_error(layer, "slice positions must increase");
    emit_slice(ctx, layer, layer.bottoms[0], layer.tops[i], {starts[i]}, {ends[i]}, {axis},
               "/" + std::to_string(i));
    Shape s = in;
    s[axis] = ends[i] == kToEnd
                  ? (extent < 0 ? -1 : extent - starts[i])
                  : (extent < 0 ? ends[i] - starts[i] : std::min(ends[i], extent) - starts[i]);
    ctx.set_shape(layer.tops[i], s);
  }
}

void convert_crop(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  if (rank > 3) layer_unsupported(layer, "only 1-D to 3-D blobs are supported");
  Shape out = ctx.shape(layer.bottoms[0]);
  std::vector<int64_t> starts, ends, axes;
  std::vector<int32_t> s9 = p.get_ints(9), e10 = p.get_ints(10), a11 = p.get_ints(11);
  if (!s9.empty() || !e10.empty()) {
    // numpy-style starts/ends/axes.
    if (s9.size() != e10.size() || (!a11.empty() && a11.size() != s9.size()))
      layer_error(layer, "starts, ends and axes must have the same length");
    for (size_t i = 0; i < s9.size(); ++i) {
      int axis = loom_axis(layer, a11.empty() ? static_cast<int64_t>(i) : a11[i], rank);
      starts.push_back(s9[i]);
      ends.push_back(e10[i] >= (1 << 30) ? kToEnd : e10[i]);
      axes.push_back(axis);
      out[axis] = -1;
    }
  } else {
    // Offsets and sizes per ncnn dimension: w, h, (d), c.
    struct Dim {
      int off, size, off2, ncnn_axis_from_inner;
    };
    const Dim dims[] = {{p.get_int(0, 0), p.get_int(3, 0), p.get_int(6, 0), 0},
                        {p.get_int(1, 0), p.get_int(4, 0), p.get_int(7, 0), 1},
                        {p.get_int(2, 0), p.get_int(5, 0), p.get_int(8, 0), 2}};
    for (const Dim& d : dims) {
      if (d.ncnn_axis_from_inner >= rank) continue;
      // size: -233 = the rest (less offset2), -234 = the rest less one, else at most `size`.
      if (d.off < 0 || d.off2 < 0 || d.size == 0 ||
          (d.size < 0 && d.size != kNotGiven && d.size != -234))
        layer_error(layer,
                    "offsets must be non-negative and sizes positive, -233 or -234 (a crop "
                    "to the size of a second input is not supported)");
      if (d.off == 0 && d.off2 == 0 && d.size == kNotGiven) continue;
      int axis = rank - d.ncnn_axis_from_inner;  // Loom axis
      int64_t end = d.size > 0       ? int64_t{d.off} + d.size
                    : d.size == -234 ? -1 - int64_t{d.off2}
                                     : (d.off2 > 0 ? -int64_t{d.off2} : kToEnd);
      starts.push_back(d.off);
      ends.push_back(end);
      axes.push_back(axis);
      int64_t extent = out[axis];
      int64_t rest = extent < 0 ? -1 : extent - d.off - d.off2 - (d.size == -234 ? 1 : 0);
      out[axis] = d.size > 0 ? (extent < 0 ? -1 : std::min<int64_t>(d.size, extent - d.off)) : rest;
    }
  }
  if (axes.empty()) {
    ctx.node("Identity", layer.name, layer.bottoms, layer.tops);
  } else {
    emit_slice(ctx, layer, layer.bottoms[0], layer.tops[0], starts, ends, axes, "");
  }
  ctx.set_shape(layer.tops[0], out);
}

void convert_reshape(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  if (p.get_int(3, 0) != 0)
    layer_unsupported(layer, "permute=1 (Caffe-order reshape) is not supported");
  int64_t w = p.get_int(0, kNotGiven), h = p.get_int(1, kNotGiven), d = p.get_int(11, kNotGiven),
          c = p.get_int(2, kNotGiven);
  std::vector<int64_t> target;  // ncnn order, outermost first
  if (h == kNotGiven)
    target = {w};
  else if (c == kNotGiven)
    target = {h, w};
  else if (d == kNotGiven)
    target = {c, h, w};
  else
    target = {c, d, h, w};
  const Shape& in = ctx.shape(layer.bottoms[0]);
  int in_rank = in.empty() ? -1 : static_cast<int>(in.size()) - 1;
  Shape shape = {1};
  int inferred = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t v = target[i];
    if (v == kNotGiven) layer_error(layer, "leaves an inner dimension out");
    if (v == 0) {
      // ncnn: 0 keeps the same named dimension (w, h, c) of the input.
      int from_inner = static_cast<int>(target.size() - 1 - i);
      if (in_rank < 0 || from_inner >= in_rank || in[in_rank - from_inner] < 0)
        layer_unsupported(layer, "a 0 (keep) dimension needs the input's shape, which is unknown");
      v = in[in_rank - from_inner];
    } else if (v == -1) {
      ++inferred;
    } else if (v < 0) {
      layer_error(layer, "dimension " + std::to_string(v) + " is invalid");
    }
    shape.push_back(v);
  }
  if (inferred > 1) layer_error(layer, "more than one dimension is -1");
  ctx.node("Reshape", layer.name,
           {layer.bottoms[0], ctx.constant_ints(layer.name + "/shape", shape)}, layer.tops);
  ctx.set_shape(layer.tops[0], shape);  // a -1 stays "unknown extent"
}

void convert_flatten(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  ctx.attr(ctx.node("Flatten", layer.name, layer.bottoms, layer.tops), "axis", int64_t{1});
  const Shape& in = ctx.shape(layer.bottoms[0]);
  int64_t n = in.empty() ? -1 : 1;
  for (size_t i = 1; i < in.size(); ++i) n = n < 0 || in[i] < 0 ? -1 : n * in[i];
  ctx.set_shape(layer.tops[0], {1, n});
}

void convert_permute(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  int order = layer.params.get_int(0, 0);
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  std::vector<int64_t> perm;
  if (rank == 2 && (order == 0 || order == 1)) {
    perm = order == 0 ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 2, 1};
  } else if (rank == 3 && order >= 0 && order <= 5) {
    // order_type names the output's (w, h, c) in input dimensions; as NCHW permutations:
    static const int64_t kPerms[6][4] = {{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3},
                                         {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1}};
    perm.assign(kPerms[order], kPerms[order] + 4);
  } else if (rank == 1 && order == 0) {
    perm = {0, 1};
  } else {
    layer_unsupported(layer, "order_type " + std::to_string(order) + " on a " +
                                 std::to_string(rank) + "-D blob is not supported");
  }
  ctx.attr(ctx.node("Transpose", layer.name, layer.bottoms, layer.tops), "perm", perm);
  const Shape& in = ctx.shape(layer.bottoms[0]);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = in[static_cast<size_t>(perm[i])];
  ctx.set_shape(layer.tops[0], out);
}

void convert_padding(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  const ParamDict& p = layer.params;
  int64_t top = p.get_int(0, 0), bottom = p.get_int(1, 0), left = p.get_int(2, 0),
          right = p.get_int(3, 0);
  int64_t front = p.get_int(7, 0), behind = p.get_int(8, 0);
  int type = p.get_int(4, 0);
  if (p.get_int(6, 0) != 0) layer_unsupported(layer, "per-channel pad values are not supported");
  for (int64_t v : {top, bottom, left, right, front, behind})
    if (v < 0 || v > 65536) layer_error(layer, "padding amounts must be in 0..65536");
  static const char* const kModes[] = {"constant", "edge", "reflect"};
  if (type < 0 || type > 2)
    layer_error(layer, "type must be 0 (constant), 1 (replicate) or 2 (reflect)");
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  std::vector<int64_t> pads;
  if (rank == 1)
    pads = {0, left, 0, right};
  else if (rank == 2)
    pads = {0, top, left, 0, bottom, right};
  else if (rank == 3)
    pads = {0, front, top, left, 0, behind, bottom, right};
  else
    layer_unsupported(layer, "only 1-D to 3-D blobs are supported");
  std::string value = ctx.constant(layer.name + "/value", {}, {p.get_float(5, 0.f)});
  auto* n = ctx.node("Pad", layer.name,
                     {layer.bottoms[0], ctx.constant_ints(layer.name + "/pads", pads), value},
                     layer.tops);
  ctx.attr(n, "mode", std::string(kModes[type]));
  Shape out = ctx.shape(layer.bottoms[0]);
  size_t half = pads.size() / 2;
  for (size_t i = 0; i < half; ++i)
    if (out[i] >= 0) out[i] += pads[i] + pads[i + half];
  ctx.set_shape(layer.tops[0], out);
}

}  // namespace loom::ncnnfmt
