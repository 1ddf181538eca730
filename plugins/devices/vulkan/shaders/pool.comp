#version 450
// 2-D max / average pooling (NCHW; 1-D pools use H = 1), one output per invocation. Global
// pools are the special case of a kernel covering the whole plane.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PLANES = 1;  // batch * channels
layout(constant_id = 2) const uint H = 1;
layout(constant_id = 3) const uint W = 1;
layout(constant_id = 4) const uint OH = 1;
layout(constant_id = 5) const uint OW = 1;
layout(constant_id = 6) const uint KH = 1;
layout(constant_id = 7) const uint KW = 1;
layout(constant_id = 8) const uint SH = 1;
layout(constant_id = 9) const uint SW = 1;
layout(constant_id = 10) const uint PT = 0;
layout(constant_id = 11) const uint PL = 0;
layout(constant_id = 12) const uint PB = 0;
layout(constant_id = 13) const uint PR = 0;
layout(constant_id = 14) const uint DH = 1;
layout(constant_id = 15) const uint DW = 1;
layout(constant_id = 16) const uint MODE = 0;  // 0 max, 1 average counting pads, 2 average without
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };

void main() {
  uint i = global_index();
  if (i >= PLANES * OH * OW) return;
  uint ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  int ih0 = int(oh * SH) - int(PT), iw0 = int(ow * SW) - int(PL);
  float acc = MODE == 0u ? -1.0 / 0.0 : 0.0;
  uint count = 0, padded_count = 0;
  uint base = pc.off[0] + plane * H * W;
  for (uint kh = 0; kh < KH; ++kh) {
    int ih = ih0 + int(kh * DH);
    bool row_in_pad = ih >= -int(PT) && ih < int(H + PB);
    for (uint kw = 0; kw < KW; ++kw) {
      int iw = iw0 + int(kw * DW);
      if (row_in_pad && iw >= -int(PL) && iw < int(W + PR)) ++padded_count;
      if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) continue;
      float v = float(x[base + uint(ih) * W + uint(iw)]);
      acc = MODE == 0u ? max(acc, v) : acc + v;
      ++count;
    }
  }
  if (MODE == 1u) acc /= float(max(padded_count, 1u));
  if (MODE == 2u) acc /= float(max(count, 1u));
  y[pc.off[1] + i] = STORE_T(acc);
}
