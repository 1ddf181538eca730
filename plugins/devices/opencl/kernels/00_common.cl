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
