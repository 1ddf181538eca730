// DeformConv (opsets 19, 22): a 2-D convolution whose every kernel tap samples the input at its
// regular place moved by a learned offset, bilinearly, and is scaled by an optional mask.
//
//   X [N, C, H, W]; W [oC, C/group, kH, kW]; offset [N, offset_group * kH * kW * 2, oH, oW]
//   (per tap: the row shift, then the column shift); B [oC]; mask [N, offset_group * kH * kW,
//   oH, oW]. Input channel c uses the offsets and mask of offset group c / (C / offset_group).
//
// Sampling follows the ONNX reference (GridSample with align_corners and zero padding): a tap
// at real position (h, w) interpolates the four neighbours, and a neighbour outside the image
// contributes 0. The reference defines the 2-D case only, and so does this kernel. Computed in
// double, one output pixel at a time: the sampled columns of one group (C/group * kH * kW
// values) are the only buffer, so memory stays linear in the tensors.
#include <algorithm>
#include <cmath>

#include "conv_util.hpp"
#include "data_movement.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

// Bilinear sample of `img` [height, width] at (h, w); neighbours outside read as 0. NaN
// coordinates give NaN, as in GridSample.
double sample(const double* img, int64_t height, int64_t width, double h, double w) {
  if (std::isnan(h) || std::isnan(w)) return std::nan("");
  // Far outside every neighbour is padding; clamping keeps the integer conversions defined.
  h = std::clamp(h, -4.0, static_cast<double>(height) + 4.0);
  w = std::clamp(w, -4.0, static_cast<double>(width) + 4.0);
  const double h0 = std::floor(h), w0 = std::floor(w), fh = h - h0, fw = w - w0;
  const auto y0 = static_cast<int64_t>(h0), x0 = static_cast<int64_t>(w0);
  double v = 0;
  for (int dy = 0; dy < 2; ++dy) {
    const int64_t y = y0 + dy;
    if (y < 0 || y >= height) continue;
    const double wy = dy ? fh : 1 - fh;
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t x = x0 + dx;
      if (x < 0 || x >= width) continue;
      v += wy * (dx ? fw : 1 - fw) * img[y * width + x];
    }
  }
  return v;
}

