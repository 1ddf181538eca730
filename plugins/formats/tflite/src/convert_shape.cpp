// Shape and data-movement operators: CONCATENATION, MEAN, PAD, PADV2 (layout-aware: their
// axes are remapped when the operand is held in NCHW), RESHAPE, SQUEEZE, TRANSPOSE, GATHER
// (any axis and batch_dims), STRIDED_SLICE (every mask and offset) in TFLite's own layout, on
// quantized values directly. The rest of the family is in convert_layout.cpp.
#include <algorithm>
#include <limits>
#include <loom/plugin.hpp>

#include "convert_support.hpp"
#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

void convert_concat(Converter& c) {
  const TensorView& y = c.output();
  const auto* o = options_of<fb::ConcatenationOptions>(c);
  const int activation = o ? static_cast<int>(o->fused_activation_function()) : 0;
  const int64_t axis = normalized_axis(c, o ? o->axis() : 0, y.rank());
  std::vector<const TensorView*> inputs;
  for (size_t i = 0; i < c.op().inputs.size(); ++i) inputs.push_back(&c.input(i));
  if (inputs.empty()) c.invalid("CONCATENATION without inputs");
  Layout layout = Layout::kNative;
  for (const TensorView* t : inputs)
    if (c.preferred_layout({t}) == Layout::kNchw) layout = Layout::kNchw;
  for (const TensorView* t : inputs)
    if (t->rank() != 4) layout = Layout::kNative;
  const int64_t onnx_axis = layout == Layout::kNchw ? nchw_axis(axis) : axis;
  // Same type and quantization everywhere (TFLite's usual case): concatenate the stored values.
  bool direct = activation == 0;
  for (const TensorView* t : inputs) direct = direct && same_quantization(*t, y);
  std::vector<std::string> names;
  if (direct) {
    for (const TensorView* t : inputs) names.push_back(c.value(*t, layout));
    c.emit("Concat", names, {c.define(y, layout)}, {Attr::Int("axis", onnx_axis)});
    return;
  }
  for (const TensorView* t : inputs) names.push_back(c.float_value(*t, layout));
  const std::string out = c.float_output(y, layout, activation);
  c.emit("Concat", names, {out}, {Attr::Int("axis", onnx_axis)});
  c.finish_output(y, layout, out, activation);
}

void convert_mean(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const auto* o = options_of<fb::ReducerOptions>(c);
  const bool keep_dims = o && o->keep_dims();
  std::vector<int64_t> axes;
  for (int64_t a : c.constant_ints(c.input(1))) axes.push_back(normalized_axis(c, a, x.rank()));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Layout in_layout = c.preferred_layout({&x});
  Layout out_layout = in_layout;
  if (in_layout == Layout::kNchw && !keep_dims) {
    // Without keep_dims the result is laid out as the kept dimensions in input order; from an
    // NCHW input that equals TFLite's order only when C is not kept together with H or W.
    std::vector<int64_t> nhwc_kept, nchw_kept;
    for (int64_t d : {0, 1, 2, 3})
      if (!std::count(axes.begin(), axes.end(), d)) nhwc_kept.push_back(d);
    for (int64_t d : {0, 3, 1, 2})
      if (!std::count(axes.begin(), axes.end(), d)) nchw_kept.push_back(d);
    if (nhwc_kept != nchw_kept) in_layout = Layout::kNative;
    out_layout = Layout::kNative;
  }
  const std::string out = c.float_output(y, out_layout);
  if (axes.empty()) {
    c.emit("Identity", {c.float_value(x, in_layout)}, {out});
  } else {
    std::vector<int64_t> onnx_axes;
    for (int64_t a : axes) onnx_axes.push_back(in_layout == Layout::kNchw ? nchw_axis(a) : a);
    std::sort(onnx_axes.begin(), onnx_axes.end());
    c.emit("ReduceMean", {c.float_value(x, in_layout)}, {out},
           {Attr::Ints("axes", onnx_axes), Attr::Int("keepdims", keep_dims ? 1 : 0)});
  }
  c.finish_output(y, out_layout, out);
}

