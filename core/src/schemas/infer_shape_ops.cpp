// Ops that only move or reinterpret data: Reshape (0 / -1 / allowzero), Flatten, Squeeze and
// Unsqueeze (axes as attribute or input), Transpose, Concat, Split, Expand, Tile, Shape, Size,
// DepthToSpace, SpaceToDepth.
#include <algorithm>
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Axes;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;
using infer::read_axes;

void reshape(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  std::optional<Dims> target = v.ints_attr("shape");
  if (!target) target = v.const_ints(1);
  if (!target) {
    std::optional<Dims> s = v.shape(1);
    if (s && s->size() == 1 && (*s)[0] >= 0)
      return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>((*s)[0]));
    return v.set_output_dtype(0, v.dtype(0));
  }
  bool allow_zero = v.attrs().get_int("allowzero", 0) != 0;
  Dims out = *target;
  int infer_at = -1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k] == -1) {
      if (infer_at >= 0) v.fail("shape " + dims_to_string(*target) + " has more than one -1");
      infer_at = static_cast<int>(k);
    } else if (out[k] < -1) {
      v.fail("shape " + dims_to_string(*target) + " has a negative extent");
    } else if (out[k] == 0 && !allow_zero) {
      // 0 copies the input's extent at the same position.
      if (in && k >= in->size())
        v.fail("shape " + dims_to_string(*target) + " copies dimension " + std::to_string(k) +
               " of input " + dims_to_string(*in) + ", which has no such dimension");
      out[k] = in ? (*in)[k] : kUnknownDim;
    }
  }
  if (allow_zero && infer_at >= 0 && std::count(target->begin(), target->end(), 0))
    v.fail("shape " + dims_to_string(*target) + " has both 0 and -1 while allowzero is set");
  int64_t total = in ? infer::element_count(v, *in) : kUnknownDim;
  Dims others = out;
  if (infer_at >= 0) others.erase(others.begin() + infer_at);
  int64_t known = infer::element_count(v, others);
  if (infer_at >= 0) {
    if (total >= 0 && known >= 0) {
      if (known == 0 || total % known != 0)
        v.fail("cannot reshape input " + dims_to_string(*in) + " (" + std::to_string(total) +
               " elements) into " + dims_to_string(*target));
      out[static_cast<size_t>(infer_at)] = total / known;
    }
  } else if (total >= 0 && known >= 0 && total != known) {
    v.fail("cannot reshape input " + dims_to_string(*in) + " (" + std::to_string(total) +
           " elements) into " + dims_to_string(*target) + " (" + std::to_string(known) +
           " elements)");
  }
  v.set_output(0, v.dtype(0), out);
}

void flatten(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!in) return v.set_output_rank(0, v.dtype(0), 2);
  int64_t rank = static_cast<int64_t>(in->size());
  int64_t axis = v.attrs().get_int("axis", 1);
  if (axis < -rank || axis > rank)
    v.fail("axis " + std::to_string(axis) + " is out of range for input " + dims_to_string(*in));
  if (axis < 0) axis += rank;
  auto split = in->begin() + axis;
  Dims out{infer::element_count(v, Dims(in->begin(), split)),
           infer::element_count(v, Dims(split, in->end()))};
  v.set_output(0, v.dtype(0), out);
}

void squeeze(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  Axes axes = read_axes(v, 1);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  int64_t rank = static_cast<int64_t>(in->size());
  if (!axes.given || (axes.values && axes.values->empty())) {
    // Every extent-1 dimension goes; an unknown extent might be 1, so the rank is unknown.
    if (std::count(in->begin(), in->end(), kUnknownDim)) return v.set_output_dtype(0, v.dtype(0));
    Dims out;
    std::copy_if(in->begin(), in->end(), std::back_inserter(out), [](int64_t d) { return d != 1; });
    return v.set_output(0, v.dtype(0), out);
  }
  if (!axes.values) {
    if (axes.count >= 0 && axes.count <= rank)
      return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank - axes.count));
    return v.set_output_dtype(0, v.dtype(0));
  }
  std::vector<bool> drop(in->size(), false);
  for (int64_t a : *axes.values) {
    size_t k = static_cast<size_t>(v.normalize_axis(a, rank, "squeeze axis"));
    if ((*in)[k] >= 0 && (*in)[k] != 1)
      v.fail("cannot squeeze dimension " + std::to_string(a) + " of extent " +
             std::to_string((*in)[k]) + " in input " + dims_to_string(*in));
    if (drop[k]) v.fail("axis " + std::to_string(a) + " is listed twice");
    drop[k] = true;
  }
  Dims out;
  for (size_t k = 0; k < in->size(); ++k)
    if (!drop[k]) out.push_back((*in)[k]);
  v.set_output(0, v.dtype(0), out);
}

