// MaxPool / AveragePool and the global pools in NC4HW4: each float32x4 is one pixel of 4
// channels, so a window reduces with one vector operation per tap for any plane width.
#pragma once

#include <cstddef>

#include "kernels/window.hpp"

namespace loom::neon {

// One block: in [ih][iw][4] -> out [oh][ow][4]. Padding taps are skipped (max) or, for the
// average, counted when count_include_pad (within the explicit pads only, as ONNX does).
void max_pool_pack4_block(const float* in, float* out, const Window2d& g);
void average_pool_pack4_block(const float* in, float* out, const Window2d& g,
                              bool count_include_pad);
// One block of `plane` pixels reduced to one vector (out[4]).
void global_pool_pack4_block(const float* in, size_t plane, bool max, float* out);

}  // namespace loom::neon
