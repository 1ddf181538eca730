// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes.
#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void trilu_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  if (in.rank < 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": input must have rank >= 2, got shape " + shape_string(sdk::shape_of(in)));
  int64_t k = 0;
  if (const loom_tensor_t* kt = ctx.input(1)) {
    std::vector<int64_t> v = read_int_values(ctx, *kt, "k");
    if (v.size() != 1) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": k must be a scalar");
    k = v[0];
  }
  const bool upper = ctx.attrs().get_int("upper", 1) != 0;
  const size_t esize = element_size(ctx, in.dtype);
  const int64_t rows = in.dims[in.rank - 2], cols = in.dims[in.rank - 1];
  const size_t mats =
      static_cast<size_t>(product(sdk::shape_of(in), 0, static_cast<size_t>(in.rank - 2)));
  OutputBuffer out(ctx, 0, in.dtype, sdk::shape_of(in));
  const auto* src = static_cast<const unsigned char*>(in.data);
  auto* dst = static_cast<unsigned char*>(out.data());  // zero-initialised
  for (size_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) continue;
        const size_t off =
            ((m * static_cast<size_t>(rows) + static_cast<size_t>(i)) * static_cast<size_t>(cols) +
             static_cast<size_t>(j)) *
            esize;
        std::memcpy(dst + off, src + off, esize);
      }
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Trilu", 14, trilu_kernel, nullptr);

}  // namespace loom::cpu