void unsqueeze(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  Axes axes = read_axes(v, 1);
  if (!axes.given) v.fail("axes are required");
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  if (!axes.values) {
    if (axes.count >= 0)
      return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(in->size() + axes.count));
    return v.set_output_dtype(0, v.dtype(0));
  }
  int64_t rank = static_cast<int64_t>(in->size() + axes.values->size());
  if (rank > LOOM_MAX_RANK) v.fail("output rank " + std::to_string(rank) + " is too large");
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : *axes.values) {
    size_t k = static_cast<size_t>(v.normalize_axis(a, rank, "unsqueeze axis"));
    if (inserted[k]) v.fail("axis " + std::to_string(a) + " is listed twice");
    inserted[k] = true;
  }
  Dims out;
  size_t next = 0;
  for (size_t k = 0; k < inserted.size(); ++k) out.push_back(inserted[k] ? 1 : (*in)[next++]);
  v.set_output(0, v.dtype(0), out);
}

void transpose(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  std::optional<Dims> perm = v.ints_attr("perm");
  if (!in) {
    if (perm) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(perm->size()));
    return v.set_output_dtype(0, v.dtype(0));
  }
  if (!perm) {
    perm = Dims(in->size());
    for (size_t k = 0; k < in->size(); ++k) (*perm)[k] = static_cast<int64_t>(in->size() - 1 - k);
  }
  if (perm->size() != in->size())
    v.fail("perm " + dims_to_string(*perm) + " does not match the rank of input " +
           dims_to_string(*in));
  std::vector<bool> seen(in->size(), false);
  Dims out;
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(in->size()) || seen[static_cast<size_t>(p)])
      v.fail("perm " + dims_to_string(*perm) + " is not a permutation of the input's " +
             std::to_string(in->size()) + " dimensions");
    seen[static_cast<size_t>(p)] = true;
    out.push_back((*in)[static_cast<size_t>(p)]);
  }
  v.set_output(0, v.dtype(0), out);
}

void concat(NodeView& v) {
  std::optional<Dims> out;
  int64_t axis = 0;
  bool axis_known = false;
  for (size_t i = 0; i < v.num_inputs(); ++i) {
    std::optional<Dims> s = v.shape(i);
    if (!s) continue;
    if (!out) {
      if (s->empty())
        v.fail("inputs must have rank >= 1, input " + std::to_string(i) + " is a scalar");
      // Concat-1 defaults to axis 1; later versions require the attribute.
      if (!v.attrs().has("axis") && v.node().opset >= 4) v.fail("attribute axis is required");
      axis = v.normalize_axis(v.attrs().get_int("axis", 1), static_cast<int64_t>(s->size()));
      axis_known = true;
      out = *s;
      // Unknown-rank inputs seen before contribute an unknown extent.
      for (size_t j = 0; j < i; ++j)
        if (v.has_input(j)) (*out)[static_cast<size_t>(axis)] = kUnknownDim;
      continue;
    }
    if (s->size() != out->size())
      v.fail("input " + std::to_string(i) + " " + dims_to_string(*s) + " has rank " +
             std::to_string(s->size()) + ", expected " + std::to_string(out->size()));
    for (size_t k = 0; k < s->size(); ++k) {
      if (static_cast<int64_t>(k) == axis) {
        int64_t& d = (*out)[k];
        d = d < 0 || (*s)[k] < 0 ? kUnknownDim : infer::checked_add(v, d, (*s)[k]);
      } else {
        (*out)[k] = infer::merge_dim(
            v, (*out)[k], (*s)[k], "extents of dimension " + std::to_string(k) + " of the inputs");
      }
    }
  }
  if (out && axis_known)
    for (size_t i = 0; i < v.num_inputs(); ++i)
      if (v.has_input(i) && !v.shape(i)) (*out)[static_cast<size_t>(axis)] = kUnknownDim;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  for (size_t i = 0; i < v.num_inputs() && dtype == LOOM_DTYPE_UNDEFINED; ++i) dtype = v.dtype(i);
  v.set_output(0, dtype, out);
}

