// Recurrent layers RNN, GRU, LSTM: Y [seq, dirs, batch, hidden] and Y_h / Y_c
// [dirs, batch, hidden] (batch first with layout = 1), hidden size from the attribute or R.
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

template <int64_t Gates>
void recurrent(NodeView& v) {
  std::optional<Dims> x = v.shape(0), w = v.shape(1), r = v.shape(2);
  std::string direction = v.attrs().get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    v.fail("unknown direction '" + direction + "'");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  bool batch_first = v.attrs().get_int("layout", 0) != 0;
  if (x && x->size() != 3) v.fail("X " + dims_to_string(*x) + " must be 3-D");
  if (w && w->size() != 3) v.fail("W " + dims_to_string(*w) + " must be 3-D");
  if (r && r->size() != 3) v.fail("R " + dims_to_string(*r) + " must be 3-D");
  int64_t hidden = v.attrs().get_int("hidden_size", kUnknownDim);
  if (r) hidden = infer::merge_dim(v, hidden, (*r)[2], "hidden_size and the last extent of R");
  int64_t seq = x ? (*x)[batch_first ? 1 : 0] : kUnknownDim;
  int64_t batch = x ? (*x)[batch_first ? 0 : 1] : kUnknownDim;
  if (x && w) infer::merge_dim(v, (*x)[2], (*w)[2], "input sizes of X and W");
  for (const std::optional<Dims>* m : {&w, &r}) {
    if (!*m) continue;
    infer::merge_dim(v, (**m)[0], dirs, "direction count of direction='" + direction + "' and W/R");
    if (hidden >= 0 && (**m)[1] >= 0 && (**m)[1] != infer::checked_mul(v, Gates, hidden))
      v.fail("W/R " + dims_to_string(**m) + " should have " + std::to_string(Gates) + " x " +
             std::to_string(hidden) + " rows");
  }
  loom_dtype_t dtype = v.dtype(0);
  if (batch_first) {
    v.set_output(0, dtype, Dims{batch, seq, dirs, hidden});
    v.set_output(1, dtype, Dims{batch, dirs, hidden});
    v.set_output(2, dtype, Dims{batch, dirs, hidden});
  } else {
    v.set_output(0, dtype, Dims{seq, dirs, batch, hidden});
    v.set_output(1, dtype, Dims{dirs, batch, hidden});
    v.set_output(2, dtype, Dims{dirs, batch, hidden});
  }
}

const InferEntry kEntries[] = {
    {"", "RNN", adapt<recurrent<1>>},
    {"", "GRU", adapt<recurrent<3>>},
    {"", "LSTM", adapt<recurrent<4>>},
};

}  // namespace

std::span<const InferEntry> recurrent_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
