#version 450
// Gather along one axis: data viewed as [outer, AXIS_LEN, INNER] (32-bit words; 16-bit elements in the LOOM_F16 build), indices
// int32 or int64 (IDX64; read as two words, low first). Negative indices count from the end;
// an index out of range writes 0 and raises the executable's error word (binding 3), which
// the host checks after the run and reports.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint AXIS_LEN = 1;
layout(constant_id = 3) const uint NIDX = 1;
layout(constant_id = 4) const uint INNER = 1;
layout(constant_id = 5) const uint IDX64 = 0;
// ELEM_T: 32-bit words; with LOOM_F16 (fp16 tensors of precision=f16), 16-bit elements.
#ifdef LOOM_F16
#define ELEM_T uint16_t
#else
#define ELEM_T uint
#endif
layout(std430, binding = 0) readonly buffer X { ELEM_T data[]; };
layout(std430, binding = 1) readonly buffer I { int indices[]; };
layout(std430, binding = 2) writeonly buffer Y { ELEM_T y[]; };
layout(std430, binding = 3) buffer E { uint error_word[]; };

void main() {
  uint i = global_index();
  if (i >= N) return;
  uint inner = i % INNER, j = (i / INNER) % NIDX, outer = i / (INNER * NIDX);
  int idx;
  bool ok = true;
  if (IDX64 != 0u) {
    int lo = indices[pc.off[1] + 2u * j], hi = indices[pc.off[1] + 2u * j + 1u];
    idx = lo;
    ok = hi == (lo < 0 ? -1 : 0);
  } else {
    idx = indices[pc.off[1] + j];
  }
  if (idx < 0) idx += int(AXIS_LEN);
  if (!ok || idx < 0 || idx >= int(AXIS_LEN)) {
    atomicOr(error_word[pc.off[3]], 1u);
    y[pc.off[2] + i] = ELEM_T(0u);
    return;
  }
  y[pc.off[2] + i] = data[pc.off[0] + (outer * AXIS_LEN + uint(idx)) * INNER + inner];
}
