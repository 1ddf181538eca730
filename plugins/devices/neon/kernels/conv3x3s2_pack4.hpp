// Dense 3x3 stride-2 convolution (group 1, no dilation) in NC4HW4, without im2col: each tap of
// each input block is 4 lane FMAs (one per input channel of the block) into a float32x4 that
// holds the same output pixel of 4 output channels. Four neighbouring output pixels share the
// weight loads. Meant for few input channels (a network's stem: 3 -> 32), where im2col + GEMM
// spends most of its time unpacking, copying and packing rather than multiplying.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/window.hpp"

namespace loom::neon {

// Floats of the packed weights of a cout x cin x 3 x 3 filter bank.
size_t conv3x3s2_pack4_weight_floats(size_t cout, size_t cin);
// weights: [cout][cin][3][3]; packed: per output block, per input block, per tap, per input
// channel of the block, the 4 output channels' weights ([ob][cb][9][4][4]), zero for padding
// channels.
void pack_conv3x3s2_pack4_weights(const float* weights, size_t cout, size_t cin, float* packed);

// One output row `oy` of one output block of one image. in: the image, [ceil(cin/4)][ih][iw][4];
// weights: the output block's [cb][9][4][4]; bias: [4]; out: the row, [ow][4]. g must be a 3x3
// window with strides 2 and dilations 1.
void conv3x3s2_pack4_row(const float* in, size_t cin, const float* weights, const float* bias,
                         float* out, const Window2d& g, int64_t oy);

}  // namespace loom::neon
