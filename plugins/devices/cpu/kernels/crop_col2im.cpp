// CenterCropPad (18) and Col2Im (18).
//   CenterCropPad(input, shape): each listed axis (attribute axes, default all) is centre-cropped
//     or zero-padded to its extent in `shape`; an odd difference leaves the extra element at the
//     end (crop start and pad offset are floor(difference / 2)).
//   Col2Im(input [N, C * prod(block), L], image_shape, block_shape): sums the L sliding blocks
//     back into an [N, C, image_shape...] image (the inverse layout of im2col) for any number of
//     spatial axes, with dilations, pads (begin..., end...) and strides. Computed in double.
#include <cstring>

#include "data_movement.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

void center_crop_pad_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const std::vector<int64_t> shape = read_int_values(ctx, ctx.required_input(1), "shape");
  std::vector<int64_t> axes;
  if (auto a = ctx.attrs().get_ints("axes"))
    axes = normalize_axes(ctx, std::vector<int64_t>(a->begin(), a->end()), x.rank);
  else
    for (int32_t d = 0; d < x.rank; ++d) axes.push_back(d);
  if (shape.size() != axes.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": shape " + shape_string(shape) + " must have " +
                                          std::to_string(axes.size()) + " values, one per axis");
  const size_t rank = static_cast<size_t>(x.rank);
  std::vector<int64_t> out_dims = dims_of(x);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": shape " + shape_string(shape) + " is negative");
    out_dims[static_cast<size_t>(axes[i])] = shape[i];
  }
  // Source coordinate = output coordinate + shift (crop offset minus pad offset) per axis.
  std::vector<int64_t> shift(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = x.dims[d], out = out_dims[d];
    shift[d] = in > out ? (in - out) / 2 : -((out - in) / 2);
  }
  const size_t esize = element_size(ctx, x.dtype);
  OutputBuffer y(ctx, 0, x.dtype, out_dims);
  const int64_t total = sdk::element_count(out_dims);
  const std::vector<int64_t> in_strides = strides_of(dims_of(x));
  std::vector<int64_t> c(rank, 0);
  auto* dst = static_cast<uint8_t*>(y.data());
  const auto* src = static_cast<const uint8_t*>(x.data);
  for (int64_t o = 0; o < total; ++o) {
    int64_t at = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      const int64_t s = c[d] + shift[d];
      inside = s >= 0 && s < x.dims[d];
      at += s * in_strides[d];
    }
    // Padding stays as allocated: zero (and empty strings).
    if (inside)
      std::memcpy(dst + static_cast<size_t>(o) * esize, src + static_cast<size_t>(at) * esize,
                  esize);
    for (size_t d = rank; d-- > 0;) {
      if (++c[d] < out_dims[d]) break;
      c[d] = 0;
    }
  }
  y.commit();
}

void col2im_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const std::vector<int64_t> image = read_int_values(ctx, ctx.required_input(1), "image_shape");
  const std::vector<int64_t> block = read_int_values(ctx, ctx.required_input(2), "block_shape");
  dispatch<kNumeric>(x.dtype, where, []<typename T>() {});
  const size_t r = image.size();
  if (x.rank != 3 || r == 0 || block.size() != r)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": need input [N, C * prod(block), L] and " +
                                       "image_shape and block_shape of one length >= 1");
  const auto ints_attr = [&](const char* name, size_t n, int64_t fill) {
    std::vector<int64_t> v(n, fill);
    if (auto a = ctx.attrs().get_ints(name)) v.assign(a->begin(), a->end());
    if (v.size() != n)
      fail(LOOM_ERROR_INVALID_MODEL,
           where + ": " + name + " must have " + std::to_string(n) + " values");
    return v;
  };
  const std::vector<int64_t> dil = ints_attr("dilations", r, 1), str = ints_attr("strides", r, 1),
                             pads = ints_attr("pads", 2 * r, 0);
  // Bounds every extent so the block arithmetic below cannot overflow.
  constexpr int64_t kMaxExtent = int64_t{1} << 31;
  std::vector<int64_t> blocks(r);
  int64_t kernel = 1, count = 1;
  for (size_t d = 0; d < r; ++d) {
    if (image[d] < 0 || block[d] <= 0 || dil[d] <= 0 || str[d] <= 0 || pads[d] < 0 ||
        pads[d + r] < 0 || block[d] > kMaxExtent || dil[d] > kMaxExtent || image[d] > kMaxExtent ||
        pads[d] > kMaxExtent || pads[d + r] > kMaxExtent)
      fail(LOOM_ERROR_INVALID_MODEL, where +
                                         ": image, block, dilation and stride extents must "
                                         "be positive and pads non-negative");
    const int64_t span = dil[d] * (block[d] - 1) + 1;
    blocks[d] = (image[d] + pads[d] + pads[d + r] - span) / str[d] + 1;
    if (image[d] + pads[d] + pads[d + r] < span || blocks[d] < 1)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           where + ": block " + shape_string(block) + " does not fit image " + shape_string(image));
    kernel = sdk::checked_mul(kernel, block[d]).value_or(-1);
    count = sdk::checked_mul(count, blocks[d]).value_or(-1);
    if (kernel < 0 || count < 0)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": block or image extents overflow");
  }
  const int64_t N = x.dims[0];
  if (x.dims[1] % kernel != 0 || x.dims[2] != count)
    fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": input " + shape_string(dims_of(x)) +
                                          " must be [N, C * " + std::to_string(kernel) + ", " +
                                          std::to_string(count) + "] for these blocks");
  const int64_t C = x.dims[1] / kernel;
  std::vector<int64_t> out_dims = {N, C};
  out_dims.insert(out_dims.end(), image.begin(), image.end());
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  const int64_t plane = sdk::element_count(image);
  if (sdk::element_count(y) == 0 || sdk::element_count(x) == 0) return;
  const std::vector<double> in = misc::read_as<double>(x, where);
  std::vector<double> out(static_cast<size_t>(sdk::element_count(y)), 0.0);
  std::vector<int64_t> k(r), b(r);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch) {
      double* img = &out[static_cast<size_t>((n * C + ch) * plane)];
      std::fill(k.begin(), k.end(), 0);
      for (int64_t kk = 0; kk < kernel; ++kk) {
        const double* col = &in[static_cast<size_t>(((n * C + ch) * kernel + kk) * count)];
        std::fill(b.begin(), b.end(), 0);
        for (int64_t l = 0; l < count; ++l) {
          int64_t at = 0;
          bool inside = true;
          for (size_t d = 0; d < r && inside; ++d) {
            const int64_t p = b[d] * str[d] - pads[d] + k[d] * dil[d];
            inside = p >= 0 && p < image[d];
            at = at * image[d] + p;
          }
          if (inside) img[at] += col[l];
          for (size_t d = r; d-- > 0;) {
            if (++b[d] < blocks[d]) break;
            b[d] = 0;
          }
        }
        for (size_t d = r; d-- > 0;) {
          if (++k[d] < block[d]) break;
          k[d] = 0;
        }
      }
    }
  misc::write_as<double>(y, out, where);
}

}  // namespace

LOOM_CPU_KERNEL("CenterCropPad", 18, center_crop_pad_kernel, nullptr);
LOOM_CPU_KERNEL("Col2Im", 18, col2im_kernel, nullptr);

}  // namespace loom::cpu
