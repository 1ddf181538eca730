// Reductions: axes as attribute (older versions) or input (ReduceSum-13, the others from 18),
// keepdims, noop_with_empty_axes.
#include <string>
#include <vector>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::kUnknownDim;
using infer::NodeView;

void reduce(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  bool keep = v.attrs().get_int("keepdims", 1) != 0;
  infer::Axes axes = infer::read_axes(v, 1);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  int64_t rank = static_cast<int64_t>(in->size());
  if (axes.given && !axes.values) {
    // Axes known only at run time: the rank survives with keepdims or a known axes count.
    if (keep) return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank));
    if (axes.count >= 0 && axes.count <= rank)
      return v.set_output_rank(0, v.dtype(0), static_cast<int32_t>(rank - axes.count));
    return v.set_output_dtype(0, v.dtype(0));
  }
  std::vector<bool> reduced(in->size(), false);
  if (!axes.values || axes.values->empty()) {
    // No axes: reduce all, unless noop_with_empty_axes makes the op an identity.
    if (v.attrs().get_int("noop_with_empty_axes", 0) != 0) return v.propagate(0, 0);
    reduced.assign(in->size(), true);
  } else {
    for (int64_t a : *axes.values) {
      size_t k = static_cast<size_t>(v.normalize_axis(a, rank, "reduction axis"));
      if (reduced[k]) v.fail("reduction axis " + std::to_string(a) + " is listed twice");
      reduced[k] = true;
    }
  }
  Dims out;
  for (size_t k = 0; k < in->size(); ++k) {
    if (!reduced[k])
      out.push_back((*in)[k]);
    else if (keep)
      out.push_back(1);
  }
  v.set_output(0, v.dtype(0), out);
}

constexpr auto kReduce = adapt<reduce>;

const InferEntry kEntries[] = {
    {"", "ReduceL1", kReduce},        {"", "ReduceL2", kReduce},   {"", "ReduceLogSum", kReduce},
    {"", "ReduceLogSumExp", kReduce}, {"", "ReduceMax", kReduce},  {"", "ReduceMean", kReduce},
    {"", "ReduceMin", kReduce},       {"", "ReduceProd", kReduce}, {"", "ReduceSum", kReduce},
    {"", "ReduceSumSquare", kReduce},
};

}  // namespace

std::span<const InferEntry> reduction_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
