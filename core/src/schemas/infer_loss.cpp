// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (per element with
// reduction = "none", else a scalar).
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::NodeView;

// Input [N, C, d...] and target [N, d...]: the loss has the target's shape or is a scalar.
void loss(NodeView& v) {
  std::optional<Dims> scores = v.shape(0), target = v.shape(1);
  if (scores && scores->size() < 2)
    v.fail("input " + dims_to_string(*scores) + " must have rank >= 2 (N, C, ...)");
  if (scores && target) {
    if (target->size() + 1 != scores->size())
      v.fail("target " + dims_to_string(*target) + " must have one dimension less than input " +
             dims_to_string(*scores));
    for (size_t k = 0; k < target->size(); ++k)
      infer::merge_dim(
          v, (*target)[k], (*scores)[k == 0 ? 0 : k + 1],
          "extents of target " + dims_to_string(*target) + " and input " + dims_to_string(*scores));
  }
  std::string reduction = v.attrs().get_string("reduction", "mean");
  if (reduction != "none" && reduction != "mean" && reduction != "sum")
    v.fail("unknown reduction '" + reduction + "'");
  if (reduction == "none") {
    std::optional<Dims> per_element = target;
    if (!per_element && scores) {
      per_element = *scores;
      per_element->erase(per_element->begin() + 1);
    }
    v.set_output(0, v.dtype(0), per_element);
  } else {
    v.set_output(0, v.dtype(0), Dims{});
  }
  // SoftmaxCrossEntropyLoss's optional log_prob has the scores' shape.
  v.set_output(1, v.dtype(0), scores);
}

const InferEntry kEntries[] = {
    {"", "NegativeLogLikelihoodLoss", adapt<loss>},
    {"", "SoftmaxCrossEntropyLoss", adapt<loss>},
};

}  // namespace

std::span<const InferEntry> loss_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
