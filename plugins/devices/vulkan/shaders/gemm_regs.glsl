// Register-blocked GEMM core without shared memory, for devices whose "shared memory" is plain
// cache and whose barriers are expensive (CPU implementations such as lavapipe): each
// invocation computes 4 rows x 4 columns reading A and B straight from the buffers. Columns
// are n0 + tx + 16 j, so neighbouring invocations (the SIMD lanes of a CPU implementation)
// read neighbouring B elements and share their A element. Same interface and tile geometry as
// gemm_tile.glsl (BM = 32 rows, BN = 64 columns per workgroup).
#define BM 32
#define BN 64
layout(local_size_x = 16, local_size_y = 8, local_size_z = 1) in;

void gemm_tile(uint batch) {
  uint tx = gl_LocalInvocationID.x;
  uint ty = gl_LocalInvocationID.y;
  uint m0 = gl_WorkGroupID.y * BM + ty * 4u;
  uint n0 = gl_WorkGroupID.x * BN + tx;
  if (m0 >= M || n0 >= N) return;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  bool full = m0 + 4u <= M && n0 + 48u < N;
  for (uint k = 0; k < KDIM; ++k) {
    float av[4], bv[4];
    for (int i = 0; i < 4; ++i)
      av[i] = (full || m0 + uint(i) < M) ? load_a(batch, m0 + uint(i), k) : 0.0;
    for (int j = 0; j < 4; ++j)
      bv[j] = (full || n0 + 16u * uint(j) < N) ? load_b(batch, k, n0 + 16u * uint(j)) : 0.0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
  }
  for (int i = 0; i < 4; ++i) {
    if (m0 + uint(i) >= M) continue;
    for (int j = 0; j < 4; ++j)
      if (n0 + 16u * uint(j) < N) store(batch, m0 + uint(i), n0 + 16u * uint(j), acc[i][j]);
  }
}