void convert_pad(Converter& c, bool with_value) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const std::vector<int64_t> paddings = c.constant_ints(c.input(1));
  const int64_t rank = x.rank();
  if (static_cast<int64_t>(paddings.size()) != 2 * rank)
    c.invalid("paddings must have shape [" + std::to_string(rank) + ", 2]");
  for (int64_t p : paddings)
    if (p < 0 || p > kMaxDim) c.invalid("paddings must be in [0, 2^31]");
  const Layout layout = rank == 4 ? c.preferred_layout({&x}) : Layout::kNative;
  std::vector<int64_t> pads(2 * rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t to = layout == Layout::kNchw ? nchw_axis(d) : d;
    pads[to] = paddings[2 * d];
    pads[rank + to] = paddings[2 * d + 1];
  }
  const std::string pads_name = c.constant_i64("pads", pads);
  const TensorView* value = with_value && c.has_input(2) ? &c.input(2) : nullptr;
  if (!x.quantized && !y.quantized && x.dtype == y.dtype) {
    std::vector<std::string> inputs = {c.value(x, layout), pads_name};
    if (value) inputs.push_back(c.value(*value, Layout::kNative));
    c.emit("Pad", inputs, {c.define(y, layout)});
    return;
  }
  // Same stored type in and out: TFLite copies the stored values (even when the scale or zero
  // point changes) and pads with the output's zero point (PAD) or the stored pad value when
  // it shares the output's quantization (PADV2).
  if (same_storage(x, y)) {
    if (value && !same_quantization(*value, y))
      c.unsupported("a PADV2 pad value whose quantization differs from the output's");
    c.emit("Pad",
           {c.value(x, layout), pads_name,
            value ? c.value(*value, Layout::kNative) : c.zero_point_of(y)},
           {c.define(y, layout)});
    return;
  }
  // Quantized: padding with real 0 (TFLite pads with the zero point) or the dequantized value.
  std::vector<std::string> inputs = {c.float_value(x, layout), pads_name};
  if (value) inputs.push_back(c.float_value(*value, Layout::kNative));
  const std::string out = c.float_output(y, layout);
  c.emit("Pad", inputs, {out});
  c.finish_output(y, layout, out);
}

void convert_reshape(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  std::string shape;
  bool has_zero_dim = false;
  if (c.has_input(1) && !c.input(1).is_constant()) {
    shape = c.fresh(y.name + "/shape");
    c.emit("Cast", {c.value(c.input(1), Layout::kNative)}, {shape},
           {Attr::Int("to", LOOM_DTYPE_INT64)});
  } else {
    std::vector<int64_t> dims;
    if (c.has_input(1)) {
      dims = c.constant_ints(c.input(1));
    } else if (const auto* o = options_of<fb::ReshapeOptions>(c); o && o->new_shape()) {
      for (int32_t d : *o->new_shape()) dims.push_back(d);
    } else {
      dims = y.shape;
    }
    has_zero_dim = std::count(dims.begin(), dims.end(), 0) > 0;
    shape = c.constant_i64("reshape_shape", dims);
  }
  if (!same_quantization(x, y)) c.unsupported("RESHAPE that changes the quantization");
  // TFLite's 0 is a zero-sized dimension, never ONNX's "copy the input's" (allowzero = 1).
  c.emit("Reshape", {c.value(x, Layout::kNative), shape}, {c.define(y, Layout::kNative)},
         {Attr::Int("allowzero", has_zero_dim ? 1 : 0)});
}

void convert_squeeze(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  std::vector<int64_t> axes;
  const auto* o = options_of<fb::SqueezeOptions>(c);
  if (o && o->squeeze_dims() && o->squeeze_dims()->size() > 0) {
    for (int32_t a : *o->squeeze_dims()) axes.push_back(normalized_axis(c, a, x.rank()));
  } else {
    for (int64_t d = 0; d < x.rank(); ++d)
      if (x.shape[d] == 1) axes.push_back(d);
  }
  c.emit("Squeeze", {c.value(x, Layout::kNative), c.constant_i64("squeeze_axes", axes)},
         {c.define(y, Layout::kNative)});
}

void convert_transpose(Converter& c) {
  const TensorView& x = c.input(0);
  const std::vector<int64_t> perm = c.constant_ints(c.input(1));
  if (static_cast<int64_t>(perm.size()) != x.rank())
    c.invalid("the permutation has " + std::to_string(perm.size()) + " entries for rank " +
              std::to_string(x.rank()));
  c.emit("Transpose", {c.value(x, Layout::kNative)}, {c.define(c.output(), Layout::kNative)},
         {Attr::Ints("perm", perm)});
}

