// Signal processing (opset 17): the window generators, DFT, STFT, MelWeightMatrix.
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

loom_dtype_t output_datatype(const NodeView& v) {
  int64_t code = v.attrs().get_int("output_datatype", LOOM_DTYPE_FLOAT32);
  if (code < LOOM_DTYPE_FLOAT32 || code > LOOM_DTYPE_BFLOAT16)
    v.fail("output_datatype " + std::to_string(code) + " is not an element type");
  return static_cast<loom_dtype_t>(code);
}

// A constant scalar integer input, or -1.
int64_t scalar_input(const NodeView& v, size_t i, const char* what) {
  std::optional<Dims> value = v.const_ints(i);
  if (!value) return kUnknownDim;
  if (value->size() != 1) v.fail(std::string(what) + " must be a scalar");
  if ((*value)[0] < 0)
    v.fail(std::string(what) + " " + std::to_string((*value)[0]) + " is negative");
  return (*value)[0];
}

// HannWindow, HammingWindow, BlackmanWindow(size): [size].
void window(NodeView& v) {
  v.set_output(0, output_datatype(v), Dims{scalar_input(v, 0, "size")});
}

// DFT(input [..., n, 1 or 2], dft_length?[, axis? from opset 20]): output [..., n', 2] along
// the axis, with n' = dft_length (default n), halved plus one when onesided. The inverse of a
// one-sided spectrum (IRFFT) is real: [..., n', 1] with n' defaulting to 2 * (n - 1).
// `axis` is -1 when opset 20's axis input is not a constant.
void dft_shape(NodeView& v, int64_t axis) {
  std::optional<Dims> in = v.shape(0);
  if (!in) return v.set_output_dtype(0, v.dtype(0));
  if (in->size() < 2) v.fail("input " + dims_to_string(*in) + " must have rank >= 2");
  if (in->back() >= 0 && in->back() != 1 && in->back() != 2)
    v.fail("last dimension of input " + dims_to_string(*in) + " must be 1 (real) or 2 (complex)");
  const bool onesided = v.attrs().get_int("onesided", 0) != 0;
  const bool irfft = onesided && v.attrs().get_int("inverse", 0) != 0;
  Dims out = *in;
  out.back() = irfft ? 1 : 2;
  if (axis == kUnknownDim) {
    // Any signal axis may change its extent.
    for (size_t k = 0; k + 1 < out.size(); ++k) out[k] = kUnknownDim;
    return v.set_output(0, v.dtype(0), out);
  }
  // The last axis holds (real, imaginary) and cannot be transformed.
  const int64_t rank = static_cast<int64_t>(in->size());
  if (axis < -rank || axis > rank - 2 || axis == -1)
    v.fail("axis " + std::to_string(axis) + " is not a signal axis of input " +
           dims_to_string(*in) + " (range [-r, -2] or [0, r - 2])");
  if (axis < 0) axis += rank;
  const int64_t len = (*in)[static_cast<size_t>(axis)];
  int64_t n = v.has_input(1) ? scalar_input(v, 1, "dft_length") : kUnknownDim;
  if (n == 0) v.fail("dft_length must be positive");
  if (!v.has_input(1) && len >= 0) {
    if (irfft && len < 2)
      v.fail("the one-sided spectrum of input " + dims_to_string(*in) +
             " needs 2 or more bins for the default dft_length 2 * (bins - 1)");
    n = irfft ? 2 * (len - 1) : len;
  }
  if (n >= 0 && onesided && !irfft) n = n / 2 + 1;
  out[static_cast<size_t>(axis)] = n;
  v.set_output(0, v.dtype(0), out);
}

void dft(NodeView& v) {
  dft_shape(v, v.attrs().get_int("axis", 1));
}

// DFT-20 takes the axis as an optional scalar input (default -2, the last signal axis).
void dft_20(NodeView& v) {
  int64_t axis = -2;
  if (v.has_input(2)) {
    std::optional<Dims> value = v.const_ints(2);
    if (value && value->size() != 1) v.fail("axis must be a scalar");
    axis = value ? (*value)[0] : kUnknownDim;
    // -1 names the (real, imaginary) axis, never valid: keep it distinct from "unknown".
    if (value && axis == kUnknownDim)
      v.fail("axis -1 names the real/imaginary dimension, not a signal axis");
  }
  dft_shape(v, axis);
}

// STFT(signal [batch, length, 1 or 2], frame_step, window?, frame_length?):
// [batch, frames, bins, 2].
void stft(NodeView& v) {
  std::optional<Dims> signal = v.shape(0);
  if (signal && signal->size() != 3)
    v.fail("signal " + dims_to_string(*signal) + " must be 3-D [batch, length, 1 or 2]");
  int64_t step = scalar_input(v, 1, "frame_step");
  if (step == 0) v.fail("frame_step must be positive");
  int64_t length = v.has_input(3) ? scalar_input(v, 3, "frame_length") : kUnknownDim;
  if (length < 0)
    if (std::optional<Dims> w = v.shape(2); w && w->size() == 1) length = (*w)[0];
  int64_t frames = kUnknownDim;
  if (signal && (*signal)[1] >= 0 && length >= 0 && step > 0) {
    if (length > (*signal)[1])
      v.fail("frame_length " + std::to_string(length) + " exceeds the signal length " +
             std::to_string((*signal)[1]));
    frames = ((*signal)[1] - length) / step + 1;
  }
  int64_t bins = length;
  if (bins >= 0 && v.attrs().get_int("onesided", 1) != 0) bins = bins / 2 + 1;
  v.set_output(0, v.dtype(0), Dims{signal ? (*signal)[0] : kUnknownDim, frames, bins, 2});
}

// MelWeightMatrix(num_mel_bins, dft_length, ...): [dft_length / 2 + 1, num_mel_bins].
void mel_weight_matrix(NodeView& v) {
  int64_t mel = scalar_input(v, 0, "num_mel_bins");
  int64_t dft_length = scalar_input(v, 1, "dft_length");
  v.set_output(0, output_datatype(v), Dims{dft_length < 0 ? kUnknownDim : dft_length / 2 + 1, mel});
}

const InferEntry kEntries[] = {
    {"", "HannWindow", adapt<window>},
    {"", "HammingWindow", adapt<window>},
    {"", "BlackmanWindow", adapt<window>},
    {"", "DFT", adapt<dft>, 17, 19},
    {"", "DFT", adapt<dft_20>, 20},
    {"", "STFT", adapt<stft>},
    {"", "MelWeightMatrix", adapt<mel_weight_matrix>},
};

}  // namespace

std::span<const InferEntry> signal_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
