// The packed-by-4 channel layout (NC4HW4) the neon device keeps between its ops: channels in
// blocks of 4, [N][ceil(C/4)][H][W][4], the last block zero-padded. One float32x4 holds the
// same pixel of 4 channels, so per-channel work (bias, BatchNorm, depthwise taps, pooling)
// vectorises for any plane size, including 7x7 and 1x1 planes.
#pragma once

#include <cstddef>

namespace loom::neon {

inline size_t channel_blocks(size_t channels) {
  return (channels + 3) / 4;
}

// One image: src NCHW [C][plane] -> dst NC4HW4 [ceil(C/4)][plane][4], padding lanes zeroed.
// Blocks [block_begin, block_end) only, so callers can split the work across threads.
void pack4_image(const float* src, size_t channels, size_t plane, float* dst, size_t block_begin,
                 size_t block_end);
// The inverse: dst NCHW receives the C real channels of the blocks in range.
void unpack4_image(const float* src, size_t channels, size_t plane, float* dst, size_t block_begin,
                   size_t block_end);
// Rewrites the padding lanes of the last block of every image to zero: ops whose function is
// not zero at zero (Sigmoid, Exp, Div 0/0...) would otherwise leave values there that a later
// GEMM could multiply into real channels (0 * NaN).
void zero_pack4_padding(float* data, size_t images, size_t channels, size_t plane);

}  // namespace loom::neon
