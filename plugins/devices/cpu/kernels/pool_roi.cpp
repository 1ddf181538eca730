// Region-of-interest pooling over [N, C, H, W]:
//   MaxRoiPool (opset 1): Fast R-CNN max pooling of integer-rounded boxes into bins;
//   RoiAlign (opsets 10, 16): bilinear sampling on a regular grid per bin, avg or max,
//   coordinate_transformation_mode half_pixel (opset 16 default) / output_half_pixel
//   (the only behaviour of opset 10).
// Both follow the formulas of the ONNX reference implementation (which match ONNX Runtime),
// including its "max" mode of RoiAlign that takes the largest weighted corner of each sample.
#include <algorithm>
#include <cmath>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

void check_feature_map(const KernelContext& ctx, const loom_tensor_t& x) {
  if (x.rank != 4)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be [N, C, H, W], got " + nn::shape_string(x));
}

void max_roi_pool_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& rois = ctx.required_input(1);
  check_feature_map(ctx, x);
  nn::require_same_dtype(ctx, {1});
  if (rois.rank != 2 || rois.dims[1] != 5)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() +
                                          ": rois must be [num_rois, 5] (batch, x1, y1, "
                                          "x2, y2), got " +
                                          nn::shape_string(rois));
  auto pooled = ctx.attrs().get_ints("pooled_shape");
  if (!pooled || pooled->size() != 2 || (*pooled)[0] <= 0 || (*pooled)[1] <= 0)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": pooled_shape must be two positive extents");
  const double scale = ctx.attrs().get_float("spatial_scale", 1.0f);
  const int64_t ph = (*pooled)[0], pw = (*pooled)[1];
  const int64_t batch = x.dims[0], channels = x.dims[1], height = x.dims[2], width = x.dims[3];
  const int64_t num_rois = rois.dims[0];
  const int64_t out_dims[4] = {num_rois, channels, ph, pw};
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x), rv(rois);
    nn::ComputeOutput<T> out(y);
    for (int64_t r = 0; r < num_rois; ++r) {
      const C* roi = rv.data() + r * 5;
      const int64_t b = static_cast<int64_t>(roi[0]);
      if (b < 0 || b >= batch)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": roi " + std::to_string(r) +
                                              " has batch index " + std::to_string(b) +
                                              " outside [0, " + std::to_string(batch) + ")");
      const int64_t x1 = std::llround(static_cast<double>(roi[1]) * scale);
      const int64_t y1 = std::llround(static_cast<double>(roi[2]) * scale);
      const int64_t x2 = std::llround(static_cast<double>(roi[3]) * scale);
      const int64_t y2 = std::llround(static_cast<double>(roi[4]) * scale);
      const double bin_h = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / ph;
      const double bin_w = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / pw;
      for (int64_t c = 0; c < channels; ++c) {
        const C* plane = xv.data() + (b * channels + c) * height * width;
        C* dst = out.data() + (r * channels + c) * ph * pw;
        for (int64_t i = 0; i < ph; ++i) {
          const int64_t h0 =
              std::clamp<int64_t>(static_cast<int64_t>(std::floor(i * bin_h)) + y1, 0, height);
          const int64_t h1 =
              std::clamp<int64_t>(static_cast<int64_t>(std::ceil((i + 1) * bin_h)) + y1, 0, height);
          for (int64_t j = 0; j < pw; ++j) {
            const int64_t w0 =
                std::clamp<int64_t>(static_cast<int64_t>(std::floor(j * bin_w)) + x1, 0, width);
            const int64_t w1 = std::clamp<int64_t>(
                static_cast<int64_t>(std::ceil((j + 1) * bin_w)) + x1, 0, width);
            C best = C(0);  // empty bins are 0
            if (h1 > h0 && w1 > w0) {
              best = plane[h0 * width + w0];
              for (int64_t h = h0; h < h1; ++h)
                for (int64_t w = w0; w < w1; ++w) best = std::max(best, plane[h * width + w]);
            }
            dst[i * pw + j] = best;
          }
        }
      }
    }
    out.commit();
  });
}

// One bilinear sample: four input offsets and weights (all zero when outside the map).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

Sample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width))
    return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1.0 - ly, hx = 1.0 - lx;
  s.pos[0] = y_low * width + x_low;
  s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low;
  s.pos[3] = y_high * width + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

