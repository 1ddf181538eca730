#include "kernels/pack4.hpp"

#include <arm_neon.h>

#include <algorithm>

namespace loom::neon {

void pack4_image(const float* src, size_t channels, size_t plane, float* dst, size_t block_begin,
                 size_t block_end) {
  const float32x4_t zero = vdupq_n_f32(0.0f);
  for (size_t b = block_begin; b < block_end; ++b) {
    const size_t c0 = b * 4, real = std::min<size_t>(4, channels - c0);
    const float* rows[4];
    for (size_t l = 0; l < 4; ++l) rows[l] = l < real ? src + (c0 + l) * plane : nullptr;
    float* out = dst + b * plane * 4;
    size_t i = 0;
    if (real == 4) {
      // vst4q interleaves four channel rows into four pixels of 4 lanes.
      for (; i + 4 <= plane; i += 4) {
        float32x4x4_t v = {{vld1q_f32(rows[0] + i), vld1q_f32(rows[1] + i), vld1q_f32(rows[2] + i),
                            vld1q_f32(rows[3] + i)}};
        vst4q_f32(out + i * 4, v);
      }
    } else {
      for (; i + 4 <= plane; i += 4) {
        float32x4x4_t v = {{zero, zero, zero, zero}};
        for (size_t l = 0; l < real; ++l) v.val[l] = vld1q_f32(rows[l] + i);
        vst4q_f32(out + i * 4, v);
      }
    }
    for (; i < plane; ++i)
      for (size_t l = 0; l < 4; ++l) out[i * 4 + l] = l < real ? rows[l][i] : 0.0f;
  }
}

void unpack4_image(const float* src, size_t channels, size_t plane, float* dst, size_t block_begin,
                   size_t block_end) {
  for (size_t b = block_begin; b < block_end; ++b) {
    const size_t c0 = b * 4, real = std::min<size_t>(4, channels - c0);
    const float* in = src + b * plane * 4;
    float* rows[4];
    for (size_t l = 0; l < real; ++l) rows[l] = dst + (c0 + l) * plane;
    size_t i = 0;
    for (; i + 4 <= plane; i += 4) {
      // vld4q de-interleaves four pixels back into one vector per channel.
      const float32x4x4_t v = vld4q_f32(in + i * 4);
      for (size_t l = 0; l < real; ++l) vst1q_f32(rows[l] + i, v.val[l]);
    }
    for (; i < plane; ++i)
      for (size_t l = 0; l < real; ++l) rows[l][i] = in[i * 4 + l];
  }
}

void zero_pack4_padding(float* data, size_t images, size_t channels, size_t plane) {
  const size_t real = channels % 4;
  if (real == 0) return;
  const size_t blocks = channel_blocks(channels);
  for (size_t n = 0; n < images; ++n) {
    float* last = data + ((n * blocks) + blocks - 1) * plane * 4;
    for (size_t i = 0; i < plane; ++i)
      for (size_t l = real; l < 4; ++l) last[i * 4 + l] = 0.0f;
  }
}

}  // namespace loom::neon