// GATHER with batch_dims b: ONNX Gather has none, GatherND has them but gathers along the
// first non-batch axis only, so a later axis is moved there first and the result moved back.
void convert_gather(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& indices = c.input(1);
  const TensorView& y = c.output();
  const auto* o = options_of<fb::GatherOptions>(c);
  const int64_t axis = normalized_axis(c, o ? o->axis() : 0, x.rank());
  int64_t batch_dims = o ? o->batch_dims() : 0;
  if (batch_dims < 0) batch_dims += indices.rank();
  if (batch_dims < 0 || batch_dims > indices.rank() || batch_dims > axis)
    c.invalid("batch_dims " + std::to_string(o ? o->batch_dims() : 0) +
              " must be in [0, min(axis, indices rank)]");
  for (int64_t d = 0; d < batch_dims; ++d)
    if (x.shape[d] != indices.shape[d])
      c.invalid("batch dimension " + std::to_string(d) + " differs between params and indices");
  // Stored values move as they are (see same_storage), else via float.
  const bool direct = same_quantization(x, y) || same_storage(x, y);
  std::string params = direct ? c.value(x, Layout::kNative) : c.float_value(x, Layout::kNative);
  const std::string out =
      direct ? c.define(y, Layout::kNative) : c.float_output(y, Layout::kNative);
  if (batch_dims == 0) {
    c.emit("Gather", {params, c.value(indices, Layout::kNative)}, {out}, {Attr::Int("axis", axis)});
    if (!direct) c.finish_output(y, Layout::kNative, out);
    return;
  }
  if (axis > batch_dims) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < batch_dims; ++d) perm.push_back(d);
    perm.push_back(axis);
    for (int64_t d = batch_dims; d < x.rank(); ++d)
      if (d != axis) perm.push_back(d);
    const std::string moved = c.fresh(y.name + "/params");
    c.emit("Transpose", {params}, {moved}, {Attr::Ints("perm", perm)});
    params = moved;
  }
  std::string index64;
  if (indices.is_constant()) {
    index64 = c.constant_i64("gather_indices", c.constant_ints(indices), indices.shape);
  } else {
    index64 = c.fresh(indices.name + "/i64");
    c.emit("Cast", {c.value(indices, Layout::kNative)}, {index64},
           {Attr::Int("to", LOOM_DTYPE_INT64)});
  }
  const std::string tuples = c.fresh(indices.name + "/tuples");
  c.emit("Unsqueeze", {index64, c.constant_i64("axes", {indices.rank()})}, {tuples});
  const int64_t outer = axis - batch_dims, gathered = indices.rank() - batch_dims;
  const std::string result = outer == 0 ? out : c.fresh(y.name + "/nd");
  c.emit("GatherND", {params, tuples}, {result}, {Attr::Int("batch_dims", batch_dims)});
  if (outer != 0) {
    // [B, I, outer, inner] -> [B, outer, I, inner]
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < batch_dims; ++d) perm.push_back(d);
    for (int64_t d = 0; d < outer; ++d) perm.push_back(batch_dims + gathered + d);
    for (int64_t d = 0; d < gathered; ++d) perm.push_back(batch_dims + d);
    for (int64_t d = batch_dims + gathered + outer; d < y.rank(); ++d) perm.push_back(d);
    c.emit("Transpose", {result}, {out}, {Attr::Ints("perm", perm)});
  }
  if (!direct) c.finish_output(y, Layout::kNative, out);
}

