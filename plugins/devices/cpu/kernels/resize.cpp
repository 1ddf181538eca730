// Resize (opsets 10, 11, 13, 18 with axes/keep_aspect_ratio_policy/antialias, 19) and the
// deprecated Upsample (7, 9).
//
// Every mode is separable, so the kernel resizes one axis at a time. For each axis it first
// builds a table: for every output index, the input indices and weights that contribute (or
// "outside", which yields extrapolation_value in tf_crop_and_resize). Coordinates are computed
// in double like the ONNX reference. Nearest mode moves elements unchanged (any dtype);
// linear and cubic interpolate in float (double for float64 input) and round integer outputs
// to nearest with saturation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct Params {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // opset 18: stretch linear/cubic filters by 1/scale when downscaling
  float extrapolation = 0.0f;
};

// Per output index of one axis: taps [begin, begin + count) of the weight table.
struct AxisTable {
  std::vector<int64_t> begin, count;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;
  bool identity = false;
};

Params read_params(const KernelContext& ctx) {
  Params p;
  const std::string op = ctx.node().op_type;
  const bool legacy = op == "Upsample" || ctx.opset() < 11;
  std::string mode = ctx.attrs().get_string("mode", "nearest");
  if (mode == "nearest") {
    p.mode = Mode::kNearest;
  } else if (mode == "linear" || (legacy && mode == "bilinear")) {
    p.mode = Mode::kLinear;
  } else if (mode == "cubic" && !legacy) {
    p.mode = Mode::kCubic;
  } else {
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": unknown mode '" + mode + "'");
  }
  if (legacy) {
    // Upsample and Resize-10 define the asymmetric transform; nearest takes the floor.
    p.coord = Coord::kAsymmetric;
    p.nearest = Nearest::kFloor;
    return p;
  }
  std::string coord = ctx.attrs().get_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel")
    p.coord = Coord::kHalfPixel;
  else if (coord == "half_pixel_symmetric" && ctx.opset() >= 19)
    p.coord = Coord::kHalfPixelSymmetric;
  else if (coord == "pytorch_half_pixel")
    p.coord = Coord::kPytorchHalfPixel;
  else if (coord == "align_corners")
    p.coord = Coord::kAlignCorners;
  else if (coord == "asymmetric")
    p.coord = Coord::kAsymmetric;
  else if (coord == "tf_half_pixel_for_nn" && ctx.opset() < 13)
    p.coord = Coord::kTfHalfPixelForNn;
  else if (coord == "tf_crop_and_resize")
    p.coord = Coord::kTfCropAndResize;
  else
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": unknown coordinate_transformation_mode '" + coord + "'");
  std::string nearest = ctx.attrs().get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    p.nearest = Nearest::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil")
    p.nearest = Nearest::kRoundPreferCeil;
  else if (nearest == "floor")
    p.nearest = Nearest::kFloor;
  else if (nearest == "ceil")
    p.nearest = Nearest::kCeil;
  else
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": unknown nearest_mode '" + nearest + "'");
  p.cubic_a = ctx.attrs().get_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attrs().get_int("exclude_outside", 0) != 0;
  p.extrapolation = ctx.attrs().get_float("extrapolation_value", 0.0f);
  p.antialias = ctx.opset() >= 18 && ctx.attrs().get_int("antialias", 0) != 0;
  return p;
}

