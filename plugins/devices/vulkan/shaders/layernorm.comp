#version 450
// LayerNormalization over the last LEN elements of each row (one workgroup per row); mean and
// variance in two passes for accuracy. Scale and bias have LEN elements.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 1;
layout(constant_id = 2) const uint LEN = 1;
layout(constant_id = 3) const float EPSILON = 1e-5;
layout(constant_id = 4) const uint HAS_BIAS = 0;
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer S { STORE_T scale[]; };
layout(std430, binding = 2) readonly buffer B { STORE_T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
#include "row_reduce.glsl"

void main() {
  uint row = group_index();
  if (row >= ROWS) return;  // uniform per workgroup
  uint base = row * LEN;
  uint lid = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint j = lid; j < LEN; j += gl_WorkGroupSize.x) s += float(x[pc.off[0] + base + j]);
  float mean = workgroup_sum(s) / float(LEN);
  float q = 0.0;
  for (uint j = lid; j < LEN; j += gl_WorkGroupSize.x) {
    float d = float(x[pc.off[0] + base + j]) - mean;
    q += d * d;
  }
  float inv_std = inversesqrt(workgroup_sum(q) / float(LEN) + EPSILON);
  for (uint j = lid; j < LEN; j += gl_WorkGroupSize.x) {
    float v = (float(x[pc.off[0] + base + j]) - mean) * inv_std * float(scale[pc.off[1] + j]);
    if (HAS_BIAS != 0u) v += float(bias[pc.off[2] + j]);
    y[pc.off[3] + base + j] = STORE_T(v);
  }
}
