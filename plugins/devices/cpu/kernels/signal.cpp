// DFT (17, 20) and STFT (17). Signals are real ([..., 1]) or complex ([..., 2]: real, imaginary);
// outputs are complex ([..., 2]). Transforms run in double: a radix-2 FFT for power-of-two
// lengths and a direct O(n²) DFT with an exact twiddle table otherwise.
//   forward: X[k] = Σ_j x[j]·e^{-2πi·jk/n}     inverse: x[j] = (1/n)·Σ_k X[k]·e^{+2πi·jk/n}
#include <cmath>
#include <complex>
#include <numbers>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

using Complex = std::complex<double>;

// In-place transform of `data` (length n) in the given direction, without 1/n scaling.
void transform(std::vector<Complex>& data, bool inverse) {
  const size_t n = data.size();
  if (n <= 1) return;
  const double sign = inverse ? 1.0 : -1.0;
  if ((n & (n - 1)) == 0) {
    // Iterative radix-2 Cooley-Tukey: bit-reversal permutation, then butterflies.
    for (size_t i = 1, j = 0; i < n; ++i) {
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(data[i], data[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      const size_t half = len / 2;
      for (size_t start = 0; start < n; start += len)
        for (size_t k = 0; k < half; ++k) {
          const double angle =
              sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(len);
          const Complex w(std::cos(angle), std::sin(angle));
          const Complex a = data[start + k], b = data[start + k + half] * w;
          data[start + k] = a + b;
          data[start + k + half] = a - b;
        }
    }
    return;
  }
  std::vector<Complex> twiddle(n);
  for (size_t m = 0; m < n; ++m) {
    const double angle =
        sign * 2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
    twiddle[m] = Complex(std::cos(angle), std::sin(angle));
  }
  std::vector<Complex> out(n);
  for (size_t k = 0; k < n; ++k) {
    Complex acc = 0;
    for (size_t j = 0; j < n; ++j) acc += data[j] * twiddle[(j * k) % n];
    out[k] = acc;
  }
  data.swap(out);
}

void require_signal(const KernelContext& ctx, const loom_tensor_t& t, int32_t min_rank) {
  if (t.rank < min_rank || (t.dims[t.rank - 1] != 1 && t.dims[t.rank - 1] != 2))
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": the signal must have rank >= " + std::to_string(min_rank) +
             " and a last dimension of 1 (real) or 2 (complex)");
  dispatch<kFloats>(t.dtype, ctx, []<typename T>() {});
}

// DFT along one signal axis. Opset 17 names the axis by attribute (default 1), opset 20 by an
// optional scalar input (default -2); either counts negative values from the back of the
// whole rank, whose last axis (real, imaginary) is never a signal axis. onesided + inverse is
// the IRFFT: the input holds the first bins of a Hermitian spectrum and the output is real.
void dft_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  require_signal(ctx, x, 2);
  int64_t axis = ctx.opset() >= 20 ? -2 : ctx.attrs().get_int("axis", 1);
  if (ctx.opset() >= 20)
    if (const loom_tensor_t* a = ctx.input(2)) axis = misc::read_scalar_int(*a, where + " axis");
  if (axis < -x.rank || axis > x.rank - 2 || axis == -1)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": axis " + std::to_string(axis) +
                                       " is not a signal axis of a rank-" + std::to_string(x.rank) +
                                       " input (range [-r, -2] or [0, r - 2])");
  if (axis < 0) axis += x.rank;
  const bool inverse = ctx.attrs().get_int("inverse", 0) != 0;
  const bool onesided = ctx.attrs().get_int("onesided", 0) != 0;
  const bool irfft = inverse && onesided;
  const int64_t len_in = x.dims[axis];
  int64_t n = irfft ? 2 * (len_in - 1) : len_in;
  if (const loom_tensor_t* t = ctx.input(1); t && misc::count_of(*t) > 0) {
    n = misc::read_scalar_int(*t, where + " dft_length");
    if (n <= 0) fail(LOOM_ERROR_INVALID_MODEL, where + ": dft_length must be positive");
  } else if (n <= 0) {
    fail(LOOM_ERROR_INVALID_MODEL, where + ": a one-sided spectrum of " + std::to_string(len_in) +
                                       " bins has no default dft_length 2 * (bins - 1)");
  }
  const int64_t bins = onesided && !irfft ? n / 2 + 1 : n;
  const int64_t out_comps = irfft ? 1 : 2;
  std::vector<int64_t> out_dims = misc::dims_of(x);
  out_dims[axis] = bins;
  out_dims.back() = out_comps;
  misc::check_output_size(sdk::element_count(out_dims) + n, where);
  const int64_t comps = x.dims[x.rank - 1];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (int64_t i = axis + 1; i < x.rank - 1; ++i) inner *= x.dims[i];
  const std::vector<double> in = misc::read_as<double>(x, where);
  std::vector<double> out(static_cast<size_t>(outer * bins * inner * out_comps));
  std::vector<Complex> line(static_cast<size_t>(n));
  const auto sample = [&](int64_t o, int64_t i, int64_t j) {
    if (j >= len_in) return Complex(0);
    const double* p = &in[((o * len_in + j) * inner + i) * comps];
    return Complex(p[0], comps == 2 ? p[1] : 0.0);
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      if (irfft) {
        // Rebuild the full spectrum from bins 0..n/2 (X[n-k] = conj X[k]); as numpy's irfft
        // does, the imaginary parts of bin 0 and (for even n) bin n/2 do not count.
        const int64_t half = n / 2;
        for (int64_t k = 0; k <= half; ++k) line[k] = sample(o, i, k);
        line[0].imag(0);
        if (n % 2 == 0) line[half].imag(0);
        for (int64_t k = half + 1; k < n; ++k) line[k] = std::conj(line[n - k]);
      } else {
        for (int64_t j = 0; j < n; ++j) line[j] = sample(o, i, j);
      }
      transform(line, inverse);
      const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
      for (int64_t k = 0; k < bins; ++k) {
        double* q = &out[((o * bins + k) * inner + i) * out_comps];
        q[0] = line[k].real() * scale;
        if (!irfft) q[1] = line[k].imag() * scale;
      }
    }
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  misc::write_as<double>(y, out, where);
}

