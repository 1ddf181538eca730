// Workgroup-wide sum and max over one value per invocation (shared-memory tree; the workgroup
// size is a power of two chosen by the host).
shared float row_scratch[gl_WorkGroupSize.x];

float workgroup_sum(float v) {
  uint lid = gl_LocalInvocationID.x;
  row_scratch[lid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (lid < s) row_scratch[lid] += row_scratch[lid + s];
    barrier();
  }
  float r = row_scratch[0];
  barrier();
  return r;
}

float workgroup_max(float v) {
  uint lid = gl_LocalInvocationID.x;
  row_scratch[lid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (lid < s) row_scratch[lid] = max(row_scratch[lid], row_scratch[lid + s]);
    barrier();
  }
  float r = row_scratch[0];
  barrier();
  return r;
}
