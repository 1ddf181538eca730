// Data movement, independent of the element type: every kernel exists once per element size
// (s1 = uchar, s2 = ushort, s4 = uint, s8 = ulong), so Transpose of int64 and of float share
// code. Casts convert between the numeric types.

/* Gather's out-of-range indices: a kernel cannot fail, so it records one bad index in the */
/* step's slot of the error buffer (16 bytes: an int flag, then the index as a long), which the */
/* host reads after the run and turns into the error ONNX mandates. slot < 0: the indices were */
/* checked on the host at compile time (constants) and err is a placeholder. */
void gather_index_error(__global int* err, int slot, long index) {
  if (slot < 0) return;
  if (atomic_cmpxchg(err + 4 * slot, 0, 1) == 0) ((__global long*)err)[2 * slot + 1] = index;
}

#define LOOM_MOVEMENT(sfx, T)                                                                   \
  __kernel void copy_##sfx(__global const T* x, int xo, __global T* y, int yo, int n) {        \
    int i = get_global_id(0);                                                                  \
    if (i < n) y[yo + i] = x[xo + i];                                                          \
  }                                                                                            \
  /* Walks the elements of a region of extents `dims`, reading with strides xs and writing */  \
  /* with strides ys: Transpose, Expand (stride 0), Slice, Concat and Split are all this. */   \
  __kernel void strided_copy_##sfx(__global const T* x, int xo, __global T* y, int yo, int n,  \
                                   int8 dims, int8 xs, int8 ys) {                              \
    int i = get_global_id(0);                                                                  \
    if (i >= n) return;                                                                        \
    y[yo + strided_offset(i, dims, ys)] = x[xo + strided_offset(i, dims, xs)];                 \
  }                                                                                            \
  /* Gather along an axis: data viewed as [outer, axis_len, inner], indices flat [count]. */   \
  /* An index outside [-axis_len, axis_len) writes 0 and is reported through err/slot. */      \
  __kernel void gather_##sfx##_i64(__global const T* x, int xo, __global const long* idx,      \
                                   int io, __global T* y, int yo, int n, int axis_len,         \
                                   int count, int inner, __global int* err, int slot) {        \
    int i = get_global_id(0);                                                                  \
    if (i >= n) return;                                                                        \
    int in = i % inner;                                                                        \
    int j = (i / inner) % count;                                                               \
    int o = i / (inner * count);                                                               \
    long given = idx[io + j];                                                                  \
    long k = given < 0 ? given + axis_len : given;                                             \
    if (k >= 0 && k < axis_len) {                                                              \
      y[yo + i] = x[xo + (o * axis_len + (int)k) * inner + in];                                \
    } else {                                                                                   \
      y[yo + i] = 0;                                                                           \
      gather_index_error(err, slot, given);                                                    \
    }                                                                                          \
  }                                                                                            \
  __kernel void gather_##sfx##_i32(__global const T* x, int xo, __global const int* idx,       \
                                   int io, __global T* y, int yo, int n, int axis_len,         \
                                   int count, int inner, __global int* err, int slot) {        \
    int i = get_global_id(0);                                                                  \
    if (i >= n) return;                                                                        \
    int in = i % inner;                                                                        \
    int j = (i / inner) % count;                                                               \
    int o = i / (inner * count);                                                               \
    int given = idx[io + j];                                                                   \
    int k = given < 0 ? given + axis_len : given;                                              \
    if (k >= 0 && k < axis_len) {                                                              \
      y[yo + i] = x[xo + (o * axis_len + k) * inner + in];                                     \
    } else {                                                                                   \
      y[yo + i] = 0;                                                                           \
      gather_index_error(err, slot, given);                                                    \
    }                                                                                          \
  }                                                                                            \
  /* Constant-mode Pad: y has extents `dims`; x element = y coordinate - before, when inside. */ \
  __kernel void pad_constant_##sfx(__global const T* x, int xo, __global T* y, int yo, int n,  \
                                   int8 dims, int8 before, int8 xdims, T value) {              \
    int i = get_global_id(0);                                                                  \
    if (i >= n) return;                                                                        \
    int r = i, off = 0, stride = 1;                                                            \
    bool inside = true;                                                                        \
    int od[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};      \
    int bd[8] = {before.s0, before.s1, before.s2, before.s3,                                   \
                 before.s4, before.s5, before.s6, before.s7};                                  \
    int xd[8] = {xdims.s0, xdims.s1, xdims.s2, xdims.s3, xdims.s4, xdims.s5, xdims.s6, xdims.s7}; \
    for (int d = 7; d >= 0; --d) {                                                             \
      int c = r % od[d] - bd[d];                                                               \
      r /= od[d];                                                                              \
      if (c < 0 || c >= xd[d]) inside = false;                                                 \
      off += c * stride;                                                                       \
      stride *= xd[d];                                                                         \
    }                                                                                          \
    y[yo + i] = inside ? x[xo + off] : value;                                                  \
  }

