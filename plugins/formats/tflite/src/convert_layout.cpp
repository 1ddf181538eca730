// Data-movement operators: SPLIT, SPLIT_V, PACK, UNPACK, GATHER_ND, MIRROR_PAD, TILE,
// EXPAND_DIMS, SLICE, BROADCAST_TO, SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND,
// BATCH_TO_SPACE_ND, REVERSE_V2, TOP_K_V2 (SHAPE, FILL, RANGE and ONE_HOT, which make new
// values, are in convert_generate.cpp).
//
// They move values without computing on them, so quantized tensors are moved as stored when
// input and output share the quantization. When only the scale or zero point differs, the
// operators whose TFLite kernels copy the stored values anyway (SPLIT, SPLIT_V, GATHER_ND,
// TILE, SLICE, BROADCAST_TO, REVERSE_V2, TOP_K_V2, SPACE_TO_DEPTH, DEPTH_TO_SPACE: checked
// against the reference interpreter) do the same, so results match TFLite; the others (TFLite
// refuses such models) go through dequantize -> op -> quantize. Operators whose axes can be
// remapped (SPLIT, SPLIT_V, TILE, SLICE, REVERSE_V2, MIRROR_PAD, UNPACK of the channel axis, the
// space/batch moves) work on the nchw form when their input already has it, so a CNN gets no
// Transpose round trip around them; SPACE_TO_DEPTH and DEPTH_TO_SPACE always work in nchw (ONNX
// defines them there).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <loom/plugin.hpp>
#include <numeric>

#include "convert_support.hpp"
#include "op_codes.hpp"
#include "schema_access.hpp"

namespace loom::tflite {
namespace {

// Emits Split of `x` along TFLite axis `axis` into `sizes`, in the layout of the input.
void emit_split(Converter& c, const TensorView& x, int64_t axis,
                const std::vector<int64_t>& sizes) {
  const auto outputs = all_outputs(c);
  if (outputs.size() != sizes.size())
    c.invalid("the operator splits into " + std::to_string(sizes.size()) + " parts but has " +
              std::to_string(outputs.size()) + " outputs");
  const Layout layout = agnostic_layout(c, x);
  const Mover m = mover(c, {&x}, outputs, Requant::kCopy);
  std::vector<std::string> names;
  for (const TensorView* y : outputs) {
    if (y->rank() != x.rank())
      c.invalid("output '" + y->name + "' has rank " + std::to_string(y->rank()) + ", expected " +
                std::to_string(x.rank()));
    names.push_back(m.out(*y, layout));
  }
  c.emit("Split", {m.in(x, layout), c.constant_i64("split", sizes)}, names,
         {Attr::Int("axis", onnx_axis(layout, axis))});
  for (size_t i = 0; i < outputs.size(); ++i) m.finish(*outputs[i], layout, names[i]);
}

void convert_split(Converter& c) {
  // SPLIT takes the axis first, the tensor second.
  const TensorView& x = c.input(1);
  const int64_t axis =
      normalized_axis(c, constant_scalar(c, c.input(0), "the split axis"), x.rank());
  const auto* o = options_of<fb::SplitOptions>(c);
  const int64_t n = o ? o->num_splits() : 0;
  if (n <= 0) c.invalid("num_splits must be positive, not " + std::to_string(n));
  if (n != static_cast<int64_t>(c.op().outputs.size()))
    c.invalid("num_splits " + std::to_string(n) + " but " + std::to_string(c.op().outputs.size()) +
              " outputs");
  const int64_t dim = x.shape[axis];
  if (dim < 0) c.unsupported("SPLIT along a dynamic dimension");
  if (dim % n != 0)
    c.invalid("dimension " + std::to_string(axis) + " (" + std::to_string(dim) +
              ") is not divisible by num_splits " + std::to_string(n));
  emit_split(c, x, axis, std::vector<int64_t>(n, dim / n));
}

void convert_split_v(Converter& c) {
  const TensorView& x = c.input(0);
  std::vector<int64_t> sizes = c.constant_ints(c.input(1));
  const int64_t axis =
      normalized_axis(c, constant_scalar(c, c.input(2), "the split axis"), x.rank());
  const int64_t dim = x.shape[axis];
  if (dim < 0) c.unsupported("SPLIT_V along a dynamic dimension");
  const auto* o = options_of<fb::SplitVOptions>(c);
  if (o && o->num_splits() != static_cast<int64_t>(sizes.size()))
    c.invalid("num_splits " + std::to_string(o->num_splits()) + " disagrees with the " +
              std::to_string(sizes.size()) + " size_splits");
  // One size may be -1: whatever the others leave.
  int64_t known = 0, unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && unknown < 0) {
      unknown = static_cast<int64_t>(i);
    } else if (sizes[i] < 0 || sizes[i] > dim) {
      c.invalid("size_splits entry " + std::to_string(sizes[i]) + " is invalid");
    } else {
      known += sizes[i];
    }
  }
  if (unknown >= 0) {
    if (known > dim) c.invalid("size_splits add up to more than the dimension");
    sizes[unknown] = dim - known;
  } else if (known != dim) {
    c.invalid("size_splits add up to " + std::to_string(known) + ", not the dimension " +
              std::to_string(dim));
  }
  emit_split(c, x, axis, sizes);
}

