#version 450
// Batched Y[b] = act(ALPHA * A[b] B[b] + BETA * C) for Gemm and MatMul. A and B are addressed
// through strides, so transposed operands and broadcast batch dims (stride 0) need no copy.
// Up to 3 batch dims (outermost first); Y is dense [batch..., M, N].
#include "common.glsl"
#include "activation.glsl"
layout(constant_id = 1) const uint M = 1;
layout(constant_id = 2) const uint N = 1;
layout(constant_id = 3) const uint KDIM = 1;
layout(constant_id = 4) const uint A_SM = 0;
layout(constant_id = 5) const uint A_SK = 0;
layout(constant_id = 6) const uint B_SK = 0;
layout(constant_id = 7) const uint B_SN = 0;
layout(constant_id = 8) const uint HAS_C = 0;
layout(constant_id = 9) const uint C_SM = 0;
layout(constant_id = 10) const uint C_SN = 0;
layout(constant_id = 11) const float ALPHA = 1.0;
layout(constant_id = 12) const float BETA = 1.0;
layout(constant_id = 13) const uint ACT = 0;
layout(constant_id = 14) const float ACT_ALPHA = 0.0;
layout(constant_id = 15) const float ACT_BETA = 0.0;
layout(constant_id = 16) const uint BD1 = 1;  // batch dims 1 and 2 (dim 0 is implied by z)
layout(constant_id = 17) const uint BD2 = 1;
layout(constant_id = 18) const uint A_SB0 = 0;
layout(constant_id = 19) const uint A_SB1 = 0;
layout(constant_id = 20) const uint A_SB2 = 0;
layout(constant_id = 21) const uint B_SB0 = 0;
layout(constant_id = 22) const uint B_SB1 = 0;
layout(constant_id = 23) const uint B_SB2 = 0;
layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
layout(std430, binding = 2) readonly buffer Cb { STORE_T cin[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };

uint a_base(uint batch) {
  return (batch / (BD1 * BD2)) * A_SB0 + ((batch / BD2) % BD1) * A_SB1 + (batch % BD2) * A_SB2;
}
uint b_base(uint batch) {
  return (batch / (BD1 * BD2)) * B_SB0 + ((batch / BD2) % BD1) * B_SB1 + (batch % BD2) * B_SB2;
}
float load_a(uint batch, uint m, uint k) { return float(a[pc.off[0] + a_base(batch) + m * A_SM + k * A_SK]); }
float load_b(uint batch, uint k, uint n) { return float(b[pc.off[1] + b_base(batch) + k * B_SK + n * B_SN]); }
void store(uint batch, uint m, uint n, float v) {
  v *= ALPHA;
  if (HAS_C != 0u) v += BETA * float(cin[pc.off[2] + m * C_SM + n * C_SN]);
  y[pc.off[3] + (batch * M + m) * N + n] = STORE_T(activate(v, ACT, ACT_ALPHA, ACT_BETA));
}

#include "gemm_regs.glsl"

void main() { gemm_tile(gl_WorkGroupID.z); }
