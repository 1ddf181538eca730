// Attribute parsing and output extents for windowed ops (see conv_util.hpp).
#include <loom/op_semantics.hpp>

#include "conv_util.hpp"

namespace loom::cpu::nn {
std::vector<int64_t> window_attr(const KernelContext& ctx, const char* name, size_t rank,
                                 int64_t fallback, int64_t minimum) {
  auto v = ctx.attrs().get_ints(name);
  if (!v) return std::vector<int64_t>(rank, fallback);
  if (v->size() != rank)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute '" + name + "' has " +
                                       std::to_string(v->size()) + " values, expected " +
                                       std::to_string(rank) + " (one per spatial dimension)");
  for (int64_t x : *v)
    if (x < minimum)
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute '" + name + "' has value " +
                                         std::to_string(x) +
                                         ", must be >= " + std::to_string(minimum));
  return std::vector<int64_t>(v->begin(), v->end());
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

}  // namespace

WindowGeometry window_geometry(const KernelContext& ctx, std::span<const int64_t> in,
                               std::span<const int64_t> kernel, WindowOptions options) {
  const size_t r = in.size();
  if (r == 0 || r + 2 > LOOM_MAX_RANK)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": unsupported number of spatial dimensions " + std::to_string(r));
  WindowGeometry g;
  g.in.assign(in.begin(), in.end());
  g.kernel.assign(kernel.begin(), kernel.end());
  for (int64_t k : g.kernel)
    if (k <= 0)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": kernel extents must be positive, got " + shape_string(g.kernel));
  g.stride = window_attr(ctx, "strides", r, 1, 1);
  g.dilation =
      options.has_dilations ? window_attr(ctx, "dilations", r, 1, 1) : std::vector<int64_t>(r, 1);
  std::vector<int64_t> pads = window_attr(ctx, "pads", 2 * r, 0, 0);
  g.pad_begin.assign(pads.begin(), pads.begin() + r);
  g.pad_end.assign(pads.begin() + r, pads.end());
  const sdk::AutoPad auto_pad = sdk::auto_pad_of(ctx.attrs(), ctx.where());
  g.out.resize(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t span = (g.kernel[d] - 1) * g.dilation[d] + 1;  // the dilated window
    if (auto_pad == sdk::AutoPad::kNotSet) {
      const int64_t room = g.in[d] + g.pad_begin[d] + g.pad_end[d] - span;
      if (room < 0) {
        g.out[d] = 0;
      } else if (options.ceil_mode) {
        g.out[d] = ceil_div(room, g.stride[d]) + 1;
        // The last window must start inside the input or its left padding.
        if ((g.out[d] - 1) * g.stride[d] >= g.in[d] + g.pad_begin[d]) --g.out[d];
      } else {
        g.out[d] = floor_div(room, g.stride[d]) + 1;
      }
    } else if (auto_pad == sdk::AutoPad::kValid) {
      const int64_t room = g.in[d] - span;
      g.out[d] =
          room < 0 ? 0 : (options.ceil_mode ? ceil_div(room, g.stride[d]) : room / g.stride[d]) + 1;
    } else {  // SAME_UPPER, SAME_LOWER
      g.out[d] = ceil_div(g.in[d], g.stride[d]);
    }
    const sdk::AxisPads pads_d =
        sdk::resolve_pads(auto_pad, g.in[d], g.out[d], g.kernel[d], g.stride[d], g.dilation[d],
                          {g.pad_begin[d], g.pad_end[d]});
    g.pad_begin[d] = pads_d.begin;
    g.pad_end[d] = pads_d.end;
    if (g.out[d] <= 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": the window (kernel " + shape_string(g.kernel) + ", dilations " +
               shape_string(g.dilation) + ") does not fit the padded input " + shape_string(g.in));
  }
  return g;
}

}  // namespace loom::cpu::nn
