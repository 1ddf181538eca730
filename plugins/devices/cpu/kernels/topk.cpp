// TopK (1, 10, 11): the K largest (or smallest) elements along an axis with their int64
// indices. Equal values keep index order (lower index first), NaN counts as larger than any
// number, so the order is total and deterministic whether or not `sorted` is set.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

template <typename T>
auto comparable(T v) {
  if constexpr (is_half_like_v<T>)
    return static_cast<float>(v);
  else
    return v;
}

template <typename V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>)
    return std::isnan(v);
  else
    return false;
}

void topk_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const int64_t rank = x.rank;
  if (rank < 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": input must have rank >= 1");
  const int64_t axis = sdk::normalize_axis(ctx.attrs().get_int("axis", -1), rank, where);
  int64_t k = 0;
  if (ctx.opset() >= 10) {
    const loom_tensor_t& kt = ctx.required_input(1);
    if (kt.rank != 1 && kt.rank != 0)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": K must be a 1-D tensor with one element");
    k = misc::read_scalar_int(kt, where + " K");
  } else {
    if (!ctx.attrs().has("k"))
      fail(LOOM_ERROR_INVALID_MODEL, where + ": attribute 'k' is required");
    k = ctx.attrs().get_int("k", 0);
  }
  const bool largest = ctx.opset() >= 11 ? ctx.attrs().get_int("largest", 1) != 0 : true;
  const int64_t n = x.dims[axis];
  if (k < 0 || k > n)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": K = " + std::to_string(k) + " must be in [0, " +
                                       std::to_string(n) + "] (axis size)");
  std::vector<int64_t> out_dims = misc::dims_of(x);
  out_dims[axis] = k;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims[i];
  loom_tensor_t& values = ctx.allocate_output(0, x.dtype, out_dims);
  loom_tensor_t& indices = ctx.allocate_output(1, LOOM_DTYPE_INT64, out_dims);
  dispatch<kNumeric>(x.dtype, where, [&]<typename T>() {
    const T* in = sdk::data_of<const T>(x);
    T* vout = sdk::data_of<T>(values);
    int64_t* iout = sdk::data_of<int64_t>(indices);
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* line = in + o * n * inner + i;
        auto before = [&](int64_t a, int64_t b) {
          const auto va = comparable(line[a * inner]), vb = comparable(line[b * inner]);
          const bool na = is_nan(va), nb = is_nan(vb);
          if (na || nb) {
            if (na && nb) return a < b;
            return largest ? na : nb;
          }
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dst = o * k * inner + j * inner + i;
          vout[dst] = line[order[j] * inner];
          iout[dst] = order[j];
        }
      }
  });
}

}  // namespace

LOOM_CPU_KERNEL("TopK", 1, topk_kernel, nullptr);
LOOM_CPU_KERNEL("TopK", 10, topk_kernel, nullptr);
LOOM_CPU_KERNEL("TopK", 11, topk_kernel, nullptr);

}  // namespace loom::cpu