void convert_pack(Converter& c) {
  const TensorView& y = c.output();
  const auto* o = options_of<fb::PackOptions>(c);
  const size_t n = c.op().inputs.size();
  if (n == 0) c.invalid("PACK without inputs");
  if (o && o->values_count() != static_cast<int64_t>(n))
    c.invalid("values_count " + std::to_string(o->values_count()) + " but " + std::to_string(n) +
              " inputs");
  const int64_t axis = normalized_axis(c, o ? o->axis() : 0, y.rank());
  std::vector<const TensorView*> inputs;
  for (size_t i = 0; i < n; ++i) {
    inputs.push_back(&c.input(i));
    if (inputs.back()->shape != inputs.front()->shape)
      c.invalid("the inputs have different shapes");
  }
  if (inputs.front()->rank() + 1 != y.rank())
    c.invalid("the output rank is not the input rank + 1");
  bool direct = true;
  for (const TensorView* t : inputs) direct = direct && same_quantization(*t, y);
  const Mover m{c, direct};
  const std::string axes = c.constant_i64("pack_axis", {axis});
  std::vector<std::string> parts;
  for (const TensorView* t : inputs) {
    parts.push_back(c.fresh(y.name + "/part"));
    c.emit("Unsqueeze", {m.in(*t, Layout::kNative), axes}, {parts.back()});
  }
  const std::string out = m.out(y, Layout::kNative);
  c.emit("Concat", parts, {out}, {Attr::Int("axis", axis)});
  m.finish(y, Layout::kNative, out);
}

void convert_unpack(Converter& c) {
  const TensorView& x = c.input(0);
  const auto* o = options_of<fb::UnpackOptions>(c);
  const int64_t axis = normalized_axis(c, o ? o->axis() : 0, x.rank());
  const auto outputs = all_outputs(c);
  const int64_t dim = x.shape[axis];
  if (dim < 0) c.unsupported("UNPACK along a dynamic dimension");
  if ((o && o->num() != dim) || static_cast<int64_t>(outputs.size()) != dim)
    c.invalid("num and the number of outputs must equal dimension " + std::to_string(axis) + " (" +
              std::to_string(dim) + ")");
  // Unpacking the channels of an nchw value leaves [N, H, W] pieces in TFLite's own order.
  const Layout in_layout =
      agnostic_layout(c, x) == Layout::kNchw && axis == 3 ? Layout::kNchw : Layout::kNative;
  const int64_t split_axis = onnx_axis(in_layout, axis);
  const Mover m = mover(c, {&x}, outputs, Requant::kRequantize);
  std::vector<std::string> pieces;
  for (const TensorView* y : outputs) {
    if (y->rank() + 1 != x.rank()) c.invalid("output '" + y->name + "' has the wrong rank");
    pieces.push_back(c.fresh(y->name + "/piece"));
  }
  c.emit("Split", {m.in(x, in_layout), c.constant_i64("split", std::vector<int64_t>(dim, 1))},
         pieces, {Attr::Int("axis", split_axis)});
  const std::string axes = c.constant_i64("unpack_axis", {split_axis});
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string out = m.out(*outputs[i], Layout::kNative);
    c.emit("Squeeze", {pieces[i], axes}, {out});
    m.finish(*outputs[i], Layout::kNative, out);
  }
}

