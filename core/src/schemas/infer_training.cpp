// Inference for the optimizer steps of ai.onnx.preview.training (opset 1): Adagrad, Adam and
// Momentum take R (learning rate) and T (update count), then `groups` groups of n tensors (X,
// its gradient G, and the optimizer's state: H for Adagrad, V for Momentum, V and H for Adam);
// they give every group but G, each tensor with the type and shape of its input.
#include "infer_util.hpp"
#include "schema_rows.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::NodeView;

template <size_t kGroups>
void optimizer_step(NodeView& v) {
  const size_t tensors = v.num_inputs() < 2 ? 0 : v.num_inputs() - 2;
  if (v.num_inputs() < 2 + kGroups || tensors % kGroups != 0)
    v.fail("takes R, T and " + std::to_string(kGroups) + " groups of n tensors, not " +
           std::to_string(v.num_inputs()) + " inputs");
  const size_t n = tensors / kGroups;
  if (v.num_outputs() != n * (kGroups - 1))
    v.fail("has " + std::to_string(v.num_outputs()) + " outputs; " + std::to_string(n) +
           " tensors to update give " + std::to_string(n * (kGroups - 1)));
  for (size_t i = 0; i < n; ++i) {
    for (size_t group = 1; group < kGroups; ++group) {
      const std::optional<Dims> a = v.shape(2 + i), b = v.shape(2 + group * n + i);
      bool differ = a && b && a->size() != b->size();
      for (size_t d = 0; a && b && !differ && d < a->size(); ++d)
        differ = (*a)[d] >= 0 && (*b)[d] >= 0 && (*a)[d] != (*b)[d];
      if (differ)
        v.fail("input " + std::to_string(2 + group * n + i) + " does not have the shape of X " +
               std::to_string(i));
    }
    // X's update, then each state's (G, group 1, is not an output).
    v.propagate(2 + i, i);
    for (size_t group = 2; group < kGroups; ++group)
      v.propagate(2 + group * n + i, (group - 1) * n + i);
  }
}

const InferEntry kEntries[] = {
    {"ai.onnx.preview.training", "Adagrad", adapt<optimizer_step<3>>, 1},
    {"ai.onnx.preview.training", "Adam", adapt<optimizer_step<4>>, 1},
    {"ai.onnx.preview.training", "Momentum", adapt<optimizer_step<3>>, 1},
};

}  // namespace

std::span<const InferEntry> training_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
