// OneHot: inserts a depth axis; on_value where the index matches, off_value elsewhere.
// Negative indices count from depth; indices outside [-depth, depth) give an all-off row.
#include <cmath>
#include <cstdio>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void onehot_kernel(KernelContext& ctx) {
  const loom_tensor_t& indices = ctx.required_input(0);
  const double depth_value = read_scalar_as_double(ctx, ctx.required_input(1), "depth");
  const loom_tensor_t& values = ctx.required_input(2);
  if (sdk::element_count(values) != 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": values must hold [off_value, on_value]");
  // A depth past 2^62 cannot size a tensor (and the cast below would be undefined); below, the
  // output allocation checks the size against the run's tensor limit.
  if (!(depth_value >= 1) || depth_value >= 0x1p62) {
    char depth_text[32];
    std::snprintf(depth_text, sizeof depth_text, depth_value >= 1 ? "%.0f" : "%g", depth_value);
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": depth " + depth_text +
             (depth_value >= 1 ? " is more than int64 can count" : " must be a positive size"));
  }
  const int64_t depth = static_cast<int64_t>(depth_value);
  const int64_t out_rank = indices.rank + 1;
  const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis", -1), out_rank);
  std::vector<int64_t> out_dims = dims_of(indices);
  out_dims.insert(out_dims.begin() + axis, depth);
  const size_t esize = element_size(ctx, values.dtype);
  std::vector<int64_t> idx(static_cast<size_t>(sdk::element_count(indices)));
  dispatch<kNumeric>(indices.dtype, ctx, [&]<typename T>() {
    const T* p = static_cast<const T*>(indices.data);
    for (size_t i = 0; i < idx.size(); ++i) {
      double v = std::trunc(convert<double>(p[i]));
      idx[i] = v < -static_cast<double>(depth) || v >= static_cast<double>(depth)
                   ? -1
                   : static_cast<int64_t>(v < 0 ? v + static_cast<double>(depth) : v);
    }
  });
  OutputBuffer out(ctx, 0, values.dtype, out_dims);
  // Nothing to write: with an empty index axis the loops below would still count to a depth
  // of up to 2^62 for nothing (the run-time fuzzer's timeout).
  if (empty_output(out_dims)) return out.commit();
  const auto* off = static_cast<const unsigned char*>(values.data);
  const auto* on = off + esize;
  auto* dst = static_cast<unsigned char*>(out.data());
  // indices = [outer, inner] around the new axis: out[o][d][i] = idx[o][i] == d.
  const size_t outer =
      static_cast<size_t>(product(sdk::shape_of(indices), 0, static_cast<size_t>(axis)));
  const size_t inner =
      static_cast<size_t>(product(sdk::shape_of(indices), static_cast<size_t>(axis)));
  for (size_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (size_t i = 0; i < inner; ++i) {
        const bool hot = idx[o * inner + i] == d;
        std::memcpy(
            dst + ((o * static_cast<size_t>(depth) + static_cast<size_t>(d)) * inner + i) * esize,
            hot ? on : off, esize);
      }
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("OneHot", 9, onehot_kernel, nullptr);

}  // namespace loom::cpu
