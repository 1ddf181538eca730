// Det (11): determinants of square matrices [..., M, M] by LU decomposition with partial
// pivoting, computed in double and stored in the input's floating-point type.
#include <cmath>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

double determinant(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    if (a[pivot * n + col] == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[col * n + k], a[pivot * n + k]);
      det = -det;
    }
    const double p = a[col * n + col];
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      const double f = a[r * n + col] / p;
      if (f == 0.0) continue;
      for (int64_t k = col + 1; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
    }
  }
  return det;
}

void det_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank < 2 || x.dims[x.rank - 1] != x.dims[x.rank - 2])
    fail(LOOM_ERROR_INVALID_MODEL, where + ": input must be [..., M, M] (square matrices)");
  dispatch<kFloats>(x.dtype, where, []<typename T>() {});
  const int64_t n = x.dims[x.rank - 1];
  std::vector<int64_t> out_dims(x.dims, x.dims + x.rank - 2);
  const std::vector<double> all = misc::read_as<double>(x, where);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  const size_t count = misc::count_of(y);
  std::vector<double> result(count);
  for (size_t m = 0; m < count; ++m) {
    std::vector<double> a(all.begin() + m * n * n, all.begin() + (m + 1) * n * n);
    result[m] = determinant(a, n);
  }
  misc::write_as<double>(y, result, where);
}

}  // namespace

LOOM_CPU_KERNEL("Det", 11, det_kernel, nullptr);

}  // namespace loom::cpu
