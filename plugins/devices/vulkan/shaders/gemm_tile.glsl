// Shared-memory tiled GEMM core: C[BM x BN] tile per workgroup of 16 x 8 = 128 invocations
// (the minimum maxComputeWorkGroupInvocations Vulkan guarantees), each computing 4 x 4 outputs
// spread with stride 8 / 16 so loads and stores stay coalesced. The including shader defines
// load_a(batch, m, k), load_b(batch, k, n), store(batch, m, n, value) and M, N, KDIM; rows and
// columns outside the matrix are read as 0 and not stored.
#define BM 32
#define BN 64
#define BK 16
layout(local_size_x = 16, local_size_y = 8, local_size_z = 1) in;

shared float tile_a[BK][BM + 1];
shared float tile_b[BK][BN + 1];

void gemm_tile(uint batch) {
  uint tx = gl_LocalInvocationID.x;  // 0..15, columns
  uint ty = gl_LocalInvocationID.y;  // 0..7, rows
  uint lid = ty * 16u + tx;
  uint m0 = gl_WorkGroupID.y * BM;
  uint n0 = gl_WorkGroupID.x * BN;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0; k0 < KDIM; k0 += BK) {
    // A tile: BM x BK = 512 values, 4 per invocation; k fastest so reads follow rows of A.
    for (uint r = 0; r < 4u; ++r) {
      uint e = lid + r * 128u;
      uint kk = e % BK, mm = e / BK;
      uint m = m0 + mm, k = k0 + kk;
      tile_a[kk][mm] = (m < M && k < KDIM) ? load_a(batch, m, k) : 0.0;
    }
    // B tile: BK x BN = 1024 values, 8 per invocation; n fastest.
    for (uint r = 0; r < 8u; ++r) {
      uint e = lid + r * 128u;
      uint nn = e % BN, kk = e / BN;
      uint n = n0 + nn, k = k0 + kk;
      tile_b[kk][nn] = (n < N && k < KDIM) ? load_b(batch, k, n) : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = tile_a[kk][ty + 8u * uint(i)];
      for (int j = 0; j < 4; ++j) bv[j] = tile_b[kk][tx + 16u * uint(j)];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    uint m = m0 + ty + 8u * uint(i);
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      uint n = n0 + tx + 16u * uint(j);
      if (n < N) store(batch, m, n, acc[i][j]);
    }
  }
}