void stft_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& signal = ctx.required_input(0);
  require_signal(ctx, signal, 3);
  if (signal.rank != 3)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": signal must be [batch_size, signal_length, 1 or 2]");
  const int64_t step = misc::read_scalar_int(ctx.required_input(1), where + " frame_step");
  if (step <= 0) fail(LOOM_ERROR_INVALID_MODEL, where + ": frame_step must be positive");
  std::vector<double> window;
  if (const loom_tensor_t* w = ctx.input(2); w && w->rank >= 1) {
    if (w->rank != 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": window must be 1-D");
    window = misc::read_as<double>(*w, where + " window");
  }
  int64_t frame_length = static_cast<int64_t>(window.size());
  if (const loom_tensor_t* f = ctx.input(3)) {
    frame_length = misc::read_scalar_int(*f, where + " frame_length");
    if (!window.empty() && static_cast<int64_t>(window.size()) != frame_length)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": frame_length " + std::to_string(frame_length) +
                                         " differs from the window length " +
                                         std::to_string(window.size()));
  }
  if (frame_length <= 0)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": frame_length (or a window) is required and must be positive");
  const int64_t batch = signal.dims[0], length = signal.dims[1], comps = signal.dims[2];
  if (length < frame_length)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": the signal (" + std::to_string(length) +
                                       " samples) is shorter than one frame (" +
                                       std::to_string(frame_length) + ")");
  const bool onesided = ctx.attrs().get_int("onesided", 1) != 0;
  const int64_t frames = (length - frame_length) / step + 1;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  misc::check_output_size(batch * frames * bins * 2, where);
  const std::vector<double> in = misc::read_as<double>(signal, where);
  std::vector<double> out(static_cast<size_t>(batch * frames * bins * 2));
  std::vector<Complex> line(static_cast<size_t>(frame_length));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame_length; ++j) {
        const double* p = &in[(b * length + f * step + j) * comps];
        const double w = window.empty() ? 1.0 : window[j];
        line[j] = Complex(p[0] * w, comps == 2 ? p[1] * w : 0.0);
      }
      transform(line, false);
      for (int64_t k = 0; k < bins; ++k) {
        double* q = &out[((b * frames + f) * bins + k) * 2];
        q[0] = line[k].real();
        q[1] = line[k].imag();
      }
    }
  const int64_t dims[4] = {batch, frames, bins, 2};
  loom_tensor_t& y = ctx.allocate_output(0, signal.dtype, dims);
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL("DFT", 17, dft_kernel, nullptr);
LOOM_CPU_KERNEL("STFT", 17, stft_kernel, nullptr);

}  // namespace loom::cpu