// Input coordinate of output index x. `out_len` is scale * in_len as a real number (the
// ONNX reference uses it, not the rounded output size, in align_corners and crop modes);
// `out_size` is the whole number of output pixels.
double original_coordinate(const Params& p, double x, double scale, double in_len, double out_len,
                           double out_size, double roi_start, double roi_end) {
  switch (p.coord) {
    case Coord::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case Coord::kHalfPixelSymmetric: {
      // Centres the rounded output canvas on the input: the shift is the fraction of a pixel
      // that rounding scale * in_len down to out_size dropped, split between both ends.
      const double adjustment = out_size / out_len;
      const double center = in_len / 2;
      return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case Coord::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners:
      return out_len == 1 ? 0.0 : x * (in_len - 1) / (out_len - 1);
    case Coord::kAsymmetric:
      return x / scale;
    case Coord::kTfHalfPixelForNn:
      return (x + 0.5) / scale;
    case Coord::kTfCropAndResize:
      if (out_len > 1)
        return roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (out_len - 1);
      return 0.5 * (roi_start + roi_end) * (in_len - 1);
  }
  return 0.0;
}

int64_t nearest_index(Nearest mode, double x) {
  if (x == std::floor(x)) return static_cast<int64_t>(x);
  switch (mode) {
    case Nearest::kRoundPreferFloor:
      return static_cast<int64_t>(std::ceil(x - 0.5));
    case Nearest::kRoundPreferCeil:
      return static_cast<int64_t>(std::floor(x + 0.5));
    case Nearest::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case Nearest::kCeil:
      return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

double cubic_kernel(double a, double x) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

// Antialiased taps (Resize-18): the linear (triangle) or cubic filter stretched by 1/scale
// when downscaling, so every input pixel under the output pixel contributes; weights are
// normalised to sum 1. Taps sit at base + i with base = ceil(x) - 1, i.e. the ONNX
// reference's convention that the fraction lies in (0, 1].
std::vector<std::pair<int64_t, double>> antialias_taps(const Params& p, double x, double scale) {
  const double s = std::min(scale, 1.0);
  const double base = std::ceil(x) - 1;
  const double r = x - base;
  const double support = p.mode == Mode::kLinear ? 1.0 : 2.0;
  const int64_t start = static_cast<int64_t>(std::floor(-support / s)) + 1;
  const int64_t end = 2 - start;
  std::vector<std::pair<int64_t, double>> taps;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    const double arg = (static_cast<double>(i) - r) * s;
    const double w =
        p.mode == Mode::kLinear ? std::max(0.0, 1 - std::abs(arg)) : cubic_kernel(p.cubic_a, arg);
    taps.emplace_back(static_cast<int64_t>(base) + i, w);
    sum += w;
  }
  if (sum != 0)
    for (auto& t : taps) t.second /= sum;
  return taps;
}

AxisTable build_table(const Params& p, int64_t in_len, int64_t out_len, double scale,
                      double roi_start, double roi_end) {
  AxisTable t;
  t.begin.resize(static_cast<size_t>(out_len));
  t.count.resize(static_cast<size_t>(out_len));
  t.outside.assign(static_cast<size_t>(out_len), false);
  const double real_out = scale * static_cast<double>(in_len);
  bool identity = in_len == out_len;
  for (int64_t x = 0; x < out_len; ++x) {
    t.begin[x] = static_cast<int64_t>(t.index.size());
    const double xo =
        original_coordinate(p, static_cast<double>(x), scale, static_cast<double>(in_len), real_out,
                            static_cast<double>(out_len), roi_start, roi_end);
    if (p.coord == Coord::kTfCropAndResize && (xo < 0 || xo > static_cast<double>(in_len - 1))) {
      t.outside[x] = true;
      t.count[x] = 0;
      identity = false;
      continue;
    }
    auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
    if (p.mode == Mode::kNearest) {
      t.index.push_back(clamp_index(nearest_index(p.nearest, xo)));
      t.weight.push_back(1.0);
    } else {
      const double fl = std::floor(xo);
      const int64_t i0 = static_cast<int64_t>(fl);
      const double r = xo - fl;
      std::vector<std::pair<int64_t, double>> taps;
      if (p.antialias) {
        taps = antialias_taps(p, xo, scale);
      } else if (p.mode == Mode::kLinear) {
        taps = {{i0, 1 - r}, {i0 + 1, r}};
      } else {
        const double a = p.cubic_a;
        auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1<d<2
        auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // d<=1
        taps = {{i0 - 1, far(r + 1)}, {i0, near(r)}, {i0 + 1, near(1 - r)}, {i0 + 2, far(2 - r)}};
      }
      if (p.exclude_outside) {
        double sum = 0;
        for (auto& [i, w] : taps) {
          if (i < 0 || i >= in_len) w = 0;
          sum += w;
        }
        if (sum != 0)
          for (auto& tap : taps) tap.second /= sum;
      }
      for (auto& [i, w] : taps) {
        if (w == 0) continue;
        t.index.push_back(clamp_index(i));
        t.weight.push_back(w);
      }
    }
    t.count[x] = static_cast<int64_t>(t.index.size()) - t.begin[x];
    if (t.count[x] != 1 || t.index[t.begin[x]] != x || t.weight[t.begin[x]] != 1.0)
      identity = false;
  }
  t.identity = identity;
  return t;
}

struct Geometry {
  std::vector<int64_t> out_dims;
  std::vector<double> scales;              // per axis, used by the coordinate transform
  std::vector<double> roi_start, roi_end;  // per axis
};

Geometry compute_geometry(const KernelContext& ctx, const loom_tensor_t& in) {
  const int64_t rank = in.rank;
  Geometry g;
  g.out_dims = dims_of(in);
  g.scales.assign(static_cast<size_t>(rank), 1.0);
  g.roi_start.assign(static_cast<size_t>(rank), 0.0);
  g.roi_end.assign(static_cast<size_t>(rank), 1.0);
  const std::string op = ctx.node().op_type;

  std::vector<float> scales;
  std::vector<int64_t> sizes;
  std::vector<float> roi;
  std::vector<int64_t> axes;
  if (op == "Upsample" && ctx.opset() < 9) {
    auto s = ctx.attrs().get_floats("scales");
    if (!s) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'scales' is missing");
    scales.assign(s->begin(), s->end());
  } else if (op == "Upsample" || ctx.opset() < 11) {
    scales = read_float_values(ctx, ctx.required_input(1), "scales");
  } else {
    if (const loom_tensor_t* t = ctx.input(1); t && sdk::element_count(*t) > 0)
      roi = read_float_values(ctx, *t, "roi");
    if (const loom_tensor_t* t = ctx.input(2); t && sdk::element_count(*t) > 0)
      scales = read_float_values(ctx, *t, "scales");
    if (const loom_tensor_t* t = ctx.input(3); t && sdk::element_count(*t) > 0)
      sizes = read_int_values(ctx, *t, "sizes");
    if (ctx.opset() >= 18)
      if (auto a = ctx.attrs().get_ints("axes")) axes = normalize_axes(ctx, *a, rank);
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  const size_t n = axes.size();
  if (scales.empty() == sizes.empty())
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": exactly one of 'scales' and 'sizes' must be given");
  if (!roi.empty()) {
    if (roi.size() != 2 * n)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": roi has " + std::to_string(roi.size()) +
                                            " values, expected " + std::to_string(2 * n));
    for (size_t i = 0; i < n; ++i) {
      g.roi_start[axes[i]] = roi[i];
      g.roi_end[axes[i]] = roi[i + n];
    }
  }
  if (!scales.empty()) {
    if (scales.size() != n)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scales has " +
                                            std::to_string(scales.size()) + " values for " +
                                            std::to_string(n) + " axes");
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = axes[i];
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scale " + std::to_string(scales[i]) +
                                              " on axis " + std::to_string(a) +
                                              " must be positive");
      g.scales[a] = scales[i];
      const double out =
          std::floor(static_cast<double>(scales[i]) * static_cast<double>(in.dims[a]));
      if (out > static_cast<double>(std::numeric_limits<int32_t>::max()))
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scale " + std::to_string(scales[i]) +
                                              " makes axis " + std::to_string(a) + " too large");
      g.out_dims[a] = static_cast<int64_t>(out);
    }
    return g;
  }
  if (sizes.size() != n)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": sizes has " + std::to_string(sizes.size()) +
                                          " values for " + std::to_string(n) + " axes");
  for (int64_t s : sizes)
    if (s < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": sizes " + shape_string(sizes) + " has a negative size");
  const std::string policy =
      ctx.opset() >= 18 ? ctx.attrs().get_string("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy == "stretch") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = axes[i];
      g.out_dims[a] = sizes[i];
      g.scales[a] =
          in.dims[a] ? static_cast<double>(sizes[i]) / static_cast<double>(in.dims[a]) : 1.0;
    }
    return g;
  }
  if (policy != "not_larger" && policy != "not_smaller")
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": unknown keep_aspect_ratio_policy '" + policy + "'");
  // One scale for all the axes: the largest that fits (not_larger) or the smallest that
  // covers (not_smaller) the requested sizes.
  double scale = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double s =
        static_cast<double>(sizes[i]) / static_cast<double>(std::max<int64_t>(in.dims[axes[i]], 1));
    scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = axes[i];
    g.scales[a] = scale;
    g.out_dims[a] = static_cast<int64_t>(std::floor(scale * static_cast<double>(in.dims[a]) + 0.5));
  }
  return g;
}

