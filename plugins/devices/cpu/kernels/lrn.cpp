// LRN (opsets 1, 13): local response normalisation across channels of [N, C, spatial...]:
//   y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2),
//                                                          c + ceil((size-1)/2)]) ^ beta
#include <cmath>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

void lrn_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be [N, C, spatial...], got " + nn::shape_string(x));
  const int64_t size = ctx.attrs().get_int("size", 0);
  if (size <= 0)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'size' must be a positive integer");
  const double alpha = ctx.attrs().get_float("alpha", 1e-4f);
  const double beta = ctx.attrs().get_float("beta", 0.75f);
  const double bias = ctx.attrs().get_float("bias", 1.0f);
  const int64_t channels = x.dims[1];
  size_t plane = 1;
  for (int32_t d = 2; d < x.rank; ++d) plane *= static_cast<size_t>(x.dims[d]);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    const size_t planes = static_cast<size_t>(x.dims[0] * channels);
    nn::parallel_range(ctx, planes, 1, [&](size_t p0, size_t p1) {
      std::vector<double> sq(plane);
      for (size_t p = p0; p < p1; ++p) {
        const int64_t c = static_cast<int64_t>(p) % channels;
        const size_t image = p - static_cast<size_t>(c);  // plane index of channel 0
        std::fill(sq.begin(), sq.end(), 0.0);
        for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(channels - 1, c + after);
             ++k) {
          const C* src = xv.data() + (image + static_cast<size_t>(k)) * plane;
          for (size_t i = 0; i < plane; ++i)
            sq[i] += static_cast<double>(src[i]) * static_cast<double>(src[i]);
        }
        const C* src = xv.data() + p * plane;
        C* dst = out.data() + p * plane;
        for (size_t i = 0; i < plane; ++i)
          dst[i] = static_cast<C>(static_cast<double>(src[i]) /
                                  std::pow(bias + alpha / static_cast<double>(size) * sq[i], beta));
      }
    });
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("LRN", 1, lrn_kernel, nullptr);

}  // namespace loom::cpu
