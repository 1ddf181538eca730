// Reduce* over any set of axes: one work-item per output element. The input is described as
// kept dims (the output's extents, with the input strides of those axes) and reduced dims
// (extents and input strides), each padded to 8 in front; the reduced elements are walked
// with an odometer over the reduced dims.

#define LOOM_REDUCE(name, init, accumulate, finish)                                          \
  __kernel void reduce_##name(__global const real_t* x, int xo, __global real_t* y, int yo,    \
                              int n, int8 kdims, int8 kstrides, int8 rdims, int8 rstrides,   \
                              int count) {                                                   \
    int i = get_global_id(0);                                                                \
    if (i >= n) return;                                                                      \
    int base = xo + strided_offset(i, kdims, kstrides);                                      \
    int rd[8] = {rdims.s0, rdims.s1, rdims.s2, rdims.s3, rdims.s4, rdims.s5, rdims.s6, rdims.s7}; \
    int rs[8] = {rstrides.s0, rstrides.s1, rstrides.s2, rstrides.s3,                         \
                 rstrides.s4, rstrides.s5, rstrides.s6, rstrides.s7};                        \
    int c[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                     \
    int off = 0;                                                                             \
    float acc = init;                                                                        \
    for (int j = 0; j < count; ++j) {                                                        \
      float v = LOAD(x, base + off);                                                               \
      accumulate;                                                                            \
      for (int d = 7; d >= 0; --d) { /* odometer step */                                     \
        off += rs[d];                                                                        \
        if (++c[d] < rd[d]) break;                                                           \
        off -= rs[d] * rd[d];                                                                \
        c[d] = 0;                                                                            \
      }                                                                                      \
    }                                                                                        \
    STORE(y, yo + i, finish);                                                                      \
  }

LOOM_REDUCE(sum, 0.0f, acc += v, acc)
LOOM_REDUCE(mean, 0.0f, acc += v, count ? acc / (float)count : NAN)
LOOM_REDUCE(max, -INFINITY, acc = fmax(acc, v), acc)
LOOM_REDUCE(min, INFINITY, acc = fmin(acc, v), acc)
LOOM_REDUCE(prod, 1.0f, acc *= v, acc)
LOOM_REDUCE(l1, 0.0f, acc += fabs(v), acc)
LOOM_REDUCE(l2, 0.0f, acc = mad(v, v, acc), sqrt(acc))
LOOM_REDUCE(sum_square, 0.0f, acc = mad(v, v, acc), acc)
LOOM_REDUCE(log_sum, 0.0f, acc += v, log(acc))
#undef LOOM_REDUCE

// ReduceLogSumExp needs the maximum first for stability: two walks.
__kernel void reduce_log_sum_exp(__global const real_t* x, int xo, __global real_t* y, int yo,
                                 int n, int8 kdims, int8 kstrides, int8 rdims, int8 rstrides,
                                 int count) {
  int i = get_global_id(0);
  if (i >= n) return;
  int base = xo + strided_offset(i, kdims, kstrides);
  float m = -INFINITY;
  for (int j = 0; j < count; ++j) m = fmax(m, LOAD(x, base + strided_offset(j, rdims, rstrides)));
  float s = 0.0f;
  for (int j = 0; j < count; ++j) s += exp(LOAD(x, base + strided_offset(j, rdims, rstrides)) - m);
  STORE(y, yo + i, count ? (isinf(m) ? m : m + log(s)) : -INFINITY);
}