void split(NodeView& v) {
  size_t n = v.num_outputs();
  std::optional<Dims> in = v.shape(0);
  if (!in) {
    for (size_t i = 0; i < n; ++i) v.set_output_dtype(i, v.dtype(0));
    return;
  }
  int64_t rank = static_cast<int64_t>(in->size());
  size_t axis = static_cast<size_t>(v.normalize_axis(v.attrs().get_int("axis", 0), rank));
  int64_t extent = (*in)[axis];
  std::optional<Dims> sizes = v.ints_attr("split");
  if (!sizes) sizes = v.const_ints(1);
  bool sizes_pending = !sizes && v.has_input(1);
  if (sizes) {
    if (sizes->size() != n)
      v.fail("split " + dims_to_string(*sizes) + " has " + std::to_string(sizes->size()) +
             " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *sizes) {
      if (s < 0) v.fail("split " + dims_to_string(*sizes) + " has a negative entry");
      sum = infer::checked_add(v, sum, s);
    }
    if (extent >= 0 && sum != extent)
      v.fail("split " + dims_to_string(*sizes) + " sums to " + std::to_string(sum) +
             " but dimension " + std::to_string(axis) + " of input " + dims_to_string(*in) +
             " has extent " + std::to_string(extent));
  } else if (!sizes_pending && extent >= 0) {
    int64_t parts = v.attrs().get_int("num_outputs", static_cast<int64_t>(n));
    if (parts != static_cast<int64_t>(n))
      v.fail("num_outputs " + std::to_string(parts) + " differs from the node's " +
             std::to_string(n) + " outputs");
    if (parts <= 0) v.fail("no outputs to split into");
    sizes = Dims(n, extent / parts);
    if (extent % parts != 0) {
      // Opset 18 with num_outputs: chunks of ceil(extent / n), the last one smaller.
      if (!v.attrs().has("num_outputs"))
        v.fail("dimension " + std::to_string(axis) + " of input " + dims_to_string(*in) +
               " cannot be split evenly into " + std::to_string(n) + " outputs");
      int64_t chunk = (extent + parts - 1) / parts;
      for (size_t i = 0; i < n; ++i)
        (*sizes)[i] =
            std::max<int64_t>(0, std::min(chunk, extent - chunk * static_cast<int64_t>(i)));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    Dims out = *in;
    out[axis] = sizes ? (*sizes)[i] : kUnknownDim;
    v.set_output(i, v.dtype(0), out);
  }
}

void expand(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (std::optional<Dims> target = v.const_ints(1)) {
    for (int64_t d : *target)
      if (d < 0) v.fail("shape " + dims_to_string(*target) + " has a negative extent");
    if (!in) return v.set_output_dtype(0, v.dtype(0));
    return v.set_output(0, v.dtype(0), infer::broadcast(v, *in, *target));
  }
  std::optional<Dims> s = v.shape(1);
  if (in && s && s->size() == 1 && (*s)[0] >= 0)
    return v.set_output_rank(0, v.dtype(0),
                             static_cast<int32_t>(std::max<int64_t>((*s)[0], in->size())));
  v.set_output_dtype(0, v.dtype(0));
}

void tile(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  std::optional<Dims> repeats = v.const_ints(1);
  if (!repeats) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(in->size()));
  if (repeats->size() != in->size())
    v.fail("repeats " + dims_to_string(*repeats) + " do not match the rank of input " +
           dims_to_string(*in));
  Dims out = *in;
  for (size_t k = 0; k < out.size(); ++k) {
    if ((*repeats)[k] < 0) v.fail("repeats " + dims_to_string(*repeats) + " has a negative entry");
    if (out[k] >= 0) out[k] = infer::checked_mul(v, out[k], (*repeats)[k]);
  }
  v.set_output(0, v.dtype(0), out);
}

