// Index-driven ops: Gather, GatherElements, GatherND, the scatters, OneHot, Compress, TopK,
// ArgMax/ArgMin, NonZero, Unique, NonMaxSuppression, and same-shape ones (Trilu, CumSum,
// ReverseSequence).
#include <algorithm>
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

// Gather: data[:axis] + indices + data[axis+1:].
void gather(NodeView& v) {
  std::optional<Dims> data = v.shape(0), indices = v.shape(1);
  if (!data || !indices) return v.set_output_dtype(0, v.dtype(0));
  if (data->empty()) v.fail("data must have rank >= 1, got a scalar");
  int64_t axis = v.normalize_axis(v.attrs().get_int("axis", 0), static_cast<int64_t>(data->size()));
  // Constant indices outside [-n, n) are an error the spec mandates; caught here, every device
  // refuses them alike instead of each at run time (or not at all).
  if (int64_t n = (*data)[static_cast<size_t>(axis)]; n >= 0)
    if (std::optional<Dims> idx = v.const_ints(1))
      for (int64_t i : *idx)
        if (i < -n || i >= n)
          v.fail("constant index " + std::to_string(i) + " is out of range for axis " +
                 std::to_string(axis) + " of size " + std::to_string(n));
  Dims out(data->begin(), data->begin() + axis);
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  v.set_output(0, v.dtype(0), out);
}

// GatherElements: output has the indices' shape; ranks must agree.
void gather_elements(NodeView& v) {
  std::optional<Dims> data = v.shape(0), indices = v.shape(1);
  if (data && indices && data->size() != indices->size())
    v.fail("data " + dims_to_string(*data) + " and indices " + dims_to_string(*indices) +
           " must have the same rank");
  if (data) v.normalize_axis(v.attrs().get_int("axis", 0), static_cast<int64_t>(data->size()));
  v.set_output(0, v.dtype(0), indices);
}

// GatherND: indices[:-1] + data[batch_dims + indices[-1]:].
void gather_nd(NodeView& v) {
  std::optional<Dims> data = v.shape(0), indices = v.shape(1);
  if (!data || !indices) return v.set_output_dtype(0, v.dtype(0));
  int64_t batch = v.attrs().get_int("batch_dims", 0);
  if (indices->empty()) v.fail("indices must have rank >= 1");
  int64_t last = indices->back();
  if (batch < 0 || batch >= static_cast<int64_t>(std::min(data->size(), indices->size())))
    v.fail("batch_dims " + std::to_string(batch) + " must be below the ranks of data " +
           dims_to_string(*data) + " and indices " + dims_to_string(*indices));
  if (last < 0) return v.set_output_dtype(0, v.dtype(0));
  if (batch + last > static_cast<int64_t>(data->size()))
    v.fail("index tuples of length " + std::to_string(last) + " exceed the rank of data " +
           dims_to_string(*data) + " after " + std::to_string(batch) + " batch dimensions");
  Dims out(indices->begin(), indices->end() - 1);
  out.insert(out.end(), data->begin() + batch + last, data->end());
  v.set_output(0, v.dtype(0), out);
}

// OneHot(indices, depth, values): indices' shape with `depth` inserted at axis, type of values.
void one_hot(NodeView& v) {
  std::optional<Dims> indices = v.shape(0);
  if (!indices) return v.set_output_dtype(0, v.dtype(2));
  int64_t rank = static_cast<int64_t>(indices->size()) + 1;
  int64_t axis = v.normalize_axis(v.attrs().get_int("axis", -1), rank);
  int64_t depth = kUnknownDim;
  if (std::optional<std::vector<double>> d = v.const_doubles(1)) {
    if (d->size() != 1) v.fail("depth must hold one value");
    if (!((*d)[0] >= 1) || (*d)[0] > 9.0e18) v.fail("depth must be a positive count");
    depth = static_cast<int64_t>((*d)[0]);
  }
  Dims out = *indices;
  out.insert(out.begin() + axis, depth);
  v.set_output(0, v.dtype(2), out);
}

// Compress: with an axis, that extent becomes unknown; without, a 1-D result.
void compress(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!v.attrs().has("axis")) return v.set_output_rank(0, v.dtype(0), 1);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  Dims out = *in;
  out[static_cast<size_t>(v.normalize_axis(v.attrs().get_int("axis", 0),
                                           static_cast<int64_t>(in->size())))] = kUnknownDim;
  v.set_output(0, v.dtype(0), out);
}

