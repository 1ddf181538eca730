// Normalisations and the softmax family: output = input, with the per-channel parameters
// checked against the channel count and the statistics outputs of BatchNormalization and
// LayerNormalization shaped.
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

// Inputs [first, last] must be 1-D of `channels` extent (when both are known).
void check_per_channel(const NodeView& v, size_t first, size_t last, int64_t channels) {
  for (size_t i = first; i <= last; ++i) {
    std::optional<Dims> p = v.shape(i);
    if (!p) continue;
    if (p->size() != 1)
      v.fail("input " + std::to_string(i) + " " + dims_to_string(*p) +
             " must be 1-D with one value per channel");
    if (channels >= 0 && (*p)[0] >= 0 && (*p)[0] != channels)
      v.fail("input " + std::to_string(i) + " " + dims_to_string(*p) + " does not match the " +
             std::to_string(channels) + " channels of X " + dims_to_string(v.shape(0)));
  }
}

int64_t channels_of(const NodeView& v) {
  std::optional<Dims> x = v.shape(0);
  if (!x) return kUnknownDim;
  if (x->size() < 2) v.fail("input " + dims_to_string(*x) + " must have rank >= 2 (N, C, ...)");
  return (*x)[1];
}

// BatchNormalization(X, scale, B, mean, var): Y = X; the optional outputs (running or saved
// mean and variance, depending on the version) are per channel.
void batch_norm(NodeView& v) {
  int64_t c = channels_of(v);
  // Before opset 9 (spatial=0) scale may cover C x spatial; check only the 1-D forms.
  if (v.attrs().get_int("spatial", 1) != 0) check_per_channel(v, 1, 4, c);
  v.propagate(0, 0);
  for (size_t i = 1; i < v.num_outputs(); ++i) v.set_output(i, v.dtype(1), Dims{c});
}

void instance_norm(NodeView& v) {
  check_per_channel(v, 1, 2, channels_of(v));
  v.propagate(0, 0);
}

// GroupNormalization(X, scale, bias): scale and bias hold one value per group (opset 18).
void group_norm(NodeView& v) {
  int64_t c = channels_of(v);
  int64_t groups = v.attrs().get_int("num_groups", 0);
  if (groups <= 0) v.fail("attribute num_groups must be positive");
  if (c >= 0 && c % groups != 0)
    v.fail(std::to_string(c) + " channels of X " + dims_to_string(v.shape(0)) +
           " are not divisible by num_groups " + std::to_string(groups));
  check_per_channel(v, 1, 2, groups);
  v.propagate(0, 0);
}

// GroupNormalization-21: scale and bias hold one value per channel; stash_type (a floating-point
// element type) sets the precision of the statistics.
void group_norm_21(NodeView& v) {
  int64_t c = channels_of(v);
  int64_t groups = v.attrs().get_int("num_groups", 0);
  if (groups <= 0) v.fail("attribute num_groups must be positive");
  if (c >= 0 && c % groups != 0)
    v.fail(std::to_string(c) + " channels of X " + dims_to_string(v.shape(0)) +
           " are not divisible by num_groups " + std::to_string(groups));
  int64_t stash = v.attrs().get_int("stash_type", LOOM_DTYPE_FLOAT32);
  if (stash != LOOM_DTYPE_FLOAT32 && stash != LOOM_DTYPE_FLOAT64 && stash != LOOM_DTYPE_FLOAT16 &&
      stash != LOOM_DTYPE_BFLOAT16)
    v.fail("stash_type " + std::to_string(stash) + " is not a floating-point type");
  check_per_channel(v, 1, 2, c);
  v.propagate(0, 0);
}

// LayerNormalization(X, Scale, B?): Y = X; Mean and InvStdDev keep X's leading dims and have
// extent 1 from `axis` on, in the stash type (float by default).
void layer_norm(NodeView& v) {
  v.propagate(0, 0);
  int64_t stash_code = v.attrs().get_int("stash_type", LOOM_DTYPE_FLOAT32);
  if (stash_code < LOOM_DTYPE_FLOAT32 || stash_code > LOOM_DTYPE_BFLOAT16)
    v.fail("stash_type " + std::to_string(stash_code) + " is not an element type");
  loom_dtype_t stash = static_cast<loom_dtype_t>(stash_code);
  std::optional<Dims> x = v.shape(0);
  if (!x) {
    v.set_output_dtype(1, stash);
    v.set_output_dtype(2, stash);
    return;
  }
  int64_t rank = static_cast<int64_t>(x->size());
  int64_t axis = v.normalize_axis(v.attrs().get_int("axis", -1), rank);
  Dims normalized(x->begin() + axis, x->end());
  for (size_t i = 1; i <= 2; ++i) {
    std::optional<Dims> p = v.shape(i);
    if (!p) continue;
    // Scale and B broadcast unidirectionally to the normalised trailing dimensions.
    infer::check_broadcasts_to(
        v, *p, normalized,
        std::string(i == 1 ? "Scale" : "B") + " (input " + std::to_string(i) + ")");
  }
  Dims stats = *x;
  for (int64_t k = axis; k < rank; ++k) stats[static_cast<size_t>(k)] = 1;
  v.set_output(1, stash, stats);
  v.set_output(2, stash, stats);
}

// Softmax, LogSoftmax, Hardmax, LpNormalization, CumSum-like ops with an `axis`: output = input,
// with the axis checked.
void same_with_axis(NodeView& v) {
  if (int32_t rank = v.rank(0); rank >= 0 && v.attrs().has("axis"))
    v.normalize_axis(v.attrs().get_int("axis", 0), std::max<int32_t>(rank, 1));
  v.propagate(0, 0);
}

// LRN: the window of `size` channels is required and must hold at least one channel.
void lrn(NodeView& v) {
  if (!v.attrs().has("size")) v.fail("attribute size is required");
  int64_t size = v.attrs().get_int("size", 0);
  if (size <= 0) v.fail("size = " + std::to_string(size) + " must be positive");
  v.propagate(0, 0);
}

const InferEntry kEntries[] = {
    {"", "BatchNormalization", adapt<batch_norm>},
    {"", "InstanceNormalization", adapt<instance_norm>},
    {"", "GroupNormalization", adapt<group_norm>, 18, 20},
    {"", "GroupNormalization", adapt<group_norm_21>, 21},
    {"", "LayerNormalization", adapt<layer_norm>},
    {"", "LpNormalization", adapt<same_with_axis>},
    {"", "MeanVarianceNormalization", adapt<infer::same_as_input>},
    {"", "LRN", adapt<lrn>},
    {"", "Softmax", adapt<same_with_axis>},
    {"", "LogSoftmax", adapt<same_with_axis>},
    {"", "Hardmax", adapt<same_with_axis>},
};

}  // namespace

std::span<const InferEntry> normalization_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
