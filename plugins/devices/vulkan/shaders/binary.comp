#version 450
// y = act(a op b) with numpy broadcasting. The host coalesces the shapes to at most 6 dims
// (innermost last); an input's stride is 0 along a broadcast dim.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint OP = 0;
layout(constant_id = 3) const uint D0 = 1;
layout(constant_id = 4) const uint D1 = 1;
layout(constant_id = 5) const uint D2 = 1;
layout(constant_id = 6) const uint D3 = 1;
layout(constant_id = 7) const uint D4 = 1;
layout(constant_id = 8) const uint D5 = 1;
layout(constant_id = 9) const uint SA0 = 0;
layout(constant_id = 10) const uint SA1 = 0;
layout(constant_id = 11) const uint SA2 = 0;
layout(constant_id = 12) const uint SA3 = 0;
layout(constant_id = 13) const uint SA4 = 0;
layout(constant_id = 14) const uint SA5 = 0;
layout(constant_id = 15) const uint SB0 = 0;
layout(constant_id = 16) const uint SB1 = 0;
layout(constant_id = 17) const uint SB2 = 0;
layout(constant_id = 18) const uint SB3 = 0;
layout(constant_id = 19) const uint SB4 = 0;
layout(constant_id = 20) const uint SB5 = 0;
layout(constant_id = 21) const uint ACT = 0;
layout(constant_id = 22) const float ACT_ALPHA = 0.0;
layout(constant_id = 23) const float ACT_BETA = 0.0;
layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
layout(std430, binding = 2) writeonly buffer Y { STORE_T y[]; };

// GLSL leaves pow undefined for a negative base; ONNX defines it for integral exponents.
float safe_pow(float u, float v) {
  if (v == 0.0) return 1.0;
  if (u > 0.0) return pow(u, v);
  if (u == 0.0) return v > 0.0 ? 0.0 : 1.0 / 0.0;
  if (v != floor(v)) return 0.0 / 0.0;
  float r = pow(-u, v);
  return mod(v, 2.0) == 1.0 ? -r : r;
}

float apply(float u, float v) {
  switch (OP) {
    case 0u: return u + v;
    case 1u: return u - v;
    case 2u: return u * v;
    case 3u: return u / v;
    case 4u: return safe_pow(u, v);
    case 5u: return max(u, v);
    case 6u: return min(u, v);
    case 7u: return u < 0.0 ? u * v : u;
  }
  return u;
}

void main() {
  uint i = global_index();
  if (i >= N) return;
  const uint dims[6] = uint[6](D0, D1, D2, D3, D4, D5);
  const uint sa[6] = uint[6](SA0, SA1, SA2, SA3, SA4, SA5);
  const uint sb[6] = uint[6](SB0, SB1, SB2, SB3, SB4, SB5);
  uint rest = i, ia = 0, ib = 0;
  for (int d = 5; d >= 0; --d) {
    uint c = rest % dims[d];
    rest /= dims[d];
    ia += c * sa[d];
    ib += c * sb[d];
  }
  float r = apply(float(a[pc.off[0] + ia]), float(b[pc.off[1] + ib]));
  y[pc.off[2] + i] = STORE_T(activate(r, ACT, ACT_ALPHA, ACT_BETA));
}