// TopK: values and int64 indices, the axis extent becoming k (attribute in TopK-1, input after).
void top_k(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!in) {
    v.set_output_dtype(0, v.dtype(0));
    v.set_output_dtype(1, LOOM_DTYPE_INT64);
    return;
  }
  int64_t axis = v.normalize_axis(v.attrs().get_int("axis", -1), static_cast<int64_t>(in->size()));
  int64_t k = kUnknownDim;
  if (v.attrs().has("k")) {
    k = v.attrs().get_int("k", 0);
  } else if (std::optional<Dims> kv = v.const_ints(1)) {
    if (kv->size() != 1) v.fail("K must hold exactly one value, got " + std::to_string(kv->size()));
    k = (*kv)[0];
  }
  if (k != kUnknownDim) {
    int64_t extent = (*in)[static_cast<size_t>(axis)];
    if (k < 0 || (extent >= 0 && k > extent))
      v.fail("k = " + std::to_string(k) + " is not within the extent of axis " +
             std::to_string(axis) + " of input " + dims_to_string(*in));
  }
  Dims out = *in;
  out[static_cast<size_t>(axis)] = k;
  v.set_output(0, v.dtype(0), out);
  v.set_output(1, LOOM_DTYPE_INT64, out);
}

// ArgMax, ArgMin: int64, the axis reduced (kept as 1 with keepdims).
void arg_reduce(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  bool keep = v.attrs().get_int("keepdims", 1) != 0;
  if (!in) return v.set_output_dtype(0, LOOM_DTYPE_INT64);
  size_t axis = static_cast<size_t>(
      v.normalize_axis(v.attrs().get_int("axis", 0), static_cast<int64_t>(in->size())));
  Dims out = *in;
  if (keep)
    out[axis] = 1;
  else
    out.erase(out.begin() + static_cast<ptrdiff_t>(axis));
  v.set_output(0, LOOM_DTYPE_INT64, out);
}

// NonZero: int64 [rank, number of non-zeros (unknown)].
void non_zero(NodeView& v) {
  int32_t rank = v.rank(0);
  v.set_output(0, LOOM_DTYPE_INT64, Dims{rank < 0 ? kUnknownDim : int64_t{rank}, kUnknownDim});
}

// Unique: Y is 1-D (no axis) or the input with an unknown extent on axis; the other outputs
// are int64 vectors of unknown length.
void unique(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (!v.attrs().has("axis")) {
    v.set_output_rank(0, v.dtype(0), 1);
  } else if (in) {
    Dims out = *in;
    out[static_cast<size_t>(v.normalize_axis(v.attrs().get_int("axis", 0),
                                             static_cast<int64_t>(in->size())))] = kUnknownDim;
    v.set_output(0, v.dtype(0), out);
  } else {
    v.set_output_dtype(0, v.dtype(0));
  }
  for (size_t i = 1; i < 4; ++i) v.set_output_rank(i, LOOM_DTYPE_INT64, 1);
}

// NonMaxSuppression: int64 [selected boxes, 3].
void non_max_suppression(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_INT64, Dims{kUnknownDim, 3});
}

// Scatter*, Trilu, CumSum, ReverseSequence: the data input's type and shape.
void same_as_data(NodeView& v) {
  v.propagate(0, 0);
}

const InferEntry kEntries[] = {
    {"", "Gather", adapt<gather>},
    {"", "GatherElements", adapt<gather_elements>},
    {"", "GatherND", adapt<gather_nd>},
    {"", "OneHot", adapt<one_hot>},
    {"", "Compress", adapt<compress>},
    {"", "TopK", adapt<top_k>},
    {"", "ArgMax", adapt<arg_reduce>},
    {"", "ArgMin", adapt<arg_reduce>},
    {"", "NonZero", adapt<non_zero>},
    {"", "Unique", adapt<unique>},
    {"", "NonMaxSuppression", adapt<non_max_suppression>},
    {"", "Scatter", adapt<same_as_data>},
    {"", "ScatterElements", adapt<same_as_data>},
    {"", "ScatterND", adapt<same_as_data>},
    {"", "Trilu", adapt<same_as_data>},
    {"", "CumSum", adapt<same_as_data>},
    {"", "CumProd", adapt<same_as_data>},
    {"", "TensorScatter", adapt<same_as_data>},
    {"", "ReverseSequence", adapt<same_as_data>},
};

}  // namespace

std::span<const InferEntry> indexing_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
