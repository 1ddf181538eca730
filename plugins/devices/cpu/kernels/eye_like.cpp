// EyeLike: a 2-D tensor shaped like the input with ones on the k-th diagonal.
#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void eye_like_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  if (in.rank != 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input must be 2-D, got shape " + shape_string(sdk::shape_of(in)));
  const auto dtype = static_cast<loom_dtype_t>(ctx.attrs().get_int("dtype", in.dtype));
  const int64_t k = ctx.attrs().get_int("k", 0);
  loom_tensor_t& out = ctx.allocate_output(0, dtype, sdk::shape_of(in));
  dispatch<kNumeric | kBool>(dtype, ctx, [&]<typename T>() {
    T* o = sdk::data_of<T>(out);
    const int64_t rows = in.dims[0], cols = in.dims[1];
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < cols) o[i * cols + j] = convert<T>(1.0f);
    }
  });
}

}  // namespace

LOOM_CPU_KERNEL("EyeLike", 9, eye_like_kernel, nullptr);

}  // namespace loom::cpu