void deform_conv(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(1);
  const loom_tensor_t& off = ctx.required_input(2);
  const loom_tensor_t* b = ctx.input(3);
  const loom_tensor_t* m = ctx.input(4);
  dispatch<kFloats>(x.dtype, where, []<typename T>() {});
  for (const loom_tensor_t* t : {&w, &off, b, m})
    if (t && t->dtype != x.dtype)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": every input must have X's type " +
                                         sdk::dtype_name(x.dtype) + ", got " +
                                         sdk::dtype_name(t->dtype));
  if (x.rank != 4)
    fail(LOOM_ERROR_UNSUPPORTED, where + ": X " + shape_string(misc::dims_of(x)) +
                                     " is not 4-D; DeformConv is defined (and implemented) for "
                                     "2-D images [N, C, H, W] only");
  const int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], Wd = x.dims[3];
  const int64_t group = ctx.attrs().get_int("group", 1);
  const int64_t offset_group = ctx.attrs().get_int("offset_group", 1);
  if (group < 1 || offset_group < 1)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": group and offset_group must be >= 1");
  if (w.rank != 4 || w.dims[1] * group != C || w.dims[0] % group != 0)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": W " + shape_string(misc::dims_of(w)) +
                                       " must be [oC, C / group, kH, kW] with oC divisible by "
                                       "group, for X " +
                                       shape_string(misc::dims_of(x)) + " and group " +
                                       std::to_string(group));
  if (C % offset_group != 0)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": X's " + std::to_string(C) +
                                       " channels are not divisible by offset_group " +
                                       std::to_string(offset_group));
  std::vector<int64_t> kernel{w.dims[2], w.dims[3]};
  if (auto k = ctx.attrs().get_ints("kernel_shape");
      k && std::vector<int64_t>(k->begin(), k->end()) != kernel)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": kernel_shape " + shape_string(*k) +
                                       " differs from W's " + shape_string(kernel));
  const int64_t in_dims[2] = {H, Wd};
  const nn::WindowGeometry geo = nn::window_geometry(ctx, in_dims, kernel, {});
  const int64_t oH = geo.out[0], oW = geo.out[1], kH = kernel[0], kW = kernel[1], taps = kH * kW;
  const std::vector<int64_t> want_offset{N, offset_group * taps * 2, oH, oW};
  if (misc::dims_of(off) != want_offset)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": offset " + shape_string(misc::dims_of(off)) +
                                       " must be " + shape_string(want_offset) +
                                       " (N, offset_group * kH * kW * 2 and the output's extents)");
  const std::vector<int64_t> want_mask{N, offset_group * taps, oH, oW};
  if (m && misc::dims_of(*m) != want_mask)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": mask " + shape_string(misc::dims_of(*m)) +
                                       " must be " + shape_string(want_mask));
  const int64_t oC = w.dims[0];
  if (b && (b->rank != 1 || b->dims[0] != oC))
    fail(LOOM_ERROR_INVALID_MODEL, where + ": B " + shape_string(misc::dims_of(*b)) + " must be [" +
                                       std::to_string(oC) + "]");

  const std::vector<int64_t> out_dims{N, oC, oH, oW};
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  if (sdk::element_count(y) == 0) return;
  const std::vector<double> xs = misc::read_as<double>(x, where + " X");
  const std::vector<double> ws = misc::read_as<double>(w, where + " W");
  const std::vector<double> os = misc::read_as<double>(off, where + " offset");
  const std::vector<double> bs =
      b ? misc::read_as<double>(*b, where + " B") : std::vector<double>();
  const std::vector<double> ms =
      m ? misc::read_as<double>(*m, where + " mask") : std::vector<double>();
  const int64_t cg = C / group, og = oC / group, c_per_offset = C / offset_group;
  const int64_t pixels = oH * oW, plane = H * Wd;
  std::vector<double> out(static_cast<size_t>(N * oC * pixels));
  std::vector<double> cols(static_cast<size_t>(cg * taps));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < group; ++g)
      for (int64_t i = 0; i < oH; ++i)
        for (int64_t j = 0; j < oW; ++j) {
          const int64_t p = i * oW + j;
          // The group's input channels sampled at every tap of this output pixel.
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t c = g * cg + ci, og_index = c / c_per_offset;
            const double* img = &xs[static_cast<size_t>((n * C + c) * plane)];
            for (int64_t t = 0; t < taps; ++t) {
              const int64_t a = t / kW, k = t % kW;
              const int64_t channel = (og_index * taps + t) * 2;
              const double dh =
                  os[static_cast<size_t>(((n * offset_group * taps * 2 + channel) * pixels) + p)];
              const double dw = os[static_cast<size_t>(
                  ((n * offset_group * taps * 2 + channel + 1) * pixels) + p)];
              const double h =
                  static_cast<double>(i * geo.stride[0] - geo.pad_begin[0] + a * geo.dilation[0]) +
                  dh;
              const double wc =
                  static_cast<double>(j * geo.stride[1] - geo.pad_begin[1] + k * geo.dilation[1]) +
                  dw;
              double v = sample(img, H, Wd, h, wc);
              if (m)
                v *= ms[static_cast<size_t>(
                    ((n * offset_group * taps + og_index * taps + t) * pixels) + p)];
              cols[static_cast<size_t>(ci * taps + t)] = v;
            }
          }
          for (int64_t oi = 0; oi < og; ++oi) {
            const int64_t o = g * og + oi;
            const double* wrow = &ws[static_cast<size_t>(o * cg * taps)];
            double acc = b ? bs[static_cast<size_t>(o)] : 0.0;
            for (size_t q = 0; q < cols.size(); ++q) acc += wrow[q] * cols[q];
            out[static_cast<size_t>((n * oC + o) * pixels + p)] = acc;
          }
        }
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL("DeformConv", 19, deform_conv, nullptr);

}  // namespace loom::cpu
