#include "kernels/winograd.hpp"

#include <arm_neon.h>

namespace loom::neon {
namespace {

// The four rows of a 4x4 tile as vectors, transposed in place (rows become columns).
void transpose4(float32x4_t& r0, float32x4_t& r1, float32x4_t& r2, float32x4_t& r3) {
  const float32x4x2_t a = vtrnq_f32(r0, r1);  // a0 = r0[0] r1[0] r0[2] r1[2], a1 = ...[1], [3]
  const float32x4x2_t b = vtrnq_f32(r2, r3);
  r0 = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0]));
  r1 = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1]));
  r2 = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0]));
  r3 = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));
}

// B^T applied to four vectors (rows of d, or columns of B^T d):
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
void apply_bt(float32x4_t& d0, float32x4_t& d1, float32x4_t& d2, float32x4_t& d3) {
  const float32x4_t t0 = vsubq_f32(d0, d2);
  const float32x4_t t1 = vaddq_f32(d1, d2);
  const float32x4_t t2 = vsubq_f32(d2, d1);
  const float32x4_t t3 = vsubq_f32(d1, d3);
  d0 = t0;
  d1 = t1;
  d2 = t2;
  d3 = t3;
}

}  // namespace

WinogradTiles winograd_tiles(const Window2d& g) {
  return {static_cast<size_t>((g.oh + 1) / 2), static_cast<size_t>((g.ow + 1) / 2)};
}

void winograd_transform_weights(const float* g, size_t cout, size_t cin, float* u) {
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
  static constexpr float kG[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  const size_t matrix = cout * cin;
  for (size_t o = 0; o < cout; ++o) {
    for (size_t i = 0; i < cin; ++i) {
      const float* k = g + (o * cin + i) * 9;
      float gk[4][3];  // G g
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 3; ++c)
          gk[r][c] = kG[r][0] * k[c] + kG[r][1] * k[3 + c] + kG[r][2] * k[6 + c];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c)
          u[(r * 4 + c) * matrix + o * cin + i] =
              gk[r][0] * kG[c][0] + gk[r][1] * kG[c][1] + gk[r][2] * kG[c][2];
    }
  }
}

void winograd_transform_input(const float* plane, const Window2d& g, const WinogradTiles& tiles,
                              size_t first, size_t count, float* v, size_t v_matrix, size_t ch,
                              size_t ld) {
  float* dst = v + ch * ld;
  for (size_t t = first; t < first + count; ++t) {
    const int64_t iy = static_cast<int64_t>(t / tiles.cols) * 2 - g.pt;
    const int64_t ix = static_cast<int64_t>(t % tiles.cols) * 2 - g.pl;
    float32x4_t d[4];
    if (iy >= 0 && iy + 4 <= g.ih && ix >= 0 && ix + 4 <= g.iw) {
      for (int r = 0; r < 4; ++r) d[r] = vld1q_f32(plane + (iy + r) * g.iw + ix);
    } else {
      // The patch leaves the plane: gather it with zeros for the padding.
      float patch[4][4];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
          const int64_t y = iy + r, x = ix + c;
          patch[r][c] = (y >= 0 && y < g.ih && x >= 0 && x < g.iw) ? plane[y * g.iw + x] : 0.0f;
        }
      for (int r = 0; r < 4; ++r) d[r] = vld1q_f32(patch[r]);
    }
    apply_bt(d[0], d[1], d[2], d[3]);  // rows of B^T d
    transpose4(d[0], d[1], d[2], d[3]);
    apply_bt(d[0], d[1], d[2], d[3]);  // d[c][r] = (B^T d B)[r][c]
    const size_t col = t - first;
    for (int c = 0; c < 4; ++c) {
      float values[4];
      vst1q_f32(values, d[c]);
      for (int r = 0; r < 4; ++r) dst[(r * 4 + c) * v_matrix + col] = values[r];
    }
  }
}

void winograd_transform_output(const float* m, size_t m_matrix, size_t o, size_t ld,
                               const Window2d& g, const WinogradTiles& tiles, size_t first,
                               size_t count, float bias, float* plane) {
  const float* src = m + o * ld;
  for (size_t t = first; t < first + count; ++t) {
    const size_t col = t - first;
    float x[16];
    for (size_t xi = 0; xi < kWinogradPositions; ++xi) x[xi] = src[xi * m_matrix + col];
    // A^T = [1 1 1 0; 0 1 -1 -1], first over rows, then over columns.
    float r0[4], r1[4];
    for (int c = 0; c < 4; ++c) {
      r0[c] = x[c] + x[4 + c] + x[8 + c];
      r1[c] = x[4 + c] - x[8 + c] - x[12 + c];
    }
    const float y[2][2] = {{r0[0] + r0[1] + r0[2], r0[1] - r0[2] - r0[3]},
                           {r1[0] + r1[1] + r1[2], r1[1] - r1[2] - r1[3]}};
    const int64_t oy = static_cast<int64_t>(t / tiles.cols) * 2;
    const int64_t ox = static_cast<int64_t>(t % tiles.cols) * 2;
    for (int r = 0; r < 2 && oy + r < g.oh; ++r)
      for (int c = 0; c < 2 && ox + c < g.ow; ++c) plane[(oy + r) * g.ow + ox + c] = y[r][c] + bias;
  }
}

}  // namespace loom::neon
