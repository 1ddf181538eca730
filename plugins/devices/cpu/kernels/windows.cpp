// Window generators (HannWindow, HammingWindow, BlackmanWindow; 17) and MelWeightMatrix (17).
// Windows are generalized cosine windows w[n] = a0 - a1·cos(2πn/N) + a2·cos(4πn/N) with
// N = size (periodic) or size - 1 (symmetric).
#include <cmath>
#include <numbers>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

void cosine_window(KernelContext& ctx, double a0, double a1, double a2) {
  const std::string where = ctx.where();
  const int64_t size = misc::read_scalar_int(ctx.required_input(0), where + " size");
  misc::check_output_size(size, where);
  const loom_dtype_t dtype =
      misc::dtype_from_onnx(ctx.attrs().get_int("output_datatype", 1), kNumeric, where);
  const bool periodic = ctx.attrs().get_int("periodic", 1) != 0;
  const double N = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    if (N <= 0) {  // a symmetric window of one sample
      w[n] = 1.0;
      continue;
    }
    const double x = 2.0 * std::numbers::pi * static_cast<double>(n) / N;
    w[n] = a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x);
  }
  loom_tensor_t& y = ctx.allocate_output(0, dtype, std::span<const int64_t>(&size, 1));
  misc::write_as<double>(y, w, where);
}

void hann_window(KernelContext& ctx) {
  cosine_window(ctx, 0.5, 0.5, 0.0);
}
// ONNX defines Hamming with alpha = 25/46 and beta = 1 - alpha (not the rounded 0.54/0.46).
void hamming_window(KernelContext& ctx) {
  cosine_window(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}
void blackman_window(KernelContext& ctx) {
  cosine_window(ctx, 0.42, 0.5, 0.08);
}

// Triangular filters between num_mel_bins + 2 points equally spaced on the mel scale
// (mel(f) = 2595·log10(1 + f/700)), mapped to spectrogram bins as
// floor((dft_length + 1)·f / sample_rate), each rising to 1 at its centre bin.
void mel_weight_matrix(KernelContext& ctx) {
  const std::string where = ctx.where();
  const int64_t mel_bins = misc::read_scalar_int(ctx.required_input(0), where + " num_mel_bins");
  const int64_t dft_length = misc::read_scalar_int(ctx.required_input(1), where + " dft_length");
  const int64_t sample_rate = misc::read_scalar_int(ctx.required_input(2), where + " sample_rate");
  const double lower = misc::read_scalar_float(ctx.required_input(3), where + " lower_edge_hertz");
  const double upper = misc::read_scalar_float(ctx.required_input(4), where + " upper_edge_hertz");
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": num_mel_bins, dft_length and sample_rate must be positive");
  // Edges above the Nyquist frequency are allowed; their bins are clamped to the spectrogram.
  if (!(lower >= 0.0) || !(upper > lower))
    fail(LOOM_ERROR_INVALID_MODEL, where + ": need 0 <= lower_edge_hertz < upper_edge_hertz");
  misc::check_output_size(dft_length, where);
  misc::check_output_size(mel_bins, where);
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  misc::check_output_size(spectrogram_bins * mel_bins, where);
  const loom_dtype_t dtype =
      misc::dtype_from_onnx(ctx.attrs().get_int("output_datatype", 1), kNumeric, where);
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = to_mel(lower), high_mel = to_mel(upper);
  const int64_t points = mel_bins + 2;
  // The ONNX definition divides the mel range by the number of points (not intervals).
  const double mel_step = (high_mel - low_mel) / static_cast<double>(points);
  std::vector<int64_t> bin(static_cast<size_t>(points));
  for (int64_t i = 0; i < points; ++i) {
    const double hz =
        700.0 * (std::pow(10.0, (static_cast<double>(i) * mel_step + low_mel) / 2595.0) - 1.0);
    bin[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    bin[i] = std::min(std::max<int64_t>(bin[i], 0), spectrogram_bins - 1);
  }
  std::vector<double> out(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
  for (int64_t m = 0; m < mel_bins; ++m) {
    const int64_t lo = bin[m], center = bin[m + 1], hi = bin[m + 2];
    if (center == lo) {
      out[center * mel_bins + m] = 1.0;
    } else {
      for (int64_t j = lo; j <= center; ++j)
        out[j * mel_bins + m] = static_cast<double>(j - lo) / static_cast<double>(center - lo);
    }
    for (int64_t j = center; j < hi; ++j)
      out[j * mel_bins + m] = static_cast<double>(hi - j) / static_cast<double>(hi - center);
  }
  const int64_t dims[2] = {spectrogram_bins, mel_bins};
  loom_tensor_t& y = ctx.allocate_output(0, dtype, dims);
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL("HannWindow", 17, hann_window, nullptr);
LOOM_CPU_KERNEL("HammingWindow", 17, hamming_window, nullptr);
LOOM_CPU_KERNEL("BlackmanWindow", 17, blackman_window, nullptr);
LOOM_CPU_KERNEL("MelWeightMatrix", 17, mel_weight_matrix, nullptr);

}  // namespace loom::cpu
