// Depthwise 2-D convolution of one channel plane (group == channels, one filter per channel),
// any kernel size (3x3 and 5x5 are the MobileNet cases), strides, pads and dilations.
// Each output row accumulates one kernel tap at a time over a whole row: stride 1 loads four
// consecutive inputs per vector, stride 2 deinterleaves eight with vld2q; the border columns
// whose window leaves the input take a scalar path. 3x3 undilated kernels with horizontal
// stride 1 or 2 (MobileNet's) instead copy the plane into a zero-bordered buffer and compute
// each output vector from three input rows with the accumulator in a register.
#pragma once

#include "kernels/window.hpp"

namespace loom::neon {

// out[oh * ow] = bias + sum over taps of w[ky * kw + kx] * in[...] for one plane.
void depthwise_plane(const float* in, const float* w, float bias, float* out, const Window2d& g);

}  // namespace loom::neon
