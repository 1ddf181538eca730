// Dropout (opsets 7, 10, 12, 13). In inference (the default) it is the identity, sharing the
// input's memory, with an optional all-true mask (bool from opset 10, T before). With
// training_mode = true (opset 12+ input) and ratio > 0 it drops elements with probability
// ratio and scales the rest by 1 / (1 - ratio), seeded by the `seed` attribute when given.
#include <random>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

bool scalar_bool(const KernelContext& ctx, const loom_tensor_t* t) {
  if (!t) return false;
  if (t->dtype != LOOM_DTYPE_BOOL || sdk::element_count(*t) != 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": training_mode must be a bool scalar");
  return *sdk::data_of<const uint8_t>(*t) != 0;
}

void dropout_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  double ratio = ctx.attrs().get_float("ratio", 0.5f);  // an attribute before opset 12
  if (const loom_tensor_t* r = ctx.input(1)) {
    const std::vector<double> v = nn::float_values(ctx, *r);
    if (v.size() != 1) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": ratio must be a scalar");
    ratio = v[0];
  }
  const bool training = scalar_bool(ctx, ctx.input(2));
  if (training && !(ratio >= 0 && ratio < 1))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": ratio must be in [0, 1), got " + std::to_string(ratio));
  const bool want_mask = ctx.output_requested(1);
  const loom_dtype_t mask_type = ctx.opset() >= 10 ? LOOM_DTYPE_BOOL : x.dtype;
  const size_t n = static_cast<size_t>(sdk::element_count(x));

  if (!training || ratio == 0) {
    ctx.set_output(0, *ctx.input_tensor(0));
    if (want_mask) {
      loom_tensor_t& mask = ctx.allocate_output(1, mask_type, sdk::shape_of(x));
      dispatch<kFloats | kBool>(mask_type, ctx, [&]<typename M>() {
        M* m = sdk::data_of<M>(mask);
        for (size_t i = 0; i < n; ++i) m[i] = convert<M>(1.0f);
      });
    }
    return;
  }
  // Training: a real random mask. Reproducible when the model gives a seed.
  std::mt19937_64 gen(ctx.attrs().has("seed")
                          ? static_cast<uint64_t>(ctx.attrs().get_int("seed", 0))
                          : std::random_device{}());
  std::bernoulli_distribution keep(1.0 - ratio);
  std::vector<uint8_t> kept(n);
  for (size_t i = 0; i < n; ++i) kept[i] = keep(gen);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  const double scale = 1.0 / (1.0 - ratio);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    const T* src = sdk::data_of<const T>(x);
    T* dst = sdk::data_of<T>(y);
    for (size_t i = 0; i < n; ++i)
      dst[i] = kept[i] ? convert<T>(convert<double>(src[i]) * scale) : convert<T>(0.0);
  });
  if (want_mask) {
    loom_tensor_t& mask = ctx.allocate_output(1, mask_type, sdk::shape_of(x));
    dispatch<kFloats | kBool>(mask_type, ctx, [&]<typename M>() {
      M* m = sdk::data_of<M>(mask);
      for (size_t i = 0; i < n; ++i) m[i] = convert<M>(kept[i] ? 1.0f : 0.0f);
    });
  }
}

}  // namespace

LOOM_CPU_KERNEL("Dropout", 7, dropout_kernel, nullptr);

}  // namespace loom::cpu
