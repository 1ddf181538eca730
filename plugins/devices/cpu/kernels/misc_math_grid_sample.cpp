// GridSample (16): samples a [N, C, H, W] input at the normalised (x, y) locations of a
// [N, H_out, W_out, 2] grid with bilinear, nearest (ties to even) or bicubic (A = -0.75)
// interpolation and zeros / border / reflection padding, following torch.grid_sample (which
// the ONNX definition refers to). Computed in double.
#include <cmath>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

enum class Padding { kZeros, kBorder, kReflection };

struct Sampler {
  int64_t H, W;
  bool align_corners;
  Padding padding;

  // [-1, 1] -> pixel coordinates.
  double unnormalize(double v, int64_t size) const {
    return align_corners ? (v + 1.0) / 2.0 * static_cast<double>(size - 1)
                         : ((v + 1.0) * static_cast<double>(size) - 1.0) / 2.0;
  }
  static double reflect(double v, double twice_low, double twice_high) {
    if (twice_low == twice_high) return 0.0;
    const double min = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
    v = std::fabs(v - min);
    const double extra = std::fmod(v, span);
    const int64_t flips = static_cast<int64_t>(std::floor(v / span));
    return flips % 2 == 0 ? extra + min : span - extra + min;
  }
  // Applies border / reflection padding to a coordinate (zeros: unchanged).
  double pad(double v, int64_t size) const {
    if (padding == Padding::kZeros) return v;
    if (padding == Padding::kReflection)
      v = align_corners ? reflect(v, 0.0, 2.0 * static_cast<double>(size - 1))
                        : reflect(v, -1.0, 2.0 * static_cast<double>(size) - 1.0);
    return std::min(static_cast<double>(size - 1), std::max(0.0, v));
  }
  // Pixel value, 0 outside the image.
  static double at(const double* img, int64_t W, int64_t H, int64_t x, int64_t y) {
    return (x >= 0 && x < W && y >= 0 && y < H) ? img[y * W + x] : 0.0;
  }
  static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
  static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }
};

void grid_sample(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& grid = ctx.required_input(1);
  dispatch<kFloats>(x.dtype, where, []<typename T>() {});
  if (x.rank != 4 || grid.rank != 4 || grid.dims[0] != x.dims[0] || grid.dims[3] != 2)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": need X [N, C, H, W] and grid [N, H_out, W_out, 2]");
  const std::string mode = ctx.attrs().get_string("mode", "bilinear");
  const std::string padding_name = ctx.attrs().get_string("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    fail(LOOM_ERROR_INVALID_MODEL, where + ": unknown mode '" + mode + "'");
  Sampler s;
  s.align_corners = ctx.attrs().get_int("align_corners", 0) != 0;
  if (padding_name == "zeros")
    s.padding = Padding::kZeros;
  else if (padding_name == "border")
    s.padding = Padding::kBorder;
  else if (padding_name == "reflection")
    s.padding = Padding::kReflection;
  else
    fail(LOOM_ERROR_INVALID_MODEL, where + ": unknown padding_mode '" + padding_name + "'");
  const int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const int64_t Ho = grid.dims[1], Wo = grid.dims[2];
  s.H = H;
  s.W = W;
  const std::vector<double> in = misc::read_as<double>(x, where + " X");
  const std::vector<double> g = misc::read_as<double>(grid, where + " grid");
  std::vector<double> out(static_cast<size_t>(N * C * Ho * Wo));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < Ho * Wo; ++p) {
      const double gx = s.unnormalize(g[(n * Ho * Wo + p) * 2], W);
      const double gy = s.unnormalize(g[(n * Ho * Wo + p) * 2 + 1], H);
      for (int64_t c = 0; c < C; ++c) {
        const double* img = &in[(n * C + c) * H * W];
        double v = 0.0;
        if (mode == "nearest") {
          const double px = s.pad(gx, W), py = s.pad(gy, H);
          v = Sampler::at(img, W, H, static_cast<int64_t>(std::nearbyint(px)),
                          static_cast<int64_t>(std::nearbyint(py)));
        } else if (mode == "bilinear") {
          const double px = s.pad(gx, W), py = s.pad(gy, H);
          const int64_t x0 = static_cast<int64_t>(std::floor(px)),
                        y0 = static_cast<int64_t>(std::floor(py));
          const double tx = px - static_cast<double>(x0), ty = py - static_cast<double>(y0);
          v = Sampler::at(img, W, H, x0, y0) * (1 - tx) * (1 - ty) +
              Sampler::at(img, W, H, x0 + 1, y0) * tx * (1 - ty) +
              Sampler::at(img, W, H, x0, y0 + 1) * (1 - tx) * ty +
              Sampler::at(img, W, H, x0 + 1, y0 + 1) * tx * ty;
        } else {
          // Bicubic: the 4x4 neighbourhood; padding applies to every tap.
          constexpr double A = -0.75;
          const int64_t x0 = static_cast<int64_t>(std::floor(gx)),
                        y0 = static_cast<int64_t>(std::floor(gy));
          const double tx = gx - static_cast<double>(x0), ty = gy - static_cast<double>(y0);
          const double cx[4] = {Sampler::cubic2(tx + 1, A), Sampler::cubic1(tx, A),
                                Sampler::cubic1(1 - tx, A), Sampler::cubic2(2 - tx, A)};
          const double cy[4] = {Sampler::cubic2(ty + 1, A), Sampler::cubic1(ty, A),
                                Sampler::cubic1(1 - ty, A), Sampler::cubic2(2 - ty, A)};
          for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 4; ++i) {
              const double tap_x = s.pad(static_cast<double>(x0 - 1 + i), W);
              const double tap_y = s.pad(static_cast<double>(y0 - 1 + j), H);
              v += cx[i] * cy[j] *
                   Sampler::at(img, W, H, static_cast<int64_t>(tap_x), static_cast<int64_t>(tap_y));
            }
        }
        out[(n * C + c) * Ho * Wo + p] = v;
      }
    }
  const int64_t dims[4] = {N, C, Ho, Wo};
  misc::write_as<double>(ctx.allocate_output(0, x.dtype, dims), out, where);
}

}  // namespace

LOOM_CPU_KERNEL("GridSample", 16, grid_sample, nullptr);

}  // namespace loom::cpu
