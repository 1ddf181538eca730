// GridSample: samples X [N, C, d_1, ..., d_r] at the normalised locations of a grid
// [N, o_1, ..., o_r, r] (the grid's last axis lists the coordinates innermost axis first: x, y,
// z...), giving [N, C, o_1, ..., o_r]. Opset 16 defines the 2-D case with modes bilinear /
// nearest / bicubic; opset 20 renamed them linear / nearest / cubic and allows any r >= 1.
// The arithmetic follows the ONNX reference (and onnxruntime): a coordinate past the padding
// border is first clamped (border) or reflected (reflection); then every interpolation tap is
// fetched with the same padding rule, nearest rounds half to even and cubic uses A = -0.75.
// Computed in double.
#include <algorithm>
#include <cmath>

#include "data_movement.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

enum class Padding { kZeros, kBorder, kReflection };
enum class Mode { kLinear, kNearest, kCubic };

// Reflects v into [lo, hi] by the nearer border, repeatedly (the reference's _gs_reflect, with
// the fold count kept in double so that far-away coordinates cannot overflow an integer).
double reflect(double v, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0) return lo;
  if (v >= lo && v <= hi) return v;
  const bool below = v < lo;
  const double d = below ? lo - v : v - hi;
  const double folds = std::floor(d / span);
  const double r = d - folds * span;
  const bool even = std::fmod(folds, 2.0) == 0;
  return below == even ? lo + r : hi - r;
}

// Keys' cubic convolution weights for the taps at offsets -1, 0, 1, 2 of fraction t.
void cubic_weights(double t, double w[4]) {
  constexpr double A = -0.75;
  const auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  const auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

struct Taps {
  int64_t index[4];  // input index along the axis, -1 for a zero (padding) tap
  double weight[4];
  int count = 0;
};

class Sampler {
 public:
  Sampler(Mode mode, Padding padding, bool align_corners)
      : mode_(mode), padding_(padding), align_corners_(align_corners) {}

  // The taps of normalised coordinate g along an axis of `size` elements. False when the
  // coordinate is NaN (the sample is NaN).
  bool taps(double g, int64_t size, Taps& t) const {
    const double len = static_cast<double>(size);
    double x = align_corners_ ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
    const double lo = align_corners_ ? 0.0 : -0.5, hi = align_corners_ ? len - 1 : len - 0.5;
    if (mode_ == Mode::kNearest) x = std::nearbyint(x);  // ties to even
    if (std::isnan(x)) return false;
    if (x < lo || x > hi) {
      if (padding_ == Padding::kBorder)
        x = std::clamp(x, 0.0, len - 1);
      else if (padding_ == Padding::kReflection)
        x = reflect(x, lo, hi);
    }
    if (std::isnan(x)) return false;
    // Far outside (zeros padding, or infinities) every tap is padding; clamping keeps the
    // integer conversions defined without changing which taps are inside.
    x = std::clamp(x, -4.0 - len, len + 4.0);
    t.count = 0;
    if (mode_ == Mode::kNearest) {
      add(t, static_cast<int64_t>(x), 1.0, size, lo, hi);
    } else if (mode_ == Mode::kLinear) {
      const double x0 = std::floor(x), f = x - x0;
      add(t, static_cast<int64_t>(x0), 1 - f, size, lo, hi);
      add(t, static_cast<int64_t>(x0) + 1, f, size, lo, hi);
    } else {
      const double x0 = std::floor(x);
      double w[4];
      cubic_weights(x - x0, w);
      for (int k = 0; k < 4; ++k) add(t, static_cast<int64_t>(x0) - 1 + k, w[k], size, lo, hi);
    }
    return true;
  }

 private:
  // Adds a tap at index i, mapped by the padding rule; taps that land on the same element are
  // merged, so an axis never has more taps than elements (this bounds the work of many axes).
  void add(Taps& t, int64_t i, double w, int64_t size, double lo, double hi) const {
    if (i < 0 || i >= size) {
      if (padding_ == Padding::kZeros)
        i = -1;
      else if (padding_ == Padding::kBorder)
        i = std::clamp<int64_t>(i, 0, size - 1);
      else
        i = std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0,
                                size - 1);
    }
    for (int k = 0; k < t.count; ++k)
      if (t.index[k] == i) {
        t.weight[k] += w;
        return;
      }
    t.index[t.count] = i;
    t.weight[t.count++] = w;
  }

  Mode mode_;
  Padding padding_;
  bool align_corners_;
};