// STRIDED_SLICE with TensorFlow's sparse specification: the ellipsis stands for as many full
// dimensions as the other entries leave (an implicit one at the end when there is none),
// new_axis entries insert a dimension of 1, shrink entries drop theirs; offset makes end
// relative to begin. Becomes Unsqueeze (new axes) -> Slice -> Squeeze (shrunk axes).
void convert_strided_slice(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const auto begin = c.constant_ints(c.input(1));
  const auto end = c.constant_ints(c.input(2));
  const auto strides =
      c.has_input(3) ? c.constant_ints(c.input(3)) : std::vector<int64_t>(begin.size(), 1);
  const auto* o = options_of<fb::StridedSliceOptions>(c);
  if (begin.size() != end.size() || begin.size() != strides.size() || begin.size() > 31)
    c.invalid("begin, end and strides must have the same length (at most 31)");
  const int32_t begin_mask = o ? o->begin_mask() : 0, end_mask = o ? o->end_mask() : 0;
  const int32_t shrink_mask = o ? o->shrink_axis_mask() : 0;
  const int32_t ellipsis_mask = o ? o->ellipsis_mask() : 0;
  const int32_t new_axis_mask = o ? o->new_axis_mask() : 0;
  const bool offset = o && o->offset();
  const int64_t n = static_cast<int64_t>(begin.size());
  const int64_t rank = x.rank();
  int64_t ellipsis = -1, dense_entries = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t bit = 1 << i;
    if (ellipsis_mask & bit) {
      if (ellipsis >= 0) c.invalid("more than one ellipsis");
      ellipsis = i;
    } else if (!(new_axis_mask & bit)) {
      ++dense_entries;
    }
  }
  if (dense_entries > rank)
    c.invalid("the slice has " + std::to_string(dense_entries) + " entries for rank " +
              std::to_string(rank));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // Entries of the result before squeezing: new axes and input dimensions, in order.
  std::vector<int64_t> new_axes, squeeze, starts, ends, axes, steps;
  int64_t position = 0, dim = 0;
  auto full = [&](int64_t count) {
    for (int64_t k = 0; k < count; ++k, ++dim, ++position) {
      starts.push_back(0);
      ends.push_back(kMax);
      axes.push_back(position);
      steps.push_back(1);
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    const int32_t bit = 1 << i;
    if (ellipsis_mask & bit) {
      full(rank - dense_entries);
      continue;
    }
    if (new_axis_mask & bit) {
      new_axes.push_back(position++);
      continue;
    }
    int64_t s = strides[i], b = begin[i], e = end[i];
    if (s == 0) c.invalid("a stride is 0");
    const int64_t size = x.shape[dim];
    if (shrink_mask & bit) {
      if (size < 0) c.unsupported("shrinking a dynamic dimension");
      if (b < 0) b += size;
      if (b < 0 || b >= size) c.invalid("shrink index out of range");
      e = b + 1;
      s = 1;
      squeeze.push_back(position);
    } else {
      if (offset) e = b + e;
      if (begin_mask & bit) b = s > 0 ? 0 : kMax;
      if (end_mask & bit) e = s > 0 ? kMax : kMin;
    }
    starts.push_back(b);
    ends.push_back(e);
    axes.push_back(position);
    steps.push_back(s);
    ++dim;
    ++position;
  }
  if (ellipsis < 0) full(rank - dim);
  const bool direct = same_quantization(x, y) || same_storage(x, y);
  std::string current = direct ? c.value(x, Layout::kNative) : c.float_value(x, Layout::kNative);
  const std::string out =
      direct ? c.define(y, Layout::kNative) : c.float_output(y, Layout::kNative);
  if (!new_axes.empty()) {
    const std::string expanded = c.fresh(y.name + "/new_axes");
    c.emit("Unsqueeze", {current, c.constant_i64("axes", new_axes)}, {expanded});
    current = expanded;
  }
  const std::string sliced = squeeze.empty() ? out : c.fresh(y.name + "/slice");
  c.emit("Slice",
         {current, c.constant_i64("starts", starts), c.constant_i64("ends", ends),
          c.constant_i64("axes", axes), c.constant_i64("steps", steps)},
         {sliced});
  if (!squeeze.empty()) c.emit("Squeeze", {sliced, c.constant_i64("squeeze_axes", squeeze)}, {out});
  if (!direct) c.finish_output(y, Layout::kNative, out);
}

}  // namespace

bool convert_shape(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kConcatenation:
      convert_concat(c);
      return true;
    case BuiltinOp::kMean:
      convert_mean(c);
      return true;
    case BuiltinOp::kPad:
      convert_pad(c, false);
      return true;
    case BuiltinOp::kPadv2:
      convert_pad(c, true);
      return true;
    case BuiltinOp::kReshape:
      convert_reshape(c);
      return true;
    case BuiltinOp::kSqueeze:
      convert_squeeze(c);
      return true;
    case BuiltinOp::kTranspose:
      convert_transpose(c);
      return true;
    case BuiltinOp::kGather:
      convert_gather(c);
      return true;
    case BuiltinOp::kStridedSlice:
      convert_strided_slice(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