void convert_gather_nd(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& indices = c.input(1);
  const TensorView& y = c.output();
  if (indices.rank() < 1) c.invalid("the indices must have rank >= 1");
  const int64_t depth = indices.shape.back();
  if (depth < 1 || depth > x.rank())
    c.invalid("the last indices dimension " + std::to_string(depth) + " must be in [1, " +
              std::to_string(x.rank()) + "]");
  const Mover m = mover(c, {&x}, {&y}, Requant::kCopy);
  const std::string out = m.out(y, Layout::kNative);
  c.emit("GatherND", {m.in(x, Layout::kNative), int64_operand(c, indices, "gather_nd_indices")},
         {out});
  m.finish(y, Layout::kNative, out);
}

void convert_mirror_pad(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const std::vector<int64_t> paddings = c.constant_ints(c.input(1));
  const int64_t rank = x.rank();
  if (static_cast<int64_t>(paddings.size()) != 2 * rank)
    c.invalid("paddings must have shape [" + std::to_string(rank) + ", 2]");
  const auto* o = options_of<fb::MirrorPadOptions>(c);
  const int mode = o ? o->mode() : 0;
  if (mode != 0 && mode != 1) c.invalid("unknown mirror pad mode " + std::to_string(mode));
  const bool symmetric = mode == 1;
  for (int64_t d = 0; d < rank; ++d) {
    // REFLECT leaves the edge out, so it can repeat at most n - 1 elements; SYMMETRIC n.
    const int64_t limit = symmetric ? x.shape[d] : x.shape[d] - 1;
    for (int64_t p : {paddings[2 * d], paddings[2 * d + 1]})
      if (p < 0 || p > std::max<int64_t>(limit, 0) || (p > 0 && x.shape[d] < 0))
        c.invalid("padding " + std::to_string(p) + " of dimension " + std::to_string(d) +
                  " is outside [0, " + std::to_string(limit) + "]");
  }
  const Layout layout = agnostic_layout(c, x);
  const Mover m = mover(c, {&x}, {&y}, Requant::kRequantize);
  const std::string out = m.out(y, layout);
  if (!symmetric) {
    std::vector<int64_t> pads(2 * rank);
    for (int64_t d = 0; d < rank; ++d) {
      pads[onnx_axis(layout, d)] = paddings[2 * d];
      pads[rank + onnx_axis(layout, d)] = paddings[2 * d + 1];
    }
    c.emit("Pad", {m.in(x, layout), c.constant_i64("pads", pads)}, {out},
           {Attr::String("mode", "reflect")});
    m.finish(y, layout, out);
    return;
  }
  // ONNX Pad has no symmetric mode: each padded axis becomes Concat(mirrored head, x,
  // mirrored tail), the mirrored parts being Slices with step -1.
  std::string current = m.in(x, layout);
  std::vector<int64_t> padded_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (paddings[2 * d] == 0 && paddings[2 * d + 1] == 0) continue;
    padded_dims.push_back(d);
  }
  if (padded_dims.empty()) {
    c.emit("Identity", {current}, {out});
    m.finish(y, layout, out);
    return;
  }
  for (size_t k = 0; k < padded_dims.size(); ++k) {
    const int64_t d = padded_dims[k], n = x.shape[d];
    const int64_t before = paddings[2 * d], after = paddings[2 * d + 1];
    const std::string axis = c.constant_i64("axes", {onnx_axis(layout, d)});
    const std::string step = c.constant_i64("steps", {-1});
    std::vector<std::string> parts;
    if (before > 0) {
      parts.push_back(c.fresh(y.name + "/head"));
      c.emit("Slice",
             {current, c.constant_i64("starts", {before - 1}), c.constant_i64("ends", {kInt64Min}),
              axis, step},
             {parts.back()});
    }
    parts.push_back(current);
    if (after > 0) {
      parts.push_back(c.fresh(y.name + "/tail"));
      c.emit("Slice",
             {current, c.constant_i64("starts", {n - 1}),
              c.constant_i64("ends", {after == n ? kInt64Min : n - 1 - after}), axis, step},
             {parts.back()});
    }
    const std::string next = k + 1 == padded_dims.size() ? out : c.fresh(y.name + "/padded");
    c.emit("Concat", parts, {next}, {Attr::Int("axis", onnx_axis(layout, d))});
    current = next;
  }
  m.finish(y, layout, out);
}

