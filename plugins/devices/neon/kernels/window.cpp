#include "kernels/window.hpp"

#include <algorithm>
#include <loom/plugin.hpp>

namespace loom::neon {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Outputs [lo, hi) along one axis whose every tap lies inside the input:
// o * stride - pad >= 0 and o * stride - pad + (k - 1) * dilation <= in - 1.
void interior_range(int64_t out, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                    int64_t pad, int64_t& lo, int64_t& hi) {
  lo = std::min(out, ceil_div(pad, stride));
  const int64_t last = in - 1 - (k - 1) * dilation + pad;
  hi = last < 0 ? 0 : std::min(out, floor_div(last, stride) + 1);
  if (hi < lo) hi = lo;
}

}  // namespace

void Window2d::interior_columns(int64_t& ox_lo, int64_t& ox_hi) const {
  interior_range(ow, iw, kw, sw, dw, pl, ox_lo, ox_hi);
}

void Window2d::interior_rows(int64_t& oy_lo, int64_t& oy_hi) const {
  interior_range(oh, ih, kh, sh, dh, pt, oy_lo, oy_hi);
}

Window2d make_window(const WindowAttrs& a, int64_t ih, int64_t iw) {
  Window2d w;
  w.ih = ih;
  w.iw = iw;
  w.kh = a.kernel[0];
  w.kw = a.kernel[1];
  w.sh = a.strides[0];
  w.sw = a.strides[1];
  w.dh = a.dilations[0];
  w.dw = a.dilations[1];
  int64_t in[2] = {ih, iw}, out[2] = {0, 0};
  int64_t begin[2] = {a.pads[0], a.pads[1]}, end[2] = {a.pads[2], a.pads[3]};
  for (int d = 0; d < 2; ++d) {
    const int64_t stride = a.strides[d];
    const int64_t span = (a.kernel[d] - 1) * a.dilations[d] + 1;
    if (a.auto_pad == sdk::AutoPad::kValid) {
      const int64_t room = in[d] - span;
      out[d] = room < 0 ? 0 : (a.ceil_mode ? ceil_div(room, stride) : room / stride) + 1;
    } else if (a.auto_pad != sdk::AutoPad::kNotSet) {  // SAME_UPPER, SAME_LOWER
      out[d] = ceil_div(in[d], stride);
    } else {
      const int64_t room = in[d] + begin[d] + end[d] - span;
      if (room < 0) {
        out[d] = 0;
      } else if (a.ceil_mode) {
        out[d] = ceil_div(room, stride) + 1;
        if ((out[d] - 1) * stride >= in[d] + begin[d]) --out[d];
      } else {
        out[d] = floor_div(room, stride) + 1;
      }
    }
    const sdk::AxisPads p = sdk::resolve_pads(a.auto_pad, in[d], out[d], a.kernel[d], stride,
                                              a.dilations[d], {begin[d], end[d]});
    begin[d] = p.begin;
    end[d] = p.end;
    if (out[d] <= 0)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "the window (kernel " + std::to_string(a.kernel[0]) +
                                                 "x" + std::to_string(a.kernel[1]) +
                                                 ") does not fit the padded input " +
                                                 std::to_string(ih) + "x" + std::to_string(iw));
  }
  w.pt = begin[0];
  w.pl = begin[1];
  w.pb = end[0];
  w.pr = end[1];
  w.oh = out[0];
  w.ow = out[1];
  return w;
}

}  // namespace loom::neon
