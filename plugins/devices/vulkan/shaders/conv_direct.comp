#version 450
// Direct convolution, one output element per invocation. Used for depthwise convolutions,
// where each output reads only KH*KW inputs and a GEMM formulation has nothing to tile.
#include "common.glsl"
#include "activation.glsl"
#include "conv_params.glsl"
layout(local_size_x_id = 0) in;

void main() {
  uint i = global_index();
  if (i >= BATCH * K * OH * OW) return;
  uint ow = i % OW;
  uint oh = (i / OW) % OH;
  uint k = (i / (OW * OH)) % K;
  uint n = i / (OW * OH * K);
  const uint CG = C / GROUPS;
  const uint KG = K / GROUPS;
  uint g = k / KG;
  float acc = HAS_BIAS != 0u ? float(bias[pc.off[2] + k]) : 0.0;
  int ih0 = int(oh * SH) - int(PT);
  int iw0 = int(ow * SW) - int(PL);
  for (uint c = 0; c < CG; ++c) {
    uint xc = pc.off[0] + ((n * C + g * CG + c) * H) * W;
    uint wc = pc.off[1] + ((k * CG + c) * KH) * KW;
    for (uint kh = 0; kh < KH; ++kh) {
      int ih = ih0 + int(kh * DH);
      if (ih < 0 || ih >= int(H)) continue;
      for (uint kw = 0; kw < KW; ++kw) {
        int iw = iw0 + int(kw * DW);
        if (iw < 0 || iw >= int(W)) continue;
        acc += float(x[xc + uint(ih) * W + uint(iw)]) * float(w[wc + kh * KW + kw]);
      }
    }
  }
  y[pc.off[3] + i] = STORE_T(activate(acc, ACT, ACT_ALPHA, ACT_BETA));
}
