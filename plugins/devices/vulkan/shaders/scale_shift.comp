#version 450
// y = act(x * scale[c] + shift[c]) over [outer, C, INNER]: BatchNormalization in inference
// mode, with scale and shift computed on the host at compile time.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint C = 1;
layout(constant_id = 3) const uint INNER = 1;
layout(constant_id = 4) const uint ACT = 0;
layout(constant_id = 5) const float ACT_ALPHA = 0.0;
layout(constant_id = 6) const float ACT_BETA = 0.0;
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer S { STORE_T scale[]; };
layout(std430, binding = 2) readonly buffer B { STORE_T shift[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
void main() {
  uint i = global_index();
  if (i >= N) return;
  uint c = (i / INNER) % C;
  float v = float(x[pc.off[0] + i]) * float(scale[pc.off[1] + c]) + float(shift[pc.off[2] + c]);
  y[pc.off[3] + i] = STORE_T(activate(v, ACT, ACT_ALPHA, ACT_BETA));
}
