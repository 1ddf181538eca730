#version 450
// Convolution as an implicit GEMM per (image, group): out[k, p] = sum_q W[k, q] * X[q, p] with
// q = (c, kh, kw) and p = (oh, ow); X is gathered from the input on the fly (no im2col buffer).
// Covers 1x1, 3x3, strided, dilated and grouped convolutions.
#include "common.glsl"
#include "activation.glsl"
#include "conv_params.glsl"

const uint CG = C / GROUPS;
const uint KG = K / GROUPS;
const uint M = KG;
const uint N = OH * OW;
const uint KDIM = CG * KH * KW;

// batch = image * GROUPS + group
float load_a(uint batch, uint m, uint q) {
  uint g = batch % GROUPS;
  return float(w[pc.off[1] + (g * KG + m) * KDIM + q]);
}
float load_b(uint batch, uint q, uint p) {
  uint n = batch / GROUPS, g = batch % GROUPS;
  uint kw = q % KW, kh = (q / KW) % KH, c = q / (KW * KH);
  uint ow = p % OW, oh = p / OW;
  int ih = int(oh * SH + kh * DH) - int(PT);
  int iw = int(ow * SW + kw * DW) - int(PL);
  if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) return 0.0;
  return float(x[pc.off[0] + ((n * C + g * CG + c) * H + uint(ih)) * W + uint(iw)]);
}
void store(uint batch, uint m, uint p, float v) {
  uint n = batch / GROUPS, g = batch % GROUPS;
  uint k = g * KG + m;
  if (HAS_BIAS != 0u) v += float(bias[pc.off[2] + k]);
  y[pc.off[3] + (n * K + k) * N + p] = STORE_T(activate(v, ACT, ACT_ALPHA, ACT_BETA));
}

#include "gemm_tile.glsl"

void main() { gemm_tile(gl_WorkGroupID.z); }
