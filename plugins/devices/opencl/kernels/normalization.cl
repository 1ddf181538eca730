// Row-wise kernels: one work-group of LOOM_ROW_LANES work-items per row, partial results
// combined in local memory (a tree), so a row of any length costs one pass per statistic.

inline float row_max(__local float* part, int lane, float v) {
  part[lane] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOOM_ROW_LANES / 2; s > 0; s >>= 1) {
    if (lane < s) part[lane] = fmax(part[lane], part[lane + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

inline float row_sum(__local float* part, int lane, float v) {
  part[lane] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOOM_ROW_LANES / 2; s > 0; s >>= 1) {
    if (lane < s) part[lane] += part[lane + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// Softmax / LogSoftmax along one axis of x viewed as [outer, len, inner]: row r = (o, in).
__kernel __attribute__((reqd_work_group_size(LOOM_ROW_LANES, 1, 1))) void softmax(
    __global const real_t* x, int xo, __global real_t* y, int yo, int len, int inner, int log_mode) {
  __local float part[LOOM_ROW_LANES];
  int row = get_group_id(0), lane = get_local_id(0);
  int base = (row / inner) * len * inner + row % inner;
  __global const real_t* xp = x + xo + base;
  __global real_t* yp = y + yo + base;
  float m = -INFINITY;
  for (int j = lane; j < len; j += LOOM_ROW_LANES) m = fmax(m, LOAD(xp, j * inner));
  m = row_max(part, lane, m);
  float s = 0.0f;
  for (int j = lane; j < len; j += LOOM_ROW_LANES) s += exp(LOAD(xp, j * inner) - m);
  s = row_sum(part, lane, s);
  if (log_mode) {
    float ls = log(s);
    for (int j = lane; j < len; j += LOOM_ROW_LANES) STORE(yp, j * inner, LOAD(xp, j * inner) - m - ls);
  } else {
    float inv = 1.0f / s;
    for (int j = lane; j < len; j += LOOM_ROW_LANES) STORE(yp, j * inner, exp(LOAD(xp, j * inner) - m) * inv);
  }
}

// LayerNormalization over contiguous rows of `len`: two passes (mean, then the variance of
// the centred values) for accuracy. scale and bias hold `len` values (has_bias: bias given).
__kernel __attribute__((reqd_work_group_size(LOOM_ROW_LANES, 1, 1))) void layer_norm(
    __global const real_t* x, int xo, __global const real_t* scale, int so,
    __global const real_t* bias, int bo, int has_bias, __global real_t* y, int yo, int len,
    float epsilon) {
  __local float part[LOOM_ROW_LANES];
  int row = get_group_id(0), lane = get_local_id(0);
  __global const real_t* xp = x + xo + row * len;
  __global real_t* yp = y + yo + row * len;
  float s = 0.0f;
  for (int j = lane; j < len; j += LOOM_ROW_LANES) s += LOAD(xp, j);
  float mean = row_sum(part, lane, s) / (float)len;
  float q = 0.0f;
  for (int j = lane; j < len; j += LOOM_ROW_LANES) {
    float d = LOAD(xp, j) - mean;
    q = mad(d, d, q);
  }
  float inv_std = rsqrt(row_sum(part, lane, q) / (float)len + epsilon);
  for (int j = lane; j < len; j += LOOM_ROW_LANES) {
    float v = (LOAD(xp, j) - mean) * inv_std * LOAD(scale, so + j);
    STORE(yp, j, has_bias ? v + LOAD(bias, bo + j) : v);
  }
}
