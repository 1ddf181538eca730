#version 450
// y = activation(x), element-wise over N elements.
#include "common.glsl"
#include "activation.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint OP = 0;
layout(constant_id = 3) const float ALPHA = 0.0;
layout(constant_id = 4) const float BETA = 0.0;
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
void main() {
  uint i = global_index();
  if (i >= N) return;
  y[pc.off[1] + i] = STORE_T(activate(float(x[pc.off[0] + i]), OP, ALPHA, BETA));
}
