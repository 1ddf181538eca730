// Ops that cut or pad along axes: Slice (attributes or constant inputs, negative steps),
// Pad (attribute or input forms, opset-18 axes), CenterCropPad, Col2Im.
#include <algorithm>
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

// Extent of one sliced dimension, following the clamping rules of the ONNX Slice spec.
int64_t sliced_extent(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim < 0) return kUnknownDim;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start - 1) / step + 1 : 0;  // ceil without overflow
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end) return 0;
  // |step| as unsigned, which holds even INT64_MIN's magnitude.
  uint64_t magnitude = static_cast<uint64_t>(-(step + 1)) + 1;
  return static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude) + 1;
}

// Slice-1: attributes starts, ends, axes. Slice-10+: inputs starts, ends, axes?, steps?.
void slice(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  bool attribute_form = v.attrs().has("starts");
  std::optional<Dims> starts = attribute_form ? v.ints_attr("starts") : v.const_ints(1);
  std::optional<Dims> ends = attribute_form ? v.ints_attr("ends") : v.const_ints(2);
  std::optional<Dims> axes = attribute_form ? v.ints_attr("axes") : v.const_ints(3);
  bool axes_pending = !attribute_form && v.has_input(3) && !axes;
  std::optional<Dims> steps = attribute_form ? std::nullopt : v.const_ints(4);
  bool steps_pending = !attribute_form && v.has_input(4) && !steps;
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  int64_t rank = static_cast<int64_t>(in->size());
  if (!starts || !ends || axes_pending || steps_pending) {
    // Bounds known only at run time: the sliced axes lose their extent.
    Dims out = *in;
    if (axes && !axes_pending) {
      for (int64_t a : *axes) out[static_cast<size_t>(v.normalize_axis(a, rank))] = kUnknownDim;
    } else {
      std::fill(out.begin(), out.end(), kUnknownDim);
    }
    return v.set_output(0, v.dtype(0), out);
  }
  if (starts->size() != ends->size())
    v.fail("starts " + dims_to_string(*starts) + " and ends " + dims_to_string(*ends) +
           " differ in length");
  if (!axes) {
    axes = Dims(starts->size());
    for (size_t k = 0; k < axes->size(); ++k) (*axes)[k] = static_cast<int64_t>(k);
  }
  if (!steps) steps = Dims(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size())
    v.fail("starts, ends, axes and steps must have the same length, got " +
           dims_to_string(*starts) + ", " + dims_to_string(*ends) + ", " + dims_to_string(*axes) +
           ", " + dims_to_string(*steps));
  Dims out = *in;
  std::vector<bool> seen(in->size(), false);
  for (size_t k = 0; k < starts->size(); ++k) {
    size_t axis = static_cast<size_t>(v.normalize_axis((*axes)[k], rank));
    if (seen[axis]) v.fail("axes " + dims_to_string(*axes) + " repeat an axis");
    seen[axis] = true;
    if ((*steps)[k] == 0) v.fail("steps " + dims_to_string(*steps) + " contain a zero");
    out[axis] = sliced_extent((*in)[axis], (*starts)[k], (*ends)[k], (*steps)[k]);
  }
  v.set_output(0, v.dtype(0), out);
}

// Pad-1 (attribute paddings), Pad-2 (attribute pads), Pad-11+ (input pads, opset-18 axes).
void pad(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  std::optional<Dims> pads = v.ints_attr("pads");
  if (!pads) pads = v.ints_attr("paddings");
  if (!pads) pads = v.const_ints(1);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  int64_t rank = static_cast<int64_t>(in->size());
  std::optional<Dims> axes;
  if (v.has_input(3)) {
    axes = v.const_ints(3);
    if (!axes) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank));
  }
  if (!pads) {
    // Unknown pads change only the padded axes, which (without constant axes) may be all.
    return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank));
  }
  if (!axes) {
    axes = Dims(in->size());
    for (size_t k = 0; k < axes->size(); ++k) (*axes)[k] = static_cast<int64_t>(k);
  }
  size_t n = axes->size();
  if (pads->size() != 2 * n)
    v.fail("pads " + dims_to_string(*pads) + " must have " + std::to_string(2 * n) +
           " values (begin and end for each of " + std::to_string(n) + " axes)");
  Dims out = *in;
  for (size_t k = 0; k < n; ++k) {
    size_t axis = static_cast<size_t>(v.normalize_axis((*axes)[k], rank));
    if (out[axis] < 0) continue;
    int64_t extent =
        infer::checked_add(v, infer::checked_add(v, out[axis], (*pads)[k]), (*pads)[k + n]);
    if (extent < 0)
      v.fail("pads " + dims_to_string(*pads) + " remove more than the extent of input " +
             dims_to_string(*in));
    out[axis] = extent;
  }
  v.set_output(0, v.dtype(0), out);
}

// CenterCropPad(input, shape): the listed axes (default all) take the extents in `shape`.
void center_crop_pad(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  int64_t rank = static_cast<int64_t>(in->size());
  std::optional<Dims> target = v.const_ints(1);
  if (!target) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank));
  std::optional<Dims> axes = v.ints_attr("axes");
  if (!axes) {
    axes = Dims(in->size());
    for (size_t k = 0; k < axes->size(); ++k) (*axes)[k] = static_cast<int64_t>(k);
  }
  if (axes->size() != target->size())
    v.fail("shape " + dims_to_string(*target) + " does not have one extent per axis of " +
           dims_to_string(*axes));
  Dims out = *in;
  for (size_t k = 0; k < axes->size(); ++k) {
    if ((*target)[k] < 0) v.fail("shape " + dims_to_string(*target) + " has a negative extent");
    out[static_cast<size_t>(v.normalize_axis((*axes)[k], rank))] = (*target)[k];
  }
  v.set_output(0, v.dtype(0), out);
}

// Col2Im(input [N, C*prod(block), L], image_shape, block_shape): [N, C, image_shape...].
void col2im(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  std::optional<Dims> image = v.const_ints(1), block = v.const_ints(2);
  if (in && in->size() != 3) v.fail("input " + dims_to_string(*in) + " must be 3-D (N, C*k, L)");
  if (!image) {
    std::optional<Dims> s = v.shape(1);
    if (s && s->size() == 1 && (*s)[0] >= 0)
      return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>((*s)[0] + 2));
    return v.set_output_dtype(0, v.dtype(0));
  }
  Dims out{in ? (*in)[0] : kUnknownDim, kUnknownDim};
  if (in && block && (*in)[1] >= 0) {
    int64_t k = infer::element_count(v, *block);
    if (k <= 0 || (*in)[1] % k != 0)
      v.fail("input channels of " + dims_to_string(*in) + " are not divisible by the block size " +
             dims_to_string(*block));
    out[1] = (*in)[1] / k;
  }
  out.insert(out.end(), image->begin(), image->end());
  v.set_output(0, v.dtype(0), out);
}

const InferEntry kEntries[] = {
    {"", "Slice", adapt<slice>},
    {"", "Pad", adapt<pad>},
    {"", "CenterCropPad", adapt<center_crop_pad>},
    {"", "Col2Im", adapt<col2im>},
};

}  // namespace

std::span<const InferEntry> slicing_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
