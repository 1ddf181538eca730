#version 450
// Softmax / LogSoftmax along one axis: the tensor is viewed as [outer, LEN, INNER]; one
// workgroup per (outer, inner) row.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 1;
layout(constant_id = 2) const uint LEN = 1;
layout(constant_id = 3) const uint INNER = 1;
layout(constant_id = 4) const uint LOG = 0;
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
#include "row_reduce.glsl"

void main() {
  uint row = group_index();
  if (row >= ROWS) return;  // uniform per workgroup
  uint base = (row / INNER) * LEN * INNER + row % INNER;
  uint lid = gl_LocalInvocationID.x;
  float m = -1.0 / 0.0;
  for (uint j = lid; j < LEN; j += gl_WorkGroupSize.x) m = max(m, float(x[pc.off[0] + base + j * INNER]));
  m = workgroup_max(m);
  float s = 0.0;
  for (uint j = lid; j < LEN; j += gl_WorkGroupSize.x) s += exp(float(x[pc.off[0] + base + j * INNER]) - m);
  s = workgroup_sum(s);
  float log_s = log(s);
  for (uint j = lid; j < LEN; j += gl_WorkGroupSize.x) {
    float v = float(x[pc.off[0] + base + j * INNER]) - m;
    y[pc.off[1] + base + j * INNER] = STORE_T(LOG != 0u ? v - log_s : exp(v) / s);
  }
}