void convert_tile(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const TensorView& multiples = c.input(1);
  if (multiples.rank() != 1 || multiples.shape[0] != x.rank())
    c.invalid("multiples must be a vector of " + std::to_string(x.rank()) + " entries");
  Layout layout = Layout::kNative;
  std::string reps;
  if (multiples.is_constant()) {
    std::vector<int64_t> m = c.constant_ints(multiples);
    for (int64_t r : m)
      if (r < 0 || r > kMaxDim) c.invalid("multiple " + std::to_string(r) + " is out of range");
    std::vector<int64_t> result;
    for (size_t d = 0; d < m.size(); ++d) result.push_back(std::max<int64_t>(x.shape[d], 1) * m[d]);
    check_elements(c, result);
    layout = agnostic_layout(c, x);
    if (layout == Layout::kNchw) m = permute_dims(m, kToNchw);
    reps = c.constant_i64("repeats", m);
  } else {
    reps = int64_operand(c, multiples, "repeats");
  }
  const Mover m = mover(c, {&x}, {&y}, Requant::kCopy);
  const std::string out = m.out(y, layout);
  c.emit("Tile", {m.in(x, layout), reps}, {out});
  m.finish(y, layout, out);
}

void convert_expand_dims(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  int64_t axis = constant_scalar(c, c.input(1), "the EXPAND_DIMS axis");
  if (axis < -(x.rank() + 1) || axis > x.rank())
    c.invalid("axis " + std::to_string(axis) + " is outside [" + std::to_string(-x.rank() - 1) +
              ", " + std::to_string(x.rank()) + "]");
  if (axis < 0) axis += x.rank() + 1;
  const Mover m = mover(c, {&x}, {&y}, Requant::kRequantize);
  const std::string out = m.out(y, Layout::kNative);
  c.emit("Unsqueeze", {m.in(x, Layout::kNative), c.constant_i64("axes", {axis})}, {out});
  m.finish(y, Layout::kNative, out);
}

void convert_slice(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const std::vector<int64_t> begin = c.constant_ints(c.input(1));
  const std::vector<int64_t> size = c.constant_ints(c.input(2));
  if (static_cast<int64_t>(begin.size()) != x.rank() || size.size() != begin.size())
    c.invalid("begin and size must have " + std::to_string(x.rank()) + " entries");
  const Layout layout = agnostic_layout(c, x);
  std::vector<int64_t> starts, ends, axes;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const int64_t n = x.shape[d];
    // size -1: to the end of the dimension.
    if (begin[d] < 0 || (n >= 0 && begin[d] > n) || size[d] < -1 ||
        (n >= 0 && size[d] >= 0 && begin[d] + size[d] > n))
      c.invalid("begin " + std::to_string(begin[d]) + " and size " + std::to_string(size[d]) +
                " do not fit dimension " + std::to_string(d) + " of " + std::to_string(n));
    starts.push_back(begin[d]);
    ends.push_back(size[d] == -1 ? kInt64Max : begin[d] + size[d]);
    axes.push_back(onnx_axis(layout, d));
  }
  const Mover m = mover(c, {&x}, {&y}, Requant::kCopy);
  const std::string out = m.out(y, layout);
  c.emit("Slice",
         {m.in(x, layout), c.constant_i64("starts", starts), c.constant_i64("ends", ends),
          c.constant_i64("axes", axes)},
         {out});
  m.finish(y, layout, out);
}

void convert_broadcast_to(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const TensorView& shape = c.input(1);
  if (shape.rank() != 1 || shape.shape[0] < x.rank())
    c.invalid("the shape must be a vector at least as long as the input rank");
  if (shape.is_constant()) check_elements(c, c.constant_ints(shape));
  const Mover m = mover(c, {&x}, {&y}, Requant::kCopy);
  const std::string out = m.out(y, Layout::kNative);
  c.emit("Expand", {m.in(x, Layout::kNative), int64_operand(c, shape, "broadcast_shape")}, {out});
  m.finish(y, Layout::kNative, out);
}

