// ConvTranspose (opsets 1, 11): the adjoint of Conv. Per image and group,
//   col[M/g * taps, in] = W_g^T [M/g * taps, C/g] x X_g[C/g, in]   (one blocked GEMM)
// then col2im scatters col into the output through the same window geometry as a Conv whose
// input is this op's output. Supports groups, strides, dilations, pads, output_padding,
// output_shape and auto_pad.
#include <loom/op_semantics.hpp>
#include <memory>

#include "conv_util.hpp"

namespace loom::cpu {
namespace {

using nn::WindowGeometry;

void conv_transpose_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(1);
  const loom_tensor_t* b = ctx.input(2);
  nn::require_same_dtype(ctx, {1, 2});
  if (x.rank < 3 || w.rank != x.rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() +
                                          ": X must be [N, C, spatial...] and W of the "
                                          "same rank, got " +
                                          nn::shape_string(x) + " and " + nn::shape_string(w));
  const int64_t batch = x.dims[0], in_channels = x.dims[1];
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (group <= 0 || w.dims[0] != in_channels || in_channels % group != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": channels do not match: X " +
                                          nn::shape_string(x) + ", W " + nn::shape_string(w) +
                                          ", group " + std::to_string(group) +
                                          " (need W.dims[0] = C, divisible by group)");
  const int64_t out_channels = w.dims[1] * group;
  if (b && (b->rank != 1 || b->dims[0] != out_channels))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": bias B must be [" +
                                          std::to_string(out_channels) + "], got " +
                                          nn::shape_string(*b));
  const size_t r = static_cast<size_t>(x.rank - 2);
  std::span<const int64_t> kernel(w.dims + 2, r);
  if (auto ks = ctx.attrs().get_ints("kernel_shape");
      ks && !std::equal(ks->begin(), ks->end(), kernel.begin(), kernel.end()))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": kernel_shape " + nn::shape_string(*ks) +
                                       " does not match the weight shape " + nn::shape_string(w));

  // The geometry of the equivalent Conv: its input is our output, its output our input.
  WindowGeometry g;
  g.out.assign(x.dims + 2, x.dims + 2 + r);
  g.kernel.assign(kernel.begin(), kernel.end());
  g.stride = nn::window_attr(ctx, "strides", r, 1, 1);
  g.dilation = nn::window_attr(ctx, "dilations", r, 1, 1);
  const std::vector<int64_t> output_padding = nn::window_attr(ctx, "output_padding", r, 0, 0);
  const std::vector<int64_t> pads = nn::window_attr(ctx, "pads", 2 * r, 0, 0);
  const sdk::AutoPad auto_pad = sdk::auto_pad_of(ctx.attrs(), ctx.where());
  auto output_shape = ctx.attrs().get_ints("output_shape");
  if (output_shape && output_shape->size() != r && output_shape->size() != r + 2)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": output_shape " +
                                       nn::shape_string(*output_shape) + " must have " +
                                       std::to_string(r) + " spatial extents");
  g.in.resize(r);
  g.pad_begin.resize(r);
  g.pad_end.resize(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t full =
        g.stride[d] * (g.out[d] - 1) + output_padding[d] + (g.kernel[d] - 1) * g.dilation[d] + 1;
    const bool same = auto_pad == sdk::AutoPad::kSameUpper || auto_pad == sdk::AutoPad::kSameLower;
    if (output_shape || same) {
      g.in[d] =
          output_shape ? (*output_shape)[output_shape->size() - r + d] : g.out[d] * g.stride[d];
      const int64_t total = full - g.in[d];
      // The odd pixel of padding goes to the end for SAME_UPPER, to the start otherwise. A
      // negative total (output_shape larger than the natural size) appends zeros at the end,
      // hence the floor division. (Not sdk::resolve_pads: output_padding and output_shape make
      // the total here, and it may be negative.)
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      g.pad_begin[d] = auto_pad == sdk::AutoPad::kSameUpper ? half : total - half;
      g.pad_end[d] = total - g.pad_begin[d];
    } else {
      g.pad_begin[d] = auto_pad == sdk::AutoPad::kValid ? 0 : pads[d];
      g.pad_end[d] = auto_pad == sdk::AutoPad::kValid ? 0 : pads[d + r];
      g.in[d] = full - g.pad_begin[d] - g.pad_end[d];
    }
    if (g.in[d] <= 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() +
                                            ": the output would be empty along spatial "
                                            "dimension " +
                                            std::to_string(d));
  }
  std::vector<int64_t> out_dims = {batch, out_channels};
  out_dims.insert(out_dims.end(), g.in.begin(), g.in.end());
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  if (sdk::element_count(y) == 0) return;

  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x), wv(w);
    nn::ComputeOutput<T> out(y);
    C* yp = out.data();
    const size_t x_size = g.out_size(), y_size = g.in_size(), taps = g.kernel_size();
    const size_t cin_g = static_cast<size_t>(in_channels / group);
    const size_t cout_g = static_cast<size_t>(out_channels / group);
    const size_t rows = cout_g * taps;
    // Not value-initialised: the GEMM (beta = 0) writes every element.
    std::unique_ptr<C[]> col(new C[rows * x_size]);
    const ParallelFor pf = parallel_for_of(ctx);
    std::fill_n(yp, out.size(), C(0));
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t grp = 0; grp < group; ++grp) {
        const C* xg = xv.data() + (static_cast<size_t>(n * in_channels) + grp * cin_g) * x_size;
        const C* wg = wv.data() + grp * cin_g * rows;
        gemm(true, false, rows, x_size, cin_g, C(1), wg, rows, xg, x_size, C(0), col.get(), x_size,
             pf);
        C* yg = yp + (static_cast<size_t>(n * out_channels) + grp * cout_g) * y_size;
        nn::col2im(g, col.get(), cout_g, yg, pf);
      }
    }
    if (b) {
      nn::ComputeInput<T> bv(*b);
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t m = 0; m < out_channels; ++m) {
          C* plane = yp + static_cast<size_t>(n * out_channels + m) * y_size;
          for (size_t i = 0; i < y_size; ++i) plane[i] += bv[m];
        }
    }
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("ConvTranspose", 1, conv_transpose_kernel, nullptr);

}  // namespace loom::cpu
