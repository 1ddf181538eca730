// Sequence and optional ops whose result is a tensor: SequenceLength (int64 scalar) and
// OptionalHasElement (bool scalar). The others produce sequences or optionals, which the
// graph view does not describe, so their outputs stay unknown.
#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::NodeView;

void int64_scalar(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_INT64, Dims{});
}
void bool_scalar(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_BOOL, Dims{});
}

const InferEntry kEntries[] = {
    {"", "SequenceLength", adapt<int64_scalar>},
    {"", "OptionalHasElement", adapt<bool_scalar>},
};

}  // namespace

std::span<const InferEntry> container_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
