// Transpose (perm defaults to reversing the axes) and DepthToSpace/SpaceToDepth, which are a
// reshape to 6-D followed by a transpose.
#include <algorithm>
#include <optional>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void transpose_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const int64_t rank = in.rank;
  std::vector<int64_t> perm;
  if (auto p = ctx.attrs().get_ints("perm")) {
    perm.assign(p->begin(), p->end());
    if (static_cast<int64_t>(perm.size()) != rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": perm " + shape_string(perm) +
                                            " does not match the input rank " +
                                            std::to_string(rank));
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& a : perm) {
      a = normalize_axis(ctx, a, rank);
      if (seen[a])
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             ctx.where() + ": perm " + shape_string(perm) + " is not a permutation");
      seen[a] = true;
    }
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> out_dims(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) out_dims[i] = in.dims[perm[i]];
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  transpose_elements(ctx, in.data, sdk::shape_of(in), perm, out.data(),
                     element_size(ctx, in.dtype));
  out.commit();
}

void check_4d(const KernelContext& ctx, const loom_tensor_t& in) {
  if (in.rank != 4)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input must be 4-D (N, C, H, W), got shape " +
                                          shape_string(sdk::shape_of(in)));
}

int64_t blocksize_of(const KernelContext& ctx) {
  int64_t b = ctx.attrs().get_int("blocksize", 0);
  if (b <= 0)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": attribute 'blocksize' must be positive, got " + std::to_string(b));
  return b;
}

void depth_to_space_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  check_4d(ctx, in);
  const int64_t b = blocksize_of(ctx);
  const int64_t n = in.dims[0], c = in.dims[1], h = in.dims[2], w = in.dims[3];
  // b > c means b * b > c (and guards the product against overflow): no whole block fits.
  // The message names the blocksize, not its square, which may not fit in int64.
  if (b > c || c % (b * b) != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": channels " + std::to_string(c) +
                                          " are not divisible by blocksize^2 (blocksize " +
                                          std::to_string(b) + ")");
  const int64_t oc = c / (b * b);
  std::string mode = ctx.attrs().get_string("mode", "DCR");
  std::vector<int64_t> dims6, perm;
  if (mode == "DCR") {
    dims6 = {n, b, b, oc, h, w};
    perm = {0, 3, 4, 1, 5, 2};
  } else if (mode == "CRD") {
    dims6 = {n, oc, b, b, h, w};
    perm = {0, 1, 4, 2, 5, 3};
  } else {
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": unknown mode '" + mode + "'");
  }
  int64_t out_dims[4] = {n, oc, h * b, w * b};
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  transpose_elements(ctx, in.data, dims6, perm, out.data(), element_size(ctx, in.dtype));
  out.commit();
}

void space_to_depth_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  check_4d(ctx, in);
  const int64_t b = blocksize_of(ctx);
  const int64_t n = in.dims[0], c = in.dims[1], h = in.dims[2], w = in.dims[3];
  if (h % b != 0 || w % b != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": height " + std::to_string(h) +
                                          " and width " + std::to_string(w) +
                                          " must be divisible by blocksize " + std::to_string(b));
  // Opset 28 added `mode`; earlier opsets always order the new channels depth-column-row.
  std::string mode = ctx.opset() >= 28 ? ctx.attrs().get_string("mode", "DCR") : "DCR";
  std::vector<int64_t> dims6 = {n, c, h / b, b, w / b, b};
  std::vector<int64_t> perm;
  if (mode == "DCR")
    perm = {0, 3, 5, 1, 2, 4};  // channel index = (row * b + col) * c + depth
  else if (mode == "CRD")
    perm = {0, 1, 3, 5, 2, 4};  // channel index = (depth * b + row) * b + col
  else
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": unknown mode '" + mode + "'");
  // With h or w of 0 any blocksize divides them, so the product is checked, not assumed small.
  std::optional<int64_t> oc = sdk::checked_mul(b, b);
  if (oc) oc = sdk::checked_mul(c, *oc);
  if (!oc)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": channels " + std::to_string(c) +
                                          " x blocksize^2 (blocksize " + std::to_string(b) +
                                          ") overflow int64");
  int64_t out_dims[4] = {n, *oc, h / b, w / b};
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  transpose_elements(ctx, in.data, dims6, perm, out.data(), element_size(ctx, in.dtype));
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Transpose", 1, transpose_kernel, nullptr);
LOOM_CPU_KERNEL("DepthToSpace", 1, depth_to_space_kernel, nullptr);
LOOM_CPU_KERNEL("SpaceToDepth", 1, space_to_depth_kernel, nullptr);

}  // namespace loom::cpu
