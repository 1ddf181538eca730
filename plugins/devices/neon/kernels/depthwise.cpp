#include "kernels/depthwise.hpp"

#include <arm_neon.h>

#include <algorithm>
#include <vector>

namespace loom::neon {
namespace {

// Adds tap weight `wv` times row[ox * sw + shift] to the output columns [lo, hi), all of
// whose inputs lie inside the row.
void accumulate_row(float* acc, const float* row, int64_t shift, float wv, int64_t lo, int64_t hi,
                    int64_t sw) {
  const float32x4_t w4 = vdupq_n_f32(wv);
  int64_t ox = lo;
  if (sw == 1) {
    for (; ox + 8 <= hi; ox += 8) {
      const float* src = row + (ox + shift);
      vst1q_f32(acc + ox, vfmaq_f32(vld1q_f32(acc + ox), vld1q_f32(src), w4));
      vst1q_f32(acc + ox + 4, vfmaq_f32(vld1q_f32(acc + ox + 4), vld1q_f32(src + 4), w4));
    }
    for (; ox + 4 <= hi; ox += 4)
      vst1q_f32(acc + ox, vfmaq_f32(vld1q_f32(acc + ox), vld1q_f32(row + (ox + shift)), w4));
  } else if (sw == 2) {
    // vld2q reads 8 floats, one past the last even column of the 4 outputs: require a fifth
    // output column inside the row so the read stays in it.
    for (; ox + 5 <= hi; ox += 4) {
      const float32x4_t even = vld2q_f32(row + (2 * ox + shift)).val[0];
      vst1q_f32(acc + ox, vfmaq_f32(vld1q_f32(acc + ox), even, w4));
    }
  }
  for (; ox < hi; ++ox) acc[ox] += wv * row[ox * sw + shift];
}

// A 3x3 undilated depthwise convolution with horizontal stride 1 or 2 (MobileNet's). The plane
// is first copied into a zero-bordered buffer wide enough for whole vectors, so every output
// vector is computed the same way, without border cases: the nine weights and four outputs
// stay in registers, nine FMAs and one store per vector (instead of a load-FMA-store per tap).
// Stride 2 splits 8 inputs into the even (kx = 0) and odd (kx = 1) columns with vld2q; a second
// vld2q two columns on gives kx = 2.
void depthwise3x3_plane(const float* in, const float* w, float bias, float* out,
                        const Window2d& g) {
  const int64_t vectors = (g.ow + 3) / 4;
  // Columns the last vector reads: 4 outputs + 2 (stride 1); 8 + 2 from the second vld2q.
  const int64_t read_width = g.sw == 1 ? vectors * 4 + 2 : vectors * 8 + 2;
  const int64_t pw = std::max(read_width, g.pl + g.iw);
  const int64_t ph = std::max((g.oh - 1) * g.sh + 3, g.pt + g.ih);
  std::vector<float> padded(static_cast<size_t>(ph * pw), 0.0f);
  for (int64_t y = 0; y < g.ih; ++y)
    std::copy(in + y * g.iw, in + (y + 1) * g.iw, padded.data() + (y + g.pt) * pw + g.pl);
  float32x4_t wv[9];
  for (int i = 0; i < 9; ++i) wv[i] = vdupq_n_f32(w[i]);
  const float32x4_t b4 = vdupq_n_f32(bias);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const float* rows = padded.data() + oy * g.sh * pw;
    float* dst = out + oy * g.ow;
    for (int64_t v = 0; v < vectors; ++v) {
      float32x4_t acc = b4;
      for (int r = 0; r < 3; ++r) {
        if (g.sw == 1) {
          const float* src = rows + r * pw + v * 4;
          acc = vfmaq_f32(acc, vld1q_f32(src), wv[r * 3]);
          acc = vfmaq_f32(acc, vld1q_f32(src + 1), wv[r * 3 + 1]);
          acc = vfmaq_f32(acc, vld1q_f32(src + 2), wv[r * 3 + 2]);
        } else {
          const float* src = rows + r * pw + v * 8;
          const float32x4x2_t even_odd = vld2q_f32(src);
          acc = vfmaq_f32(acc, even_odd.val[0], wv[r * 3]);
          acc = vfmaq_f32(acc, even_odd.val[1], wv[r * 3 + 1]);
          acc = vfmaq_f32(acc, vld2q_f32(src + 2).val[0], wv[r * 3 + 2]);
        }
      }
      const int64_t ox = v * 4;
      if (ox + 4 <= g.ow) {
        vst1q_f32(dst + ox, acc);
      } else {
        float tail[4];
        vst1q_f32(tail, acc);
        std::copy(tail, tail + (g.ow - ox), dst + ox);
      }
    }
  }
}

}  // namespace

void depthwise_plane(const float* in, const float* w, float bias, float* out, const Window2d& g) {
  if (g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && (g.sw == 1 || g.sw == 2)) {
    depthwise3x3_plane(in, w, bias, out, g);
    return;
  }
  int64_t lo, hi;
  g.interior_columns(lo, hi);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    float* acc = out + oy * g.ow;
    for (int64_t ox = 0; ox < g.ow; ++ox) acc[ox] = bias;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
      if (iy < 0 || iy >= g.ih) continue;
      const float* row = in + iy * g.iw;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const float wv = w[ky * g.kw + kx];
        const int64_t shift = kx * g.dw - g.pl;  // ix = ox * sw + shift
        // Border columns: check each tap.
        for (int64_t ox = 0; ox < lo; ++ox) {
          const int64_t ix = ox * g.sw + shift;
          if (ix >= 0 && ix < g.iw) acc[ox] += wv * row[ix];
        }
        for (int64_t ox = hi; ox < g.ow; ++ox) {
          const int64_t ix = ox * g.sw + shift;
          if (ix >= 0 && ix < g.iw) acc[ox] += wv * row[ix];
        }
        if (hi > lo) accumulate_row(acc, row, shift, wv, lo, hi, g.sw);
      }
    }
  }
}

}  // namespace loom::neon