void roi_align_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& rois = ctx.required_input(1);
  const loom_tensor_t& batch_indices = ctx.required_input(2);
  check_feature_map(ctx, x);
  nn::require_same_dtype(ctx, {1});
  if (rois.rank != 2 || rois.dims[1] != 4)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": rois must be [num_rois, 4], got " + nn::shape_string(rois));
  if (batch_indices.dtype != LOOM_DTYPE_INT64 || batch_indices.rank != 1 ||
      batch_indices.dims[0] != rois.dims[0])
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": batch_indices must be int64 [num_rois]");
  const std::string mode = ctx.attrs().get_string("mode", "avg");
  if (mode != "avg" && mode != "max")
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": mode must be 'avg' or 'max', got '" + mode + "'");
  const std::string transform = ctx.attrs().get_string(
      "coordinate_transformation_mode", ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": unknown coordinate_transformation_mode '" + transform + "'");
  const bool half_pixel = transform == "half_pixel";
  const bool average = mode == "avg";
  const int64_t out_h = ctx.attrs().get_int("output_height", 1);
  const int64_t out_w = ctx.attrs().get_int("output_width", 1);
  const int64_t sampling_ratio = ctx.attrs().get_int("sampling_ratio", 0);
  const double scale = ctx.attrs().get_float("spatial_scale", 1.0f);
  if (out_h <= 0 || out_w <= 0 || sampling_ratio < 0)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() +
                                       ": output_height/width must be positive and "
                                       "sampling_ratio >= 0");
  const int64_t batch = x.dims[0], channels = x.dims[1], height = x.dims[2], width = x.dims[3];
  const int64_t num_rois = rois.dims[0];
  const int64_t out_dims[4] = {num_rois, channels, out_h, out_w};
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  const int64_t* bidx = sdk::data_of<const int64_t>(batch_indices);
  for (int64_t r = 0; r < num_rois; ++r)
    if (bidx[r] < 0 || bidx[r] >= batch)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": batch index " + std::to_string(bidx[r]) +
                                            " of roi " + std::to_string(r) + " is outside [0, " +
                                            std::to_string(batch) + ")");

  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x), rv(rois);
    nn::ComputeOutput<T> out(y);
    nn::parallel_range(ctx, static_cast<size_t>(num_rois), 1, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        const C* roi = rv.data() + r * 4;
        const double offset = half_pixel ? 0.5 : 0.0;
        const double x0 = static_cast<double>(roi[0]) * scale - offset;
        const double y0 = static_cast<double>(roi[1]) * scale - offset;
        double roi_w = static_cast<double>(roi[2]) * scale - offset - x0;
        double roi_h = static_cast<double>(roi[3]) * scale - offset - y0;
        if (!half_pixel) {  // legacy behaviour: boxes are at least one pixel
          roi_w = std::max(roi_w, 1.0);
          roi_h = std::max(roi_h, 1.0);
        }
        const double bin_h = roi_h / static_cast<double>(out_h);
        const double bin_w = roi_w / static_cast<double>(out_w);
        const int64_t grid_h =
            sampling_ratio > 0
                ? sampling_ratio
                : static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(out_h)));
        const int64_t grid_w =
            sampling_ratio > 0
                ? sampling_ratio
                : static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(out_w)));
        const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
        // The samples depend only on the box, not the channel: compute them once.
        std::vector<Sample> samples;
        samples.reserve(static_cast<size_t>(out_h * out_w * std::max<int64_t>(grid_h * grid_w, 0)));
        for (int64_t i = 0; i < out_h; ++i)
          for (int64_t j = 0; j < out_w; ++j)
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              const double yy = y0 + i * bin_h + (iy + 0.5) * bin_h / static_cast<double>(grid_h);
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                const double xx = x0 + j * bin_w + (ix + 0.5) * bin_w / static_cast<double>(grid_w);
                samples.push_back(bilinear_sample(yy, xx, height, width));
              }
            }
        const size_t per_bin = static_cast<size_t>(std::max<int64_t>(grid_h * grid_w, 0));
        for (int64_t c = 0; c < channels; ++c) {
          const C* plane = xv.data() + (bidx[r] * channels + c) * height * width;
          C* dst = out.data() + (static_cast<int64_t>(r) * channels + c) * out_h * out_w;
          for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
            const Sample* sp = samples.data() + static_cast<size_t>(bin) * per_bin;
            double acc = 0;
            for (size_t k = 0; k < per_bin; ++k) {
              const Sample& s = sp[k];
              if (average) {
                for (int q = 0; q < 4; ++q)
                  acc += s.weight[q] * static_cast<double>(plane[s.pos[q]]);
              } else {
                double v = s.weight[0] * static_cast<double>(plane[s.pos[0]]);
                for (int q = 1; q < 4; ++q)
                  v = std::max(v, s.weight[q] * static_cast<double>(plane[s.pos[q]]));
                acc = k == 0 ? v : std::max(acc, v);
              }
            }
            dst[bin] = static_cast<C>(average ? acc / count : acc);
          }
        }
      }
    });
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("MaxRoiPool", 1, max_roi_pool_kernel, nullptr);
LOOM_CPU_KERNEL("RoiAlign", 10, roi_align_kernel, nullptr);

}  // namespace loom::cpu
