// 2-D pooling over x[NC, H, W] (1-D pooling is 2-D with H = 1). One work-item per output.
// pt/pl are the leading pads; pb/pr the trailing ones (they bound the window AveragePool
// counts with count_include_pad).

__kernel void max_pool2d(__global const real_t* x, int xo, __global real_t* y, int yo, int n,
                         int H, int W, int OH, int OW, int KH, int KW, int sh, int sw, int pt,
                         int pl, int dh, int dw) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW, oh = (i / OW) % OH, nc = i / (OW * OH);
  __global const real_t* xp = x + xo + nc * H * W;
  float best = -INFINITY;
  for (int kh = 0; kh < KH; ++kh) {
    int ih = oh * sh - pt + kh * dh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int iw = ow * sw - pl + kw * dw;
      if (iw < 0 || iw >= W) continue;
      best = fmax(best, LOAD(xp, ih * W + iw));
    }
  }
  STORE(y, yo + i, best);
}

__kernel void avg_pool2d(__global const real_t* x, int xo, __global real_t* y, int yo, int n,
                         int H, int W, int OH, int OW, int KH, int KW, int sh, int sw, int pt,
                         int pl, int pb, int pr, int count_include_pad) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW, oh = (i / OW) % OH, nc = i / (OW * OH);
  __global const real_t* xp = x + xo + nc * H * W;
  int h0 = oh * sh - pt, w0 = ow * sw - pl;
  float sum = 0.0f;
  int count = 0;
  for (int kh = 0; kh < KH; ++kh) {
    int ih = h0 + kh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int iw = w0 + kw;
      if (iw < 0 || iw >= W) continue;
      sum += LOAD(xp, ih * W + iw);
      ++count;
    }
  }
  if (count_include_pad) {
    // The window clipped to the padded input, as ONNX counts it.
    int hs = max(h0, -pt), he = min(h0 + KH, H + pb);
    int ws = max(w0, -pl), we = min(w0 + KW, W + pr);
    count = max(he - hs, 0) * max(we - ws, 0);
  }
  STORE(y, yo + i, count > 0 ? sum / (float)count : 0.0f);
}

// GlobalAveragePool / GlobalMaxPool: one work-group per (n, c) row of `len` elements.
__kernel __attribute__((reqd_work_group_size(LOOM_ROW_LANES, 1, 1))) void global_pool(
    __global const real_t* x, int xo, __global real_t* y, int yo, int len, int is_max) {
  __local float part[LOOM_ROW_LANES];
  int row = get_group_id(0), lane = get_local_id(0);
  __global const real_t* xp = x + xo + row * len;
  float acc = is_max ? -INFINITY : 0.0f;
  for (int j = lane; j < len; j += LOOM_ROW_LANES) {
    float v = LOAD(xp, j);
    acc = is_max ? fmax(acc, v) : acc + v;
  }
  part[lane] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOOM_ROW_LANES / 2; s > 0; s >>= 1) {
    if (lane < s) part[lane] = is_max ? fmax(part[lane], part[lane + s]) : part[lane] + part[lane + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == 0) STORE(y, yo + row, is_max ? part[0] : part[0] / (float)len);
}
