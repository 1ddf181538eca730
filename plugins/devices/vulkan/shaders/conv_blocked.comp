#version 450
// Convolution with 4 output channels x 4 output pixels per invocation and no shared memory:
// the variant for CPU implementations (lavapipe), where barriers are expensive and caches do
// what shared memory does on a GPU. Groups of 8 neighbouring invocations (the SIMD lanes of a
// CPU implementation) cover 32 pixels as base + lane + 8 j, so their loads are neighbours.
// Pixel coordinates are computed once; the reduction is plain nested loops over (c, kh, kw).
#include "common.glsl"
#include "activation.glsl"
#include "conv_params.glsl"
layout(local_size_x_id = 0) in;

const uint CG = C / GROUPS;
const uint KG = K / GROUPS;
const uint P = OH * OW;
const uint KBLOCKS = (KG + 3u) / 4u;
const uint PBLOCKS = ((P + 31u) / 32u) * 8u;  // 8 invocations per 32 pixels

void main() {
  uint i = global_index();
  if (i >= BATCH * GROUPS * KBLOCKS * PBLOCKS) return;
  uint pb = i % PBLOCKS;
  uint kb = (i / PBLOCKS) % KBLOCKS;
  uint g = (i / (PBLOCKS * KBLOCKS)) % GROUPS;
  uint n = i / (PBLOCKS * KBLOCKS * GROUPS);
  int ih0[4], iw0[4];
  for (int j = 0; j < 4; ++j) {
    uint p = min((pb / 8u) * 32u + pb % 8u + 8u * uint(j), P - 1u);
    ih0[j] = int((p / OW) * SH) - int(PT);
    iw0[j] = int((p % OW) * SW) - int(PL);
  }
  uint k0 = g * KG + kb * 4u;
  uint wrow[4];
  for (int r = 0; r < 4; ++r) wrow[r] = pc.off[1] + min(k0 + uint(r), g * KG + KG - 1u) * CG * KH * KW;
  float acc[4][4];
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = 0.0;
  for (uint c = 0; c < CG; ++c) {
    uint xc = pc.off[0] + (n * C + g * CG + c) * H * W;
    for (uint kh = 0; kh < KH; ++kh) {
      for (uint kw = 0; kw < KW; ++kw) {
        float xv[4];
        for (int j = 0; j < 4; ++j) {
          int ih = ih0[j] + int(kh * DH), iw = iw0[j] + int(kw * DW);
          bool inside = ih >= 0 && ih < int(H) && iw >= 0 && iw < int(W);
          xv[j] = inside ? float(x[xc + uint(ih) * W + uint(iw)]) : 0.0;
        }
        uint woff = (c * KH + kh) * KW + kw;
        for (int r = 0; r < 4; ++r) {
          float wv = float(w[wrow[r] + woff]);
          for (int j = 0; j < 4; ++j) acc[r][j] += wv * xv[j];
        }
      }
    }
  }
  for (int r = 0; r < 4; ++r) {
    uint k = k0 + uint(r);
    if (k >= g * KG + KG) break;
    float b = HAS_BIAS != 0u ? float(bias[pc.off[2] + k]) : 0.0;
    for (int j = 0; j < 4; ++j) {
      uint p = (pb / 8u) * 32u + pb % 8u + 8u * uint(j);
      if (p >= P) break;
      y[pc.off[3] + (n * K + k) * P + p] = STORE_T(activate(acc[r][j] + b, ACT, ACT_ALPHA, ACT_BETA));
    }
  }
}
