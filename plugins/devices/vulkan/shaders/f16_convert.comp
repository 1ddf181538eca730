#version 450
// The boundaries of a precision=f16 subgraph: host tensors stay f32, so inputs are converted to
// the fp16 storage of the kernels (TO_F16 = 1) and outputs back to f32 (TO_F16 = 0). Built
// only with LOOM_F16 (16-bit storage); f32 -> f16 rounds to nearest, beyond 65504 gives inf.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint TO_F16 = 1;
layout(std430, binding = 0) buffer F32 { float wide[]; };
layout(std430, binding = 1) buffer F16 { float16_t half_[]; };

void main() {
  uint i = global_index();
  if (i >= N) return;
  if (TO_F16 != 0u)
    half_[pc.off[1] + i] = float16_t(wide[pc.off[0] + i]);
  else
    wide[pc.off[0] + i] = float(half_[pc.off[1] + i]);
}
