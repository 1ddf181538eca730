// Depthwise convolution in NC4HW4 with fp16 arithmetic (precision=f16 on CPUs with ARMv8.2
// FP16): the same traversal as kernels/depthwise_pack4.hpp, but each block is first converted
// to binary16 once (a scratch copy of the plane), and one float16x8 holds the same 4 channels of
// two neighbouring output pixels, so every tap is one FMA per two pixels. The k*k taps
// accumulate in fp16 (at most kh*kw products, 25 for 5x5: the rounding error stays bounded by
// that of a 25-term fp16 sum), the sum is widened to f32 and the bias added in f32 on store.
// Only call these after cpu_features().fp16_arithmetic: the file is compiled for armv8.2-a+fp16
// and would fault on an older core.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/window.hpp"

namespace loom::neon {

// weights: [kh][kw][4] f32 as for depthwise_pack4_block; packed: [kh][kw][8] binary16 bits,
// each tap's 4 weights twice (one float16x8 covers two output pixels).
void pack_depthwise_pack4_weights_f16(const float* weights, size_t taps, uint16_t* packed);

// in: one block [ih][iw][4] f32; weights: from pack_depthwise_pack4_weights_f16; bias: [4] f32;
// out: [oh][ow][4] f32; scratch: ih * iw * 4 binary16 values (the converted block).
void depthwise_pack4_block_f16(const float* in, const uint16_t* weights, const float* bias,
                               float* out, const Window2d& g, uint16_t* scratch);

}  // namespace loom::neon
