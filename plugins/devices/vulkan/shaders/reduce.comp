#version 450
// Reduce* ops, one output per invocation. Kept dims (D*, input strides S*) index the output;
// reduced dims (R*, input strides RS*) are looped over. Unused dims have extent 1.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint OP = 0;
layout(constant_id = 3) const uint D0 = 1;
layout(constant_id = 4) const uint D1 = 1;
layout(constant_id = 5) const uint D2 = 1;
layout(constant_id = 6) const uint D3 = 1;
layout(constant_id = 7) const uint S0 = 0;
layout(constant_id = 8) const uint S1 = 0;
layout(constant_id = 9) const uint S2 = 0;
layout(constant_id = 10) const uint S3 = 0;
layout(constant_id = 11) const uint R0 = 1;
layout(constant_id = 12) const uint R1 = 1;
layout(constant_id = 13) const uint R2 = 1;
layout(constant_id = 14) const uint R3 = 1;
layout(constant_id = 15) const uint RS0 = 0;
layout(constant_id = 16) const uint RS1 = 0;
layout(constant_id = 17) const uint RS2 = 0;
layout(constant_id = 18) const uint RS3 = 0;
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };

// OP: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 l1, 6 l2, 7 sum square, 8 log sum, 9 log sum exp
void main() {
  uint i = global_index();
  if (i >= N) return;
  const uint dims[4] = uint[4](D0, D1, D2, D3);
  const uint strides[4] = uint[4](S0, S1, S2, S3);
  uint rest = i, base = pc.off[0];
  for (int d = 3; d >= 0; --d) {
    base += (rest % dims[d]) * strides[d];
    rest /= dims[d];
  }
  const uint count = R0 * R1 * R2 * R3;
  float m = -1.0 / 0.0;
  if (OP == 9u) {
    for (uint r = 0; r < count; ++r) {
      uint off = (r / (R1 * R2 * R3)) * RS0 + ((r / (R2 * R3)) % R1) * RS1 +
                 ((r / R3) % R2) * RS2 + (r % R3) * RS3;
      m = max(m, float(x[base + off]));
    }
  }
  float acc = OP == 2u ? -1.0 / 0.0 : (OP == 3u ? 1.0 / 0.0 : (OP == 4u ? 1.0 : 0.0));
  for (uint r = 0; r < count; ++r) {
    uint off = (r / (R1 * R2 * R3)) * RS0 + ((r / (R2 * R3)) % R1) * RS1 +
               ((r / R3) % R2) * RS2 + (r % R3) * RS3;
    float v = float(x[base + off]);
    switch (OP) {
      case 2u: acc = max(acc, v); break;
      case 3u: acc = min(acc, v); break;
      case 4u: acc *= v; break;
      case 5u: acc += abs(v); break;
      case 6u: case 7u: acc += v * v; break;
      case 9u: acc += exp(v - m); break;
      default: acc += v;
    }
  }
  if (OP == 1u) acc /= float(count);
  if (OP == 6u) acc = sqrt(acc);
  if (OP == 8u) acc = log(acc);
  if (OP == 9u) acc = log(acc) + m;
  y[pc.off[1] + i] = STORE_T(acc);
}