// Integer outputs are rounded to nearest and saturated; floats are converted.
template <typename T, typename C>
T store(C v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const C r = std::nearbyint(v);
    if (r <= static_cast<C>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (r >= static_cast<C>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return convert<T>(v);
  }
}

template <typename T, typename C>
void interpolate(const KernelContext& ctx, const loom_tensor_t& in, const Geometry& g,
                 const std::vector<AxisTable>& tables, C extrapolation, void* out) {
  const size_t rank = static_cast<size_t>(in.rank);
  std::vector<int64_t> dims = dims_of(in);
  const size_t count = static_cast<size_t>(product(dims));
  std::vector<C> cur(count);
  const T* src = static_cast<const T*>(in.data);
  for (size_t i = 0; i < count; ++i) cur[i] = convert<C>(src[i]);
  for (size_t a = 0; a < rank; ++a) {
    const AxisTable& t = tables[a];
    if (t.identity) continue;
    const size_t outer = static_cast<size_t>(product(dims, 0, a));
    const size_t inner = static_cast<size_t>(product(dims, a + 1));
    const size_t n_in = static_cast<size_t>(dims[a]);
    const size_t n_out = static_cast<size_t>(g.out_dims[a]);
    // Axis by axis, an intermediate can be larger than both input and output (one axis grown
    // before another shrinks): it is held to the same limit as a tensor.
    const std::optional<size_t> next_bytes = sdk::try_byte_size(
        sdk::element_count(std::vector<int64_t>{static_cast<int64_t>(outer), g.out_dims[a],
                                                static_cast<int64_t>(inner)}),
        sizeof(C));
    if (!next_bytes)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": an intermediate is too large to address");
    check_scratch_bytes(*next_bytes, ctx.where() + ": an intermediate of the interpolation");
    std::vector<C> next(outer * n_out * inner);
    ctx.parallel_for(outer * n_out, std::max<size_t>(1, 4096 / std::max<size_t>(inner, 1)),
                     [&](size_t b, size_t e) {
                       for (size_t r = b; r < e; ++r) {
                         const size_t o = r / n_out, x = r % n_out;
                         C* dst = next.data() + r * inner;
                         if (t.outside[x]) {
                           std::fill(dst, dst + inner, extrapolation);
                           continue;
                         }
                         std::fill(dst, dst + inner, C(0));
                         for (int64_t k = t.begin[x]; k < t.begin[x] + t.count[x]; ++k) {
                           const C w = static_cast<C>(t.weight[k]);
                           const C* s =
                               cur.data() + (o * n_in + static_cast<size_t>(t.index[k])) * inner;
                           for (size_t i = 0; i < inner; ++i) dst[i] += w * s[i];
                         }
                       }
                     });
    cur = std::move(next);
    dims[a] = g.out_dims[a];
  }
  T* dst = static_cast<T*>(out);
  for (size_t i = 0; i < cur.size(); ++i) dst[i] = store<T>(cur[i]);
}

