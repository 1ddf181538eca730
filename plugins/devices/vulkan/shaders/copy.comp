#version 450
// Strided copy of 32-bit words (16-bit elements in the LOOM_F16 build): dst[sum c_d * DS_d] = src[sum c_d * SS_d] over a box of up to 6
// dims (innermost last). Transpose, Slice, Concat, Split and Expand are all this kernel with
// different strides; 64-bit elements are copied as two words (an extra innermost dim).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;
layout(constant_id = 2) const uint D0 = 1;
layout(constant_id = 3) const uint D1 = 1;
layout(constant_id = 4) const uint D2 = 1;
layout(constant_id = 5) const uint D3 = 1;
layout(constant_id = 6) const uint D4 = 1;
layout(constant_id = 7) const uint D5 = 1;
layout(constant_id = 8) const int SS0 = 0;
layout(constant_id = 9) const int SS1 = 0;
layout(constant_id = 10) const int SS2 = 0;
layout(constant_id = 11) const int SS3 = 0;
layout(constant_id = 12) const int SS4 = 0;
layout(constant_id = 13) const int SS5 = 0;
layout(constant_id = 14) const uint DS0 = 0;
layout(constant_id = 15) const uint DS1 = 0;
layout(constant_id = 16) const uint DS2 = 0;
layout(constant_id = 17) const uint DS3 = 0;
layout(constant_id = 18) const uint DS4 = 0;
layout(constant_id = 19) const uint DS5 = 0;
layout(constant_id = 20) const uint SRC_BASE = 0;  // first source word: negative strides walk back
// ELEM_T: 32-bit words; with LOOM_F16 (fp16 tensors of precision=f16), 16-bit elements.
#ifdef LOOM_F16
#define ELEM_T uint16_t
#else
#define ELEM_T uint
#endif
layout(std430, binding = 0) readonly buffer X { ELEM_T src[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM_T dst[]; };

void main() {
  uint i = global_index();
  if (i >= N) return;
  const uint dims[6] = uint[6](D0, D1, D2, D3, D4, D5);
  const int ss[6] = int[6](SS0, SS1, SS2, SS3, SS4, SS5);
  const uint ds[6] = uint[6](DS0, DS1, DS2, DS3, DS4, DS5);
  uint rest = i, d_off = 0;
  int s_off = 0;  // negative strides come from Slice with negative steps
  for (int d = 5; d >= 0; --d) {
    uint c = rest % dims[d];
    rest /= dims[d];
    s_off += int(c) * ss[d];
    d_off += c * ds[d];
  }
  dst[pc.off[1] + d_off] = src[uint(int(pc.off[0] + SRC_BASE) + s_off)];
}
