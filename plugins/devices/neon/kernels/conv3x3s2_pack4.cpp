#include "kernels/conv3x3s2_pack4.hpp"

#include <arm_neon.h>

#include <algorithm>

#include "kernels/pack4.hpp"

namespace loom::neon {
namespace {

constexpr size_t kTapFloats = 16;                // 4 input channels x 4 output channels
constexpr size_t kBlockFloats = 9 * kTapFloats;  // one input block, all taps

// acc += the 4 input channels of pixel x times their weight vectors; `lanes` (1..4) skips the
// zero padding channels of the last input block (3 input channels: 3 FMAs, not 4).
inline float32x4_t tap(float32x4_t acc, const float32x4_t* w, float32x4_t x, size_t lanes) {
  acc = vfmaq_laneq_f32(acc, w[0], x, 0);
  if (lanes > 1) acc = vfmaq_laneq_f32(acc, w[1], x, 1);
  if (lanes > 2) acc = vfmaq_laneq_f32(acc, w[2], x, 2);
  if (lanes > 3) acc = vfmaq_laneq_f32(acc, w[3], x, 3);
  return acc;
}

inline void load_tap(const float* w, float32x4_t* v) {
  for (size_t i = 0; i < 4; ++i) v[i] = vld1q_f32(w + i * 4);
}

}  // namespace

size_t conv3x3s2_pack4_weight_floats(size_t cout, size_t cin) {
  return channel_blocks(cout) * channel_blocks(cin) * kBlockFloats;
}

void pack_conv3x3s2_pack4_weights(const float* weights, size_t cout, size_t cin, float* packed) {
  const size_t cbs = channel_blocks(cin);
  std::fill(packed, packed + conv3x3s2_pack4_weight_floats(cout, cin), 0.0f);
  for (size_t co = 0; co < cout; ++co)
    for (size_t ci = 0; ci < cin; ++ci)
      for (size_t t = 0; t < 9; ++t)
        packed[((co / 4) * cbs + ci / 4) * kBlockFloats + t * kTapFloats + (ci % 4) * 4 + co % 4] =
            weights[(co * cin + ci) * 9 + t];
}

void conv3x3s2_pack4_row(const float* in, size_t cin, const float* weights, const float* bias,
                         float* out, const Window2d& g, int64_t oy) {
  const size_t cbs = channel_blocks(cin), last_lanes = cin - (cbs - 1) * 4;
  const size_t plane = static_cast<size_t>(g.ih * g.iw) * 4;
  const int64_t iy0 = oy * 2 - g.pt;
  // The kernel rows inside the input, the same for the whole output row.
  const int64_t ky_lo = std::max<int64_t>(0, -iy0), ky_hi = std::min<int64_t>(3, g.ih - iy0);
  // Output columns whose 3 taps all lie inside the input row.
  int64_t x_lo = 0, x_hi = g.ow;
  while (x_lo < g.ow && x_lo * 2 - g.pl < 0) ++x_lo;
  while (x_hi > x_lo && (x_hi - 1) * 2 - g.pl + 2 >= g.iw) --x_hi;
  const float32x4_t b = vld1q_f32(bias);
  float32x4_t w[4];

  // One pixel with the columns checked: the left and right borders.
  auto border = [&](int64_t ox) {
    const int64_t ix0 = ox * 2 - g.pl;
    const int64_t kx_lo = std::max<int64_t>(0, -ix0), kx_hi = std::min<int64_t>(3, g.iw - ix0);
    float32x4_t acc = b;
    for (size_t cb = 0; cb < cbs; ++cb) {
      const size_t lanes = cb + 1 == cbs ? last_lanes : 4;
      for (int64_t ky = ky_lo; ky < ky_hi; ++ky)
        for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
          load_tap(weights + cb * kBlockFloats + (ky * 3 + kx) * kTapFloats, w);
          acc = tap(acc, w, vld1q_f32(in + cb * plane + ((iy0 + ky) * g.iw + ix0 + kx) * 4), lanes);
        }
    }
    vst1q_f32(out + ox * 4, acc);
  };

  for (int64_t ox = 0; ox < x_lo; ++ox) border(ox);
  int64_t ox = x_lo;
  // Four interior pixels at a time: inputs 2 pixels apart, each weight vector used 4 times.
  for (; ox + 4 <= x_hi; ox += 4) {
    float32x4_t a0 = b, a1 = b, a2 = b, a3 = b;
    for (size_t cb = 0; cb < cbs; ++cb) {
      const size_t lanes = cb + 1 == cbs ? last_lanes : 4;
      for (int64_t ky = ky_lo; ky < ky_hi; ++ky) {
        const float* r = in + cb * plane + ((iy0 + ky) * g.iw + ox * 2 - g.pl) * 4;
        const float* wk = weights + cb * kBlockFloats + ky * 3 * kTapFloats;
        for (size_t kx = 0; kx < 3; ++kx) {
          load_tap(wk + kx * kTapFloats, w);
          const float* p = r + kx * 4;
          a0 = tap(a0, w, vld1q_f32(p), lanes);
          a1 = tap(a1, w, vld1q_f32(p + 8), lanes);
          a2 = tap(a2, w, vld1q_f32(p + 16), lanes);
          a3 = tap(a3, w, vld1q_f32(p + 24), lanes);
        }
      }
    }
    vst1q_f32(out + ox * 4, a0);
    vst1q_f32(out + ox * 4 + 4, a1);
    vst1q_f32(out + ox * 4 + 8, a2);
    vst1q_f32(out + ox * 4 + 12, a3);
  }
  for (; ox < g.ow; ++ox) border(ox);  // interior leftovers and the right border
}

}  // namespace loom::neon