LOOM_MOVEMENT(s1, uchar)
LOOM_MOVEMENT(s2, ushort)
LOOM_MOVEMENT(s4, uint)
LOOM_MOVEMENT(s8, ulong)
#undef LOOM_MOVEMENT

// Where(cond, a, b) with broadcasting, by element size.
#define LOOM_WHERE(sfx, T)                                                                     \
  __kernel void where_##sfx(__global const uchar* c, int co, __global const T* a, int ao,      \
                            __global const T* b, int bo, __global T* y, int yo, int n,         \
                            int8 dims, int8 sc, int8 sa, int8 sb) {                            \
    int i = get_global_id(0);                                                                  \
    if (i >= n) return;                                                                        \
    y[yo + i] = c[co + strided_offset(i, dims, sc)] ? a[ao + strided_offset(i, dims, sa)]      \
                                                   : b[bo + strided_offset(i, dims, sb)];      \
  }
LOOM_WHERE(s1, uchar)
LOOM_WHERE(s2, ushort)
LOOM_WHERE(s4, uint)
LOOM_WHERE(s8, ulong)
#undef LOOM_WHERE

// Casts between float32 (f32), int32 (i32), int64 (i64), uint8 (u8), int8 (i8) and bool (b8).
// Float to integer truncates toward zero like C (and the cpu device); to bool is "!= 0".
// Per type name: its buffer element (LOOM_MEM_*), its value type (LOOM_VAL_*) and how an
// element is read and written (float32 through the storage macros, so f16 storage converts).
#define LOOM_MEM_f32 real_t
#define LOOM_MEM_i32 int
#define LOOM_MEM_i64 long
#define LOOM_MEM_u8 uchar
#define LOOM_MEM_i8 char
#define LOOM_MEM_b8 uchar
#define LOOM_VAL_f32 float
#define LOOM_VAL_i32 int
#define LOOM_VAL_i64 long
#define LOOM_VAL_u8 uchar
#define LOOM_VAL_i8 char
#define LOOM_VAL_b8 uchar
#define LOOM_GET_f32(p, i) LOAD(p, i)
#define LOOM_SET_f32(p, i, v) STORE(p, i, v)
#define LOOM_GET_INT(p, i) ((p)[i])
#define LOOM_SET_INT(p, i, v) ((p)[i] = (v))
#define LOOM_CAST(sn, dn, GET, SET, conv)                                                     \
  __kernel void cast_##sn##_##dn(__global const LOOM_MEM_##sn* x, int xo,                      \
                                 __global LOOM_MEM_##dn* y, int yo, int n) {                   \
    int i = get_global_id(0);                                                                 \
    if (i >= n) return;                                                                       \
    LOOM_VAL_##sn v = GET(x, xo + i);                                                         \
    SET(y, yo + i, conv);                                                                     \
  }
#define LOOM_CAST_FROM(sn, GET)                                                   \
  LOOM_CAST(sn, f32, GET, LOOM_SET_f32, (float)v)                                 \
  LOOM_CAST(sn, i32, GET, LOOM_SET_INT, (int)v)                                   \
  LOOM_CAST(sn, i64, GET, LOOM_SET_INT, (long)v)                                  \
  LOOM_CAST(sn, u8, GET, LOOM_SET_INT, (uchar)v)                                  \
  LOOM_CAST(sn, i8, GET, LOOM_SET_INT, (char)v)                                   \
  LOOM_CAST(sn, b8, GET, LOOM_SET_INT, (uchar)(v != 0))
LOOM_CAST_FROM(f32, LOOM_GET_f32)
LOOM_CAST_FROM(i32, LOOM_GET_INT)
LOOM_CAST_FROM(i64, LOOM_GET_INT)
LOOM_CAST_FROM(u8, LOOM_GET_INT)
LOOM_CAST_FROM(i8, LOOM_GET_INT)
LOOM_CAST_FROM(b8, LOOM_GET_INT)
#undef LOOM_CAST_FROM
#undef LOOM_CAST

// Comparisons of float operands with broadcasting; bool (uchar) results.
#define LOOM_COMPARE(name, expr)                                                              \
  __kernel void compare_##name(__global const real_t* a, int ao, __global const real_t* b,    \
                               int bo, __global uchar* y, int yo, int n, int8 dims, int8 sa,  \
                               int8 sb) {                                                     \
    int i = get_global_id(0);                                                                 \
    if (i >= n) return;                                                                       \
    float x0 = LOAD(a, ao + strided_offset(i, dims, sa));                                     \
    float x1 = LOAD(b, bo + strided_offset(i, dims, sb));                                     \
    y[yo + i] = (expr) ? 1 : 0;                                                               \
  }
LOOM_COMPARE(equal, x0 == x1)
LOOM_COMPARE(less, x0 < x1)
LOOM_COMPARE(less_equal, x0 <= x1)
LOOM_COMPARE(greater, x0 > x1)
LOOM_COMPARE(greater_equal, x0 >= x1)
#undef LOOM_COMPARE
