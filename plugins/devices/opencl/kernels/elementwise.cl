// Elementwise float ops: unary (with up to two parameters p0, p1), binary with and without
// numpy broadcasting, and the affine per-channel form BatchNormalization is folded into.

#define LOOM_UNARY(name, expr)                                                             \
  __kernel void unary_##name(__global const real_t* x, int xo, __global real_t* y, int yo, \
                             int n, float p0, float p1) {                                  \
    int i = get_global_id(0);                                                              \
    if (i >= n) return;                                                                    \
    float v = LOAD(x, xo + i);                                                             \
    STORE(y, yo + i, (expr));                                                              \
  }

LOOM_UNARY(relu, fmax(v, 0.0f))
LOOM_UNARY(sigmoid, 1.0f / (1.0f + exp(-v)))
LOOM_UNARY(tanh, tanh(v))
LOOM_UNARY(exp, exp(v))
LOOM_UNARY(log, log(v))
LOOM_UNARY(sqrt, sqrt(v))
LOOM_UNARY(abs, fabs(v))
LOOM_UNARY(neg, -v)
LOOM_UNARY(erf, erf(v))
LOOM_UNARY(reciprocal, 1.0f / v)
LOOM_UNARY(floor, floor(v))
LOOM_UNARY(ceil, ceil(v))
LOOM_UNARY(round, rint(v))
LOOM_UNARY(sin, sin(v))
LOOM_UNARY(cos, cos(v))
LOOM_UNARY(tan, tan(v))
LOOM_UNARY(atan, atan(v))
LOOM_UNARY(sign, v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f))
LOOM_UNARY(softplus, v > 20.0f ? v : log1p(exp(v)))
LOOM_UNARY(softsign, v / (1.0f + fabs(v)))
LOOM_UNARY(clip, fmin(fmax(v, p0), p1))
LOOM_UNARY(leaky_relu, v < 0.0f ? p0 * v : v)
LOOM_UNARY(elu, v < 0.0f ? p0 * (exp(v) - 1.0f) : v)
LOOM_UNARY(selu, v <= 0.0f ? p1 * (p0 * exp(v) - p0) : p1 * v)
LOOM_UNARY(celu, fmax(0.0f, v) + fmin(0.0f, p0 * (exp(v / p0) - 1.0f)))
LOOM_UNARY(hard_sigmoid, fmax(0.0f, fmin(1.0f, p0 * v + p1)))
LOOM_UNARY(hard_swish, v * fmax(0.0f, fmin(1.0f, v / 6.0f + 0.5f)))
LOOM_UNARY(thresholded_relu, v > p0 ? v : 0.0f)
LOOM_UNARY(mish, v * tanh(v > 20.0f ? v : log1p(exp(v))))
LOOM_UNARY(gelu_erf, 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)))
LOOM_UNARY(scale, v * p0 + p1)
#undef LOOM_UNARY

// Clip whose bounds are tensors computed at run time (scalars in device memory).
__kernel void clip_tensor(__global const real_t* x, int xo, __global const real_t* lo, int lo_o,
                          int has_lo, __global const real_t* hi, int hi_o, int has_hi,
                          __global real_t* y, int yo, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  float v = LOAD(x, xo + i);
  if (has_lo) v = fmax(v, LOAD(lo, lo_o));
  if (has_hi) v = fmin(v, LOAD(hi, hi_o));
  STORE(y, yo + i, v);
}

#define LOOM_BINARY(name, expr)                                                              \
  __kernel void binary_##name##_flat(__global const real_t* a, int ao, __global const real_t* b, \
                                     int bo, __global real_t* y, int yo, int n) {              \
    int i = get_global_id(0);                                                                \
    if (i >= n) return;                                                                      \
    float x0 = LOAD(a, ao + i);                                                              \
    float x1 = LOAD(b, bo + i);                                                              \
    STORE(y, yo + i, (expr));                                                                \
  }                                                                                          \
  __kernel void binary_##name##_bcast(__global const real_t* a, int ao, __global const real_t* b, \
                                      int bo, __global real_t* y, int yo, int n, int8 dims,     \
                                      int8 sa, int8 sb) {                                      \
    int i = get_global_id(0);                                                                \
    if (i >= n) return;                                                                      \
    float x0 = LOAD(a, ao + strided_offset(i, dims, sa));                                    \
    float x1 = LOAD(b, bo + strided_offset(i, dims, sb));                                    \
    STORE(y, yo + i, (expr));                                                                \
  }

LOOM_BINARY(add, x0 + x1)
LOOM_BINARY(sub, x0 - x1)
LOOM_BINARY(mul, x0* x1)
LOOM_BINARY(div, x0 / x1)
LOOM_BINARY(pow, pow(x0, x1))
LOOM_BINARY(max, fmax(x0, x1))
LOOM_BINARY(min, fmin(x0, x1))
LOOM_BINARY(prelu, x0 < 0.0f ? x0 * x1 : x0)
#undef LOOM_BINARY

// y = x * scale[c] + shift[c] with c = (i / inner) % channels: inference BatchNormalization
// whose statistics were folded into scale and shift at compile time.
__kernel void channel_affine(__global const real_t* x, int xo, __global const real_t* scale,
                             int so, __global const real_t* shift, int ho, __global real_t* y,
                             int yo, int n, int channels, int inner) {
  int i = get_global_id(0);
  if (i >= n) return;
  int c = (i / inner) % channels;
  STORE(y, yo + i, LOAD(x, xo + i) * LOAD(scale, so + c) + LOAD(shift, ho + c));
}