void resize_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const Params p = read_params(ctx);
  const Geometry g = compute_geometry(ctx, in);
  const size_t rank = static_cast<size_t>(in.rank);
  for (size_t a = 0; a < rank; ++a)
    if (in.dims[a] == 0 && g.out_dims[a] > 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot resize the empty axis " +
                                            std::to_string(a) + " to " +
                                            std::to_string(g.out_dims[a]));
  // The output first: its size is checked (overflow, the run's tensor limit) before the
  // coordinate tables, which cost about 48 bytes per output coordinate, are built from sizes a
  // hostile model can take from its data. An empty output needs no tables at all.
  OutputBuffer out(ctx, 0, in.dtype, g.out_dims);
  if (product(g.out_dims) == 0) {
    out.commit();
    return;
  }
  std::vector<AxisTable> tables(rank);
  for (size_t a = 0; a < rank; ++a)
    tables[a] =
        build_table(p, in.dims[a], g.out_dims[a], g.scales[a], g.roi_start[a], g.roi_end[a]);
  if (p.mode == Mode::kNearest) {
    std::vector<std::vector<int64_t>> maps(rank);
    for (size_t a = 0; a < rank; ++a) {
      maps[a].resize(static_cast<size_t>(g.out_dims[a]));
      for (int64_t x = 0; x < g.out_dims[a]; ++x)
        maps[a][x] = tables[a].outside[x] ? -1 : tables[a].index[tables[a].begin[x]];
    }
    unsigned char fill[16] = {};
    if (in.dtype != LOOM_DTYPE_STRING)
      dispatch<kNumeric | kBool>(in.dtype, ctx, [&]<typename T>() {
        T v = store<T>(static_cast<double>(p.extrapolation));
        std::memcpy(fill, &v, sizeof v);
      });
    copy_by_axis_maps(ctx, in.data, sdk::shape_of(in), out.data(), g.out_dims, maps,
                      element_size(ctx, in.dtype), fill);
  } else {
    dispatch<kNumeric>(in.dtype, ctx, [&]<typename T>() {
      if constexpr (std::is_same_v<T, double>) {
        interpolate<T, double>(ctx, in, g, tables, p.extrapolation, out.data());
      } else {
        interpolate<T, float>(ctx, in, g, tables, p.extrapolation, out.data());
      }
    });
  }
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Upsample", 7, resize_kernel, nullptr);
LOOM_CPU_KERNEL("Resize", 10, resize_kernel, nullptr);

}  // namespace loom::cpu