// Shape (with opset-15 start/end): int64 vector of the selected extents.
void shape(NodeView& v) {
  int32_t rank = v.rank(0);
  if (rank < 0) return v.set_output_rank(0, LOOM_DTYPE_INT64, 1);
  auto clamp = [&](int64_t x) { return std::clamp<int64_t>(x < 0 ? x + rank : x, 0, rank); };
  int64_t start = clamp(v.attrs().get_int("start", 0));
  int64_t end = clamp(v.attrs().get_int("end", rank));
  v.set_output(0, LOOM_DTYPE_INT64, Dims{std::max<int64_t>(0, end - start)});
}

void size(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_INT64, Dims{});
}

// DepthToSpace / SpaceToDepth: the required attribute blocksize, positive (and bounded so that
// blocksize^2 cannot overflow).
int64_t read_blocksize(const NodeView& v) {
  if (!v.attrs().has("blocksize")) v.fail("attribute blocksize is required");
  int64_t b = v.attrs().get_int("blocksize", 0);
  if (b <= 0) v.fail("blocksize = " + std::to_string(b) + " must be positive");
  if (b > (int64_t{1} << 31)) v.fail("blocksize = " + std::to_string(b) + " exceeds 2^31");
  return b;
}

void depth_to_space(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  int64_t b = read_blocksize(v);
  std::string mode = v.attrs().get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") v.fail("unknown mode '" + mode + "' (expected DCR or CRD)");
  if (!in) return v.set_output_rank(0, v.dtype(0), 4);
  if (in->size() != 4) v.fail("input " + dims_to_string(*in) + " must be 4-D (N, C, H, W)");
  Dims out = *in;
  if (out[1] >= 0) {
    if (out[1] % (b * b) != 0)
      v.fail("channels of input " + dims_to_string(*in) +
             " are not divisible by blocksize^2 = " + std::to_string(b * b));
    out[1] /= b * b;
  }
  for (size_t k = 2; k < 4; ++k)
    if (out[k] >= 0) out[k] = infer::checked_mul(v, out[k], b);
  v.set_output(0, v.dtype(0), out);
}

void space_to_depth(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  int64_t b = read_blocksize(v);
  if (!in) return v.set_output_rank(0, v.dtype(0), 4);
  if (in->size() != 4) v.fail("input " + dims_to_string(*in) + " must be 4-D (N, C, H, W)");
  Dims out = *in;
  if (out[1] >= 0) out[1] = infer::checked_mul(v, out[1], b * b);
  for (size_t k = 2; k < 4; ++k) {
    if (out[k] < 0) continue;
    if (out[k] % b != 0)
      v.fail("spatial extents of input " + dims_to_string(*in) +
             " are not divisible by blocksize " + std::to_string(b));
    out[k] /= b;
  }
  v.set_output(0, v.dtype(0), out);
}

// Opset 28 added `mode` (DCR or CRD), which orders the new channels but not the shape.
void space_to_depth_28(NodeView& v) {
  std::string mode = v.attrs().get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") v.fail("unknown mode '" + mode + "' (expected DCR or CRD)");
  space_to_depth(v);
}

const InferEntry kEntries[] = {
    {"", "Reshape", adapt<reshape>},
    {"", "Flatten", adapt<flatten>},
    {"", "Squeeze", adapt<squeeze>},
    {"", "Unsqueeze", adapt<unsqueeze>},
    {"", "Transpose", adapt<transpose>},
    {"", "Concat", adapt<concat>},
    {"", "Split", adapt<split>},
    {"", "Expand", adapt<expand>},
    {"", "Tile", adapt<tile>},
    {"", "Shape", adapt<shape>},
    {"", "Size", adapt<size>},
    {"", "DepthToSpace", adapt<depth_to_space>},
    {"", "SpaceToDepth", adapt<space_to_depth>, 1, 27},
    {"", "SpaceToDepth", adapt<space_to_depth_28>, 28},
};

}  // namespace

std::span<const InferEntry> shape_op_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
