// Normalisations over arbitrary axes:
//   MeanVarianceNormalization (opsets 9, 13): (X - mean) / (sqrt(var) + 1e-9) over `axes`
//     (default [0, 2, 3]), the formula of the ONNX function body;
//   LpNormalization (opset 1): X / ||X||_p along `axis`, p in {1, 2}; an all-zero slice stays 0.
#include <cmath>
#include <loom/op_semantics.hpp>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

void mvn_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  std::vector<bool> reduced(static_cast<size_t>(x.rank), false);
  if (auto axes = ctx.attrs().get_ints("axes")) {
    for (int64_t a : *axes) reduced[sdk::normalize_axis(a, x.rank, ctx.where())] = true;
  } else {
    for (int64_t a : {0, 2, 3})
      if (a < x.rank) reduced[a] = true;
  }
  // Each element belongs to the group given by its coordinates on the kept axes.
  const size_t total = static_cast<size_t>(sdk::element_count(x));
  size_t groups = 1;
  for (int32_t d = 0; d < x.rank; ++d)
    if (!reduced[d]) groups *= static_cast<size_t>(x.dims[d]);
  std::vector<size_t> group_of(total);
  for (size_t i = 0; i < total; ++i) {
    size_t rem = i, key = 0, stride = 1;
    for (int32_t d = x.rank; d-- > 0;) {
      const size_t coord = rem % static_cast<size_t>(x.dims[d]);
      rem /= static_cast<size_t>(x.dims[d]);
      if (!reduced[d]) {
        key += coord * stride;
        stride *= static_cast<size_t>(x.dims[d]);
      }
    }
    group_of[i] = key;
  }
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  if (total == 0) return;
  const double members = static_cast<double>(total / groups);
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    std::vector<double> sum(groups, 0.0), sum_sq(groups, 0.0);
    for (size_t i = 0; i < total; ++i) {
      const double v = static_cast<double>(xv[i]);
      sum[group_of[i]] += v;
      sum_sq[group_of[i]] += v * v;
    }
    std::vector<double> mean(groups), denom(groups);
    for (size_t g = 0; g < groups; ++g) {
      mean[g] = sum[g] / members;
      const double var = std::max(0.0, sum_sq[g] / members - mean[g] * mean[g]);
      denom[g] = std::sqrt(var) + 1e-9;
    }
    for (size_t i = 0; i < total; ++i) {
      const size_t g = group_of[i];
      out.data()[i] = static_cast<C>((static_cast<double>(xv[i]) - mean[g]) / denom[g]);
    }
    out.commit();
  });
}

void lp_norm_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const int64_t p = ctx.attrs().get_int("p", 2);
  if (p != 1 && p != 2)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": p must be 1 or 2, got " + std::to_string(p));
  if (x.rank == 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input must have rank >= 1");
  const int64_t axis = sdk::normalize_axis(ctx.attrs().get_int("axis", -1), x.rank, ctx.where());
  size_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(x.dims[d]);
  for (int32_t d = static_cast<int32_t>(axis) + 1; d < x.rank; ++d)
    inner *= static_cast<size_t>(x.dims[d]);
  const size_t extent = static_cast<size_t>(x.dims[axis]);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, sdk::shape_of(x));
  dispatch<kFloats>(x.dtype, ctx, [&]<typename T>() {
    using C = nn::compute_t<T>;
    nn::ComputeInput<T> xv(x);
    nn::ComputeOutput<T> out(y);
    for (size_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < inner; ++i) {
        const size_t base = o * extent * inner + i;
        double norm = 0;
        for (size_t k = 0; k < extent; ++k) {
          const double v = static_cast<double>(xv[base + k * inner]);
          norm += p == 1 ? std::abs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (size_t k = 0; k < extent; ++k)
          out.data()[base + k * inner] =
              norm == 0 ? C(0) : static_cast<C>(static_cast<double>(xv[base + k * inner]) / norm);
      }
    out.commit();
  });
}

}  // namespace

LOOM_CPU_KERNEL("MeanVarianceNormalization", 9, mvn_kernel, nullptr);
LOOM_CPU_KERNEL("LpNormalization", 1, lp_norm_kernel, nullptr);

}  // namespace loom::cpu