// SPACE_TO_DEPTH / DEPTH_TO_SPACE: TFLite's channel order (block row, block column, channel)
// is ONNX's SpaceToDepth and DepthToSpace mode DCR in NCHW.
void convert_depth_space(Converter& c, bool to_depth) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  int64_t block = 0;
  if (to_depth) {
    const auto* o = options_of<fb::SpaceToDepthOptions>(c);
    block = o ? o->block_size() : 0;
  } else {
    const auto* o = options_of<fb::DepthToSpaceOptions>(c);
    block = o ? o->block_size() : 0;
  }
  if (block < 1 || block > 65536) c.invalid("block_size " + std::to_string(block) + " is invalid");
  if (x.rank() != 4) c.invalid("the input must have rank 4");
  if (to_depth &&
      ((x.shape[1] >= 0 && x.shape[1] % block) || (x.shape[2] >= 0 && x.shape[2] % block)))
    c.invalid("height and width must be divisible by block_size " + std::to_string(block));
  if (!to_depth && x.shape[3] >= 0 && x.shape[3] % (block * block))
    c.invalid("the channels must be divisible by block_size^2");
  const Mover m = mover(c, {&x}, {&y}, Requant::kCopy);
  const std::string out = m.out(y, Layout::kNchw);
  std::vector<Attr> attrs = {Attr::Int("blocksize", block)};
  if (!to_depth) attrs.push_back(Attr::String("mode", "DCR"));
  c.emit(to_depth ? "SpaceToDepth" : "DepthToSpace", {m.in(x, Layout::kNchw)}, {out}, attrs);
  m.finish(y, Layout::kNchw, out);
}

// SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND as Pad/Reshape/Transpose/Reshape(/Slice). The shape is
// [N, pre..., spatial..., post...]: native has no `pre`, the nchw form has C there.
void convert_space_batch(Converter& c, bool to_batch) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  const std::vector<int64_t> block = c.constant_ints(c.input(1));
  const std::vector<int64_t> pads = c.constant_ints(c.input(2));
  const int64_t spatial = static_cast<int64_t>(block.size());
  if (spatial < 1 || x.rank() < 1 + spatial)
    c.invalid("the block shape must have between 1 and rank - 1 entries");
  if (static_cast<int64_t>(pads.size()) != 2 * spatial)
    c.invalid(std::string(to_batch ? "paddings" : "crops") + " must have shape [" +
              std::to_string(spatial) + ", 2]");
  if (!static_shape(x)) c.unsupported("a dynamic input shape");
  for (int64_t b : block)
    if (b < 1 || b > 65536) c.invalid("block size " + std::to_string(b) + " is invalid");
  std::vector<int64_t> block_and_batch = block;
  block_and_batch.push_back(x.shape[0]);
  check_elements(c, block_and_batch);
  for (int64_t p : pads)
    if (p < 0 || p > kMaxDim) c.invalid("paddings and crops must be in [0, 2^31]");
  const Layout layout = x.rank() == 4 && spatial == 2 ? c.preferred_layout({&x}) : Layout::kNative;
  std::vector<int64_t> dims = x.shape;  // in the layout's order
  if (layout == Layout::kNchw) dims = permute_dims(dims, kToNchw);
  const int64_t first = layout == Layout::kNchw ? 2 : 1;  // first spatial ONNX axis
  const int64_t rank = x.rank();
  int64_t blocks = 1;
  for (int64_t b : block) blocks *= b;
  const Mover m = mover(c, {&x}, {&y}, Requant::kRequantize);
  std::string current = m.in(x, layout);
  const std::string out = m.out(y, layout);
  auto reshape = [&](const std::vector<int64_t>& shape) {
    const std::string next = c.fresh(y.name + "/reshaped");
    c.emit("Reshape", {current, c.constant_i64("shape", shape)}, {next});
    current = next;
  };
  auto transpose = [&](const std::vector<int64_t>& perm) {
    const std::string next = c.fresh(y.name + "/transposed");
    c.emit("Transpose", {current}, {next}, {Attr::Ints("perm", perm)});
    current = next;
  };
  if (to_batch) {
    std::vector<int64_t> onnx_pads(2 * rank, 0);
    bool any = false;
    for (int64_t k = 0; k < spatial; ++k) {
      onnx_pads[first + k] = pads[2 * k];
      onnx_pads[rank + first + k] = pads[2 * k + 1];
      dims[first + k] += pads[2 * k] + pads[2 * k + 1];
      if (dims[first + k] % block[k])
        c.invalid("padded spatial dimension " + std::to_string(k) + " (" +
                  std::to_string(dims[first + k]) + ") is not divisible by its block size " +
                  std::to_string(block[k]));
      any = any || pads[2 * k] || pads[2 * k + 1];
    }
    if (any) {
      const std::string next = c.fresh(y.name + "/padded");
      // Quantized values pad with the zero point (real 0), as TFLite does.
      std::vector<std::string> pad_inputs = {current, c.constant_i64("pads", onnx_pads)};
      if (m.direct && x.quantized) {
        if (x.quant.per_channel()) c.unsupported("a per-channel quantized input");
        pad_inputs.push_back(c.zero_point_of(x));
      }
      c.emit("Pad", pad_inputs, {next});
      current = next;
    }
    // [N, pre, (S0/b0, b0), ..., post] -> [b0, ..., N, pre, S0/b0, ..., post]
    std::vector<int64_t> split = {dims[0]}, perm, merged = {blocks * dims[0]};
    for (int64_t d = 1; d < first; ++d) split.push_back(dims[d]);
    for (int64_t k = 0; k < spatial; ++k) {
      split.push_back(dims[first + k] / block[k]);
      split.push_back(block[k]);
    }
    for (int64_t d = first + spatial; d < rank; ++d) split.push_back(dims[d]);
    for (int64_t k = 0; k < spatial; ++k) perm.push_back(first + 2 * k + 1);
    for (int64_t d = 0; d < first; ++d) perm.push_back(d);
    for (int64_t k = 0; k < spatial; ++k) perm.push_back(first + 2 * k);
    for (int64_t d = first + 2 * spatial; d < rank + spatial; ++d) perm.push_back(d);
    for (int64_t d = 1; d < first; ++d) merged.push_back(dims[d]);
    for (int64_t k = 0; k < spatial; ++k) merged.push_back(dims[first + k] / block[k]);
    for (int64_t d = first + spatial; d < rank; ++d) merged.push_back(dims[d]);
    reshape(split);
    transpose(perm);
    c.emit("Reshape", {current, c.constant_i64("shape", merged)}, {out});
    m.finish(y, layout, out);
    return;
  }
  if (dims[0] % blocks)
    c.invalid("the batch " + std::to_string(dims[0]) + " is not divisible by the block count " +
              std::to_string(blocks));
  const int64_t batch = dims[0] / blocks;
  // [B, pre, S..., post] -> [b0, ..., N, pre, S..., post] -> [N, pre, (S0, b0), ..., post]
  std::vector<int64_t> split(block.begin(), block.end()), perm, merged = {batch};
  split.push_back(batch);
  for (int64_t d = 1; d < rank; ++d) split.push_back(dims[d]);
  perm.push_back(spatial);
  for (int64_t d = 1; d < first; ++d) perm.push_back(spatial + d);
  for (int64_t k = 0; k < spatial; ++k) {
    perm.push_back(spatial + first + k);
    perm.push_back(k);
  }
  for (int64_t d = first + spatial; d < rank; ++d) perm.push_back(spatial + d);
  for (int64_t d = 1; d < first; ++d) merged.push_back(dims[d]);
  std::vector<int64_t> starts, ends, axes;
  for (int64_t k = 0; k < spatial; ++k) {
    const int64_t full = dims[first + k] * block[k];
    merged.push_back(full);
    if (pads[2 * k] + pads[2 * k + 1] > full)
      c.invalid("crops of spatial dimension " + std::to_string(k) + " exceed its size " +
                std::to_string(full));
    starts.push_back(pads[2 * k]);
    ends.push_back(full - pads[2 * k + 1]);
    axes.push_back(first + k);
  }
  for (int64_t d = first + spatial; d < rank; ++d) merged.push_back(dims[d]);
  reshape(split);
  transpose(perm);
  const bool crop = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  if (!crop) {
    c.emit("Reshape", {current, c.constant_i64("shape", merged)}, {out});
  } else {
    reshape(merged);
    c.emit("Slice",
           {current, c.constant_i64("starts", starts), c.constant_i64("ends", ends),
            c.constant_i64("axes", axes)},
           {out});
  }
  m.finish(y, layout, out);
}

