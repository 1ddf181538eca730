// Batched GEMM with arbitrary strides: C[b] = act(alpha * A[b] x B[b] + beta * bias[b]).
//   A(m, k) = A[ao + b*sab + m*sam + k*sak]     (a transposed A is just other strides)
//   B(k, n) = B[bo + b*sbb + k*sbk + n*sbn]
//   C(m, n) = C[co + b*scb + m*ldc + n]
//   bias(m, n) = bias[qo + b*sqb + m*sqm + n*sqn] (stride 0 broadcasts: per-row conv bias,
//                                                  Gemm's C of shape [N], [M,1], scalar)
// Conv lowers to it too (weights x im2col columns), so it carries most of the FLOPs.

#define LOOM_GEMM_ARGS                                                                        \
  __global const real_t *A, int ao, int sab, int sam, int sak, __global const real_t *B, int bo, \
      int sbb, int sbk, int sbn, __global real_t *C, int co, int scb, int ldc,                   \
      __global const real_t *bias, int qo, int sqb, int sqm, int sqn, int has_bias, int M,      \
      int N, int K, float alpha, float beta, float act_min, float act_max

inline float gemm_epilogue(float acc, __global const real_t* bias, int qo, int sqb, int sqm,
                           int sqn, int has_bias, int batch, int m, int n, float alpha,
                           float beta, float act_min, float act_max) {
  float v = alpha * acc;
  if (has_bias) v += beta * LOAD(bias, qo + batch * sqb + m * sqm + n * sqn);
  return fmin(fmax(v, act_min), act_max);
}

