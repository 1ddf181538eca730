// Geometry of a 2-D sliding window (Conv, depthwise Conv, MaxPool, AveragePool) over one
// H x W plane, with the ONNX padding rules (explicit pads, VALID, SAME_UPPER/LOWER, ceil_mode).
#pragma once

#include <cstdint>
#include <loom/op_semantics.hpp>

namespace loom::neon {

struct Window2d {
  int64_t ih = 0, iw = 0;                  // input plane
  int64_t kh = 1, kw = 1;                  // kernel
  int64_t sh = 1, sw = 1;                  // strides
  int64_t dh = 1, dw = 1;                  // dilations
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // pads: top, left, bottom, right
  int64_t oh = 0, ow = 0;                  // output plane

  // Output columns [ox_lo, ox_hi) whose every tap lies inside the input row: the range the
  // vector loops cover; columns outside it take the scalar border path.
  void interior_columns(int64_t& ox_lo, int64_t& ox_hi) const;
  // The same for output rows: rows [oy_lo, oy_hi) read no padding row.
  void interior_rows(int64_t& oy_lo, int64_t& oy_hi) const;
};

// Attributes as written in the node (read once at compile time).
struct WindowAttrs {
  int64_t kernel[2] = {1, 1}, strides[2] = {1, 1}, dilations[2] = {1, 1};
  int64_t pads[4] = {0, 0, 0, 0};  // ONNX order: begin h, begin w, end h, end w
  sdk::AutoPad auto_pad = sdk::AutoPad::kNotSet;
  bool ceil_mode = false;
};

// The geometry for an ih x iw input; throws LOOM_ERROR_INVALID_ARGUMENT when the window does
// not fit the padded input.
Window2d make_window(const WindowAttrs& a, int64_t ih, int64_t iw);

}  // namespace loom::neon