void grid_sample(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& grid = ctx.required_input(1);
  dispatch<kFloats>(x.dtype, where, []<typename T>() {});
  dispatch<kFloats>(grid.dtype, where + " grid", []<typename T>() {});
  const bool renamed = ctx.opset() >= 20;
  if (x.rank < 3 || (!renamed && x.rank != 4))
    fail(LOOM_ERROR_INVALID_MODEL, where + ": X " + shape_string(misc::dims_of(x)) +
                                       (renamed ? " must be [N, C, d_1, ..., d_r] with r >= 1"
                                                : " must be 4-D (N, C, H, W)"));
  const int64_t r = x.rank - 2;
  if (grid.rank != x.rank || grid.dims[0] != x.dims[0] || grid.dims[grid.rank - 1] != r)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": grid " + shape_string(misc::dims_of(grid)) +
                                       " must be [N, o_1, ..., o_r, r] for X " +
                                       shape_string(misc::dims_of(x)));
  const std::string mode_name = ctx.attrs().get_string("mode", renamed ? "linear" : "bilinear");
  Mode mode;
  if (mode_name == "nearest")
    mode = Mode::kNearest;
  else if (mode_name == (renamed ? "linear" : "bilinear"))
    mode = Mode::kLinear;
  else if (mode_name == (renamed ? "cubic" : "bicubic"))
    mode = Mode::kCubic;
  else
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": unknown mode '" + mode_name + "' for opset " + std::to_string(ctx.opset()) +
             (renamed ? " (linear, nearest or cubic)" : " (bilinear, nearest or bicubic)"));
  const std::string padding_name = ctx.attrs().get_string("padding_mode", "zeros");
  Padding padding;
  if (padding_name == "zeros")
    padding = Padding::kZeros;
  else if (padding_name == "border")
    padding = Padding::kBorder;
  else if (padding_name == "reflection")
    padding = Padding::kReflection;
  else
    fail(LOOM_ERROR_INVALID_MODEL, where + ": unknown padding_mode '" + padding_name + "'");
  const Sampler sampler(mode, padding, ctx.attrs().get_int("align_corners", 0) != 0);

  const int64_t N = x.dims[0], C = x.dims[1];
  std::vector<int64_t> out_dims = {N, C};
  for (int64_t k = 1; k <= r; ++k) out_dims.push_back(grid.dims[k]);
  const std::span<const int64_t> in_spatial(x.dims + 2, static_cast<size_t>(r));
  const int64_t plane = sdk::element_count(in_spatial);
  const int64_t points = sdk::element_count(std::span<const int64_t>(out_dims).subspan(2));
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  if (sdk::element_count(y) == 0) return;
  const std::vector<double> in = misc::read_as<double>(x, where + " X");
  const std::vector<double> g = misc::read_as<double>(grid, where + " grid");
  std::vector<int64_t> strides(static_cast<size_t>(r), 1);
  for (int64_t k = r - 1; k > 0; --k) strides[k - 1] = strides[k] * in_spatial[k];
  std::vector<double> out(static_cast<size_t>(sdk::element_count(y)));
  std::vector<Taps> taps(static_cast<size_t>(r));
  std::vector<int> pick(static_cast<size_t>(r));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < points; ++p) {
      const double* coords = &g[static_cast<size_t>((n * points + p) * r)];
      bool defined = true;
      // Spatial axis k is addressed by grid coordinate r - 1 - k (x is the innermost axis).
      for (int64_t k = 0; k < r && defined; ++k)
        defined = sampler.taps(coords[r - 1 - k], in_spatial[k], taps[k]);
      for (int64_t c = 0; c < C; ++c) {
        const double* img = &in[static_cast<size_t>((n * C + c) * plane)];
        double v = 0;
        if (!defined) {
          v = std::nan("");
        } else {
          // Sum over the product of every axis' taps (odometer over `pick`).
          std::fill(pick.begin(), pick.end(), 0);
          for (;;) {
            double w = 1;
            int64_t offset = 0;
            for (int64_t k = 0; k < r; ++k) {
              const Taps& t = taps[k];
              const int64_t i = t.index[pick[k]];
              if (i < 0) {
                offset = -1;
                break;
              }
              offset += i * strides[k];
              w *= t.weight[pick[k]];
            }
            if (offset >= 0) v += w * img[offset];
            int64_t k = r - 1;
            for (; k >= 0; --k) {
              if (++pick[k] < taps[k].count) break;
              pick[k] = 0;
            }
            if (k < 0) break;
          }
        }
        out[static_cast<size_t>((n * C + c) * points + p)] = v;
      }
    }
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL("GridSample", 16, grid_sample, nullptr);

}  // namespace loom::cpu