// Tiled: a 16x16 work-group computes a 64x64 block of C, 4x4 per work-item, staging 64x16
// panels of A and B in local memory. Rows and columns of a work-item are 16 apart so that
// neighbouring work-items read neighbouring local-memory words.
#define GEMM_TM 64
#define GEMM_TN 64
#define GEMM_TK 16
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void gemm_tiled(LOOM_GEMM_ARGS) {
  __local float As[GEMM_TK][GEMM_TM + 1];
  __local float Bs[GEMM_TK][GEMM_TN + 1];
  const int batch = get_global_id(2);
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * 16 + tx;
  const int m0 = get_group_id(1) * GEMM_TM, n0 = get_group_id(0) * GEMM_TN;
  __global const real_t* a = A + ao + batch * sab;
  __global const real_t* b = B + bo + batch * sbb;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += GEMM_TK) {
    for (int l = 0; l < 4; ++l) {
      int e = tid + l * 256;
      int kk = e % GEMM_TK, mm = e / GEMM_TK;  // consecutive work-items: consecutive k
      int m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < K) ? LOAD(a, m * sam + k * sak) : 0.0f;
      int nn = e % GEMM_TN, kb = e / GEMM_TN;  // consecutive work-items: consecutive n
      int n = n0 + nn, k2 = k0 + kb;
      Bs[kb][nn] = (n < N && k2 < K) ? LOAD(b, k2 * sbk + n * sbn) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < GEMM_TK; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = mad(av[i], bv[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global real_t* c = C + co + batch * scb;
  for (int i = 0; i < 4; ++i) {
    int m = m0 + ty + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      int n = n0 + tx + 16 * j;
      if (n >= N) continue;
      STORE(c, m * ldc + n,
            gemm_epilogue(acc[i][j], bias, qo, sqb, sqm, sqn, has_bias, batch, m, n, alpha, beta,
                          act_min, act_max));
    }
  }
}

// One work-item per element of C: for thin products (matrix-vector, M or N tiny) where 64x64
// tiles would be mostly padding, and for devices whose work-groups are smaller than 256.
__kernel void gemm_simple(LOOM_GEMM_ARGS) {
  const int n = get_global_id(0), m = get_global_id(1), batch = get_global_id(2);
  if (n >= N || m >= M) return;
  __global const real_t* a = A + ao + batch * sab + m * sam;
  __global const real_t* b = B + bo + batch * sbb + n * sbn;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = mad(LOAD(a, k * sak), LOAD(b, k * sbk), acc);
  STORE(C, co + batch * scb + m * ldc + n,
        gemm_epilogue(acc, bias, qo, sqb, sqm, sqn, has_bias, batch, m, n, alpha, beta, act_min,
                      act_max));
}

// Register-blocked: each work-item computes a 4x8 block of C straight from global memory,
// eight columns at a time (one vload8 of a B row when B's columns are contiguous). No local
// memory and no barriers: the shape that suits CPU drivers (PoCL), whose caches do the tiling
// and whose compilers vectorize the float8 arithmetic.
__kernel void gemm_blocked(LOOM_GEMM_ARGS) {
  const int n0 = get_global_id(0) * 8, m0 = get_global_id(1) * 4, batch = get_global_id(2);
  if (n0 >= N || m0 >= M) return;
  __global const real_t* a = A + ao + batch * sab;
  __global const real_t* b = B + bo + batch * sbb;
  const bool full = n0 + 8 <= N && sbn == 1;
  const int rows = min(4, M - m0);
  float8 acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
  __global const real_t* a0 = a + (m0 + 0) * sam;
  __global const real_t* a1 = a + (m0 + min(1, rows - 1)) * sam;
  __global const real_t* a2 = a + (m0 + min(2, rows - 1)) * sam;
  __global const real_t* a3 = a + (m0 + min(3, rows - 1)) * sam;
  int k = 0;
  if (full && sak == 1) {
    // Eight k at a time: each A row is read as one vector (one conversion of eight halves
    // under fp16 storage instead of eight scalar ones), then broadcast lane by lane.
    for (; k + 8 <= K; k += 8) {
      const float8 av0 = LOAD8(a0 + k), av1 = LOAD8(a1 + k);
      const float8 av2 = LOAD8(a2 + k), av3 = LOAD8(a3 + k);
#define LOOM_GEMM_K(j)                                        \
  {                                                           \
    const float8 bv = LOAD8(b + (k + 0x##j) * sbk + n0);      \
    acc0 = mad((float8)(av0.s##j), bv, acc0);                 \
    acc1 = mad((float8)(av1.s##j), bv, acc1);                 \
    acc2 = mad((float8)(av2.s##j), bv, acc2);                 \
    acc3 = mad((float8)(av3.s##j), bv, acc3);                 \
  }
      LOOM_GEMM_K(0) LOOM_GEMM_K(1) LOOM_GEMM_K(2) LOOM_GEMM_K(3)
      LOOM_GEMM_K(4) LOOM_GEMM_K(5) LOOM_GEMM_K(6) LOOM_GEMM_K(7)
#undef LOOM_GEMM_K
    }
  }
  for (; k < K; ++k) {
    float8 bv;
    if (full) {
      bv = LOAD8(b + k * sbk + n0);
    } else {
      float t[8];
      for (int j = 0; j < 8; ++j) t[j] = n0 + j < N ? LOAD(b, k * sbk + (n0 + j) * sbn) : 0.0f;
      bv = vload8(0, t);
    }
    acc0 = mad((float8)(LOAD(a0, k * sak)), bv, acc0);
    acc1 = mad((float8)(LOAD(a1, k * sak)), bv, acc1);
    acc2 = mad((float8)(LOAD(a2, k * sak)), bv, acc2);
    acc3 = mad((float8)(LOAD(a3, k * sak)), bv, acc3);
  }
  __global real_t* c = C + co + batch * scb;
  float acc[4][8];
  vstore8(acc0, 0, acc[0]);
  vstore8(acc1, 0, acc[1]);
  vstore8(acc2, 0, acc[2]);
  vstore8(acc3, 0, acc[3]);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < 8 && n0 + j < N; ++j)
      STORE(c, (m0 + i) * ldc + n0 + j,
            gemm_epilogue(acc[i][j], bias, qo, sqb, sqm, sqn, has_bias, batch, m0 + i, n0 + j,
                          alpha, beta, act_min, act_max));
}
