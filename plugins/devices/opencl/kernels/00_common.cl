// Shared conventions of every kernel (this file is embedded first).
//
// - Tensors are dense and row-major. Every tensor argument is a (buffer, element offset) pair:
//   the host binds values that live in one arena (the core's memory plan) or in one constants
//   buffer, so kernels never rely on sub-buffers and their alignment rules.
// - Shapes of rank <= 8 travel as int8 vectors, innermost extent in .s7, padded with extent 1
//   (and stride 0) in front.
// - 1-D kernels get a global size rounded up to their work-group size and check `n` first.
// - Fused activations are a clamp to [act_min, act_max] (Relu: [0, inf), Clip: [lo, hi]).

// Work-group size of the row-wise kernels (one work-group per row, reduced in local memory).
#define LOOM_ROW_LANES 64

// Offset of the element with flat (row-major) index `i` of a tensor of extents `dims`, in a
// tensor laid out with strides `strides`.
inline int strided_offset(int i, int8 dims, int8 strides) {
  int off = 0;
#define LOOM_STEP(d)           \
  {                            \
    int c = i % dims.s##d;     \
    i /= dims.s##d;            \
    off += c * strides.s##d;   \
  }
  LOOM_STEP(7) LOOM_STEP(6) LOOM_STEP(5) LOOM_STEP(4)
  LOOM_STEP(3) LOOM_STEP(2) LOOM_STEP(1) LOOM_STEP(0)
#undef LOOM_STEP
  return off;
}

// Storage of float32 tensors. The program is built twice: as is (float buffers) and with
// -DLOOM_F16_STORAGE (precision=f16: float tensors live in buffers as IEEE halves). Kernels
// name the buffer element `real_t` and go through LOAD/STORE/LOAD8, which in the f16 build are
// the OpenCL 1.2 core vload_half/vstore_half_rte (no cl_khr_fp16 needed): values are read into
// float, all arithmetic is f32, and results are rounded to nearest even once, when stored.
#if defined(LOOM_F16_STORAGE) && defined(LOOM_HALF_BITS)
// CPU drivers without fp16 hardware (PoCL) call a library routine per vload_half/vstore_half,
// which keeps the loops around them scalar. The host then defines LOOM_HALF_BITS and the
// conversions are integer arithmetic that inlines and vectorizes, with the same results:
// exact widening, round to nearest even when narrowing (inf beyond the half range, NaN kept).

// Half bits (in the low 16 bits of U) to float: F/U are float/uint or float8/uint8.
#define LOOM_HALF_TO_FLOAT(F, U)                                                           \
  inline F loom_half_to_##F(U h) {                                                         \
    U o = (h & (U)0x7fffu) << 13; /* exponent and mantissa, in place for a float */       \
    U e = o & (U)0x0f800000u;                                                              \
    o += (U)(112u << 23); /* rebias the exponent: 15 -> 127 */                            \
    o = select(o, o + (U)(112u << 23), e == (U)0x0f800000u); /* inf / NaN: exponent 255 */ \
    /* Subnormal halves: renormalize through an exact float subtraction of 2^-14. */       \
    F subnormal = as_##F(o + (U)(1u << 23)) - (F)(0x1p-14f);                               \
    F f = select(as_##F(o), subnormal, e == (U)0);                                         \
    return as_##F(as_##U(f) | ((h & (U)0x8000u) << 16));                                  \
  }
LOOM_HALF_TO_FLOAT(float, uint)
LOOM_HALF_TO_FLOAT(float8, uint8)
#undef LOOM_HALF_TO_FLOAT

inline ushort loom_float_to_half_bits(float x) {
  uint f = as_uint(x);
  uint sign = (f >> 16) & 0x8000u;
  f &= 0x7fffffffu;
  uint inf_nan = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Below 2^-14 (half subnormals, zero): adding 0.5f, whose ulp is 2^-24 (the half subnormal
  // step), makes the FPU round to nearest even into the low mantissa bits.
  uint subnormal = as_uint(as_float(f) + 0.5f) - 0x3f000000u;
  // Normal: rebias the exponent (127 -> 15) and round to nearest even on the 13 dropped bits.
  uint normal = (f - 0x38000000u + 0xfffu + ((f >> 13) & 1u)) >> 13;
  uint o = f >= 0x47800000u ? inf_nan : (f < 0x38800000u ? subnormal : normal);
  return (ushort)(o | sign);
}

typedef half real_t;
#define LOAD(p, i) loom_half_to_float((uint)((const __global ushort*)(p))[i])
#define STORE(p, i, v) (((__global ushort*)(p))[i] = loom_float_to_half_bits(v))
#define LOAD8(p) loom_half_to_float8(convert_uint8(vload8(0, (const __global ushort*)(p))))
#elif defined(LOOM_F16_STORAGE)
typedef half real_t;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
#define LOAD8(p) vload_half8(0, (p))
#else
typedef float real_t;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#define LOAD8(p) vload8(0, (p))
#endif

// The precision boundary: subgraph inputs and outputs stay float32 for the host; under
// LOOM_F16_STORAGE the first kernels convert the inputs to storage and the last ones convert
// the outputs back (in the f32 build these are plain copies, never launched).
__kernel void storage_from_f32(__global const float* x, int xo, __global real_t* y, int yo, int n) {
  int i = get_global_id(0);
  if (i < n) STORE(y, yo + i, x[xo + i]);
}
__kernel void storage_to_f32(__global const real_t* x, int xo, __global float* y, int yo, int n) {
  int i = get_global_id(0);
  if (i < n) y[yo + i] = LOAD(x, xo + i);
}