void convert_reverse(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& y = c.output();
  std::vector<int64_t> axes = c.constant_ints(c.input(1));
  for (int64_t& a : axes) a = normalized_axis(c, a, x.rank());
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.invalid("an axis repeats");
  const Layout layout = agnostic_layout(c, x);
  const Mover m = mover(c, {&x}, {&y}, Requant::kCopy);
  const std::string out = m.out(y, layout);
  if (axes.empty()) {
    c.emit("Identity", {m.in(x, layout)}, {out});
  } else {
    std::vector<int64_t> onnx_axes;
    for (int64_t a : axes) onnx_axes.push_back(onnx_axis(layout, a));
    // Slice with step -1 from the last element to before the first.
    c.emit("Slice",
           {m.in(x, layout), c.constant_i64("starts", std::vector<int64_t>(axes.size(), -1)),
            c.constant_i64("ends", std::vector<int64_t>(axes.size(), kInt64Min)),
            c.constant_i64("axes", onnx_axes),
            c.constant_i64("steps", std::vector<int64_t>(axes.size(), -1))},
           {out});
  }
  m.finish(y, layout, out);
}

void convert_top_k(Converter& c) {
  const TensorView& x = c.input(0);
  const TensorView& k = c.input(1);
  const TensorView& values = c.output(0);
  const TensorView& indices = c.output(1);
  if (x.rank() < 1) c.invalid("the input must have rank >= 1");
  if (indices.dtype != LOOM_DTYPE_INT32 && indices.dtype != LOOM_DTYPE_INT64)
    c.invalid("the indices output must be int32 or int64");
  std::string k_value;
  if (k.is_constant()) {
    const int64_t kk = constant_scalar(c, k, "k");
    if (kk < 0 || (x.shape.back() >= 0 && kk > x.shape.back()))
      c.invalid("k " + std::to_string(kk) + " is outside [0, " + std::to_string(x.shape.back()) +
                "]");
    k_value = c.constant_i64("k", {kk});
  } else {
    const std::string k64 = int64_operand(c, k, "k");
    k_value = c.fresh(k.name + "/vector");
    c.emit("Reshape", {k64, c.constant_i64("shape", {1})}, {k_value});
  }
  const Mover m = mover(c, {&x}, {&values}, Requant::kCopy);
  const std::string out = m.out(values, Layout::kNative);
  const std::string index64 = indices.dtype == LOOM_DTYPE_INT64 ? c.define(indices, Layout::kNative)
                                                                : c.fresh(indices.name + "/i64");
  c.emit("TopK", {m.in(x, Layout::kNative), k_value}, {out, index64},
         {Attr::Int("axis", -1), Attr::Int("largest", 1), Attr::Int("sorted", 1)});
  m.finish(values, Layout::kNative, out);
  if (indices.dtype != LOOM_DTYPE_INT64)
    c.emit("Cast", {index64}, {c.define(indices, Layout::kNative)},
           {Attr::Int("to", LOOM_DTYPE_INT32)});
}

}  // namespace

bool convert_layout(Converter& c, int32_t code) {
  switch (static_cast<BuiltinOp>(code)) {
    case BuiltinOp::kSplit:
      convert_split(c);
      return true;
    case BuiltinOp::kSplitV:
      convert_split_v(c);
      return true;
    case BuiltinOp::kPack:
      convert_pack(c);
      return true;
    case BuiltinOp::kUnpack:
      convert_unpack(c);
      return true;
    case BuiltinOp::kGatherNd:
      convert_gather_nd(c);
      return true;
    case BuiltinOp::kMirrorPad:
      convert_mirror_pad(c);
      return true;
    case BuiltinOp::kTile:
      convert_tile(c);
      return true;
    case BuiltinOp::kExpandDims:
      convert_expand_dims(c);
      return true;
    case BuiltinOp::kSlice:
      convert_slice(c);
      return true;
    case BuiltinOp::kBroadcastTo:
      convert_broadcast_to(c);
      return true;
    case BuiltinOp::kSpaceToDepth:
      convert_depth_space(c, true);
      return true;
    case BuiltinOp::kDepthToSpace:
      convert_depth_space(c, false);
      return true;
    case BuiltinOp::kSpaceToBatchNd:
      convert_space_batch(c, true);
      return true;
    case BuiltinOp::kBatchToSpaceNd:
      convert_space_batch(c, false);
      return true;
    case BuiltinOp::kReverseV2:
      convert_reverse(c);
      return true;
    case BuiltinOp::kTopkV2:
      convert_top_k(c);
      return true;
    default:
      return false;
  }
}

}  // namespace loom::tflite
