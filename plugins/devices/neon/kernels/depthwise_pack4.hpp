// Depthwise convolution in NC4HW4: one block of 4 channels at a time, each float32x4 the same
// pixel of the 4 channels, so every tap is one FMA per output pixel for any kernel size,
// stride, dilation and plane width (no row tails, no deinterleaving for strides).
#pragma once

#include <cstddef>

#include "kernels/window.hpp"

namespace loom::neon {

// in: one block [ih][iw][4]; weights: [kh][kw][4] (the block's 4 filters interleaved, zero
// for padding channels); bias: [4]; out: [oh][ow][4]. Interior pixels run without bounds
// checks (3x3: weights held in registers), border pixels check each tap.
void depthwise_pack4_block(const float* in, const float* weights, const float* bias, float* out,
                           const Window2d& g);

}  // namespace loom::neon
