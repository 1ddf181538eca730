// MaxUnpool (opsets 9, 11): scatters X into a zero tensor at the flat positions given by the
// Indices output of a MaxPool, which number the elements of the inverse of the pooling
// geometry, (in - 1) * stride + kernel - pad_begin - pad_end. An explicit output_shape (third
// input, opset 11) keeps every value at the same coordinates and zero-fills the rest.
#include <cstring>

#include "conv_util.hpp"

namespace loom::cpu {
namespace {

void max_unpool_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& idx = ctx.required_input(1);
  const loom_tensor_t* shape = ctx.input(2);
  if (x.rank < 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be [N, C, spatial...], got " + nn::shape_string(x));
  if (idx.dtype != LOOM_DTYPE_INT64 ||
      !std::equal(idx.dims, idx.dims + idx.rank, x.dims, x.dims + x.rank))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": indices I must be int64 of X's shape " +
                                          nn::shape_string(x) + ", got " +
                                          sdk::dtype_name(idx.dtype) + " " + nn::shape_string(idx));
  if (x.dtype == LOOM_DTYPE_STRING || sdk::dtype_size(x.dtype) == 0)
    fail(LOOM_ERROR_UNSUPPORTED,
         ctx.where() + ": element type " + sdk::dtype_name(x.dtype) + " is not supported");
  const size_t r = static_cast<size_t>(x.rank - 2);
  auto kernel = ctx.attrs().get_ints("kernel_shape");
  if (!kernel || kernel->size() != r)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() +
                                       ": kernel_shape must give one extent per spatial "
                                       "dimension");
  const std::vector<int64_t> strides = nn::window_attr(ctx, "strides", r, 1, 1);
  const std::vector<int64_t> pads = nn::window_attr(ctx, "pads", 2 * r, 0, 0);
  // The pooled-from shape the indices refer to: (in - 1) * stride + kernel - pads.
  std::vector<int64_t> inferred = {x.dims[0], x.dims[1]};
  for (size_t d = 0; d < r; ++d) {
    const int64_t extent = (x.dims[d + 2] - 1) * strides[d] + (*kernel)[d] - pads[d] - pads[d + r];
    if (extent <= 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": inferred output extent is not positive");
    inferred.push_back(extent);
  }
  std::vector<int64_t> out_dims = inferred;
  if (shape) {
    if (shape->dtype != LOOM_DTYPE_INT64 || shape->rank != 1 || shape->dims[0] != x.rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": output_shape must be an int64 vector of " +
                                            std::to_string(x.rank) + " values");
    out_dims.assign(sdk::data_of<const int64_t>(*shape),
                    sdk::data_of<const int64_t>(*shape) + x.rank);
    for (int64_t d : out_dims)
      if (d < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": negative output_shape");
  }
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  const int64_t inferred_total =
      sdk::element_count(static_cast<int32_t>(inferred.size()), inferred.data());
  const int64_t* ip = sdk::data_of<const int64_t>(idx);
  const size_t n = static_cast<size_t>(sdk::element_count(x));
  const size_t elem = sdk::dtype_size(x.dtype);
  const bool same_shape = inferred == out_dims;
  // A plain byte copy per element: the op moves values without arithmetic, so every dtype works.
  const auto* src = static_cast<const unsigned char*>(x.data);
  auto* dst = static_cast<unsigned char*>(y.data);
  for (size_t i = 0; i < n; ++i) {
    if (ip[i] < 0 || ip[i] >= inferred_total)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": index " + std::to_string(ip[i]) +
                                            " is outside the unpooled tensor " +
                                            nn::shape_string(inferred));
    int64_t target = ip[i];
    if (!same_shape) {
      // An explicit output_shape keeps each value at its coordinates in the inferred shape.
      int64_t rem = ip[i], offset = 0, stride = 1;
      for (size_t d = inferred.size(); d-- > 0;) {
        const int64_t coord = rem % inferred[d];
        rem /= inferred[d];
        if (coord >= out_dims[d])
          fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": index " + std::to_string(ip[i]) +
                                                " falls outside output_shape " +
                                                nn::shape_string(out_dims));
        offset += coord * stride;
        stride *= out_dims[d];
      }
      target = offset;
    }
    std::memcpy(dst + static_cast<size_t>(target) * elem, src + i * elem, elem);
  }
}

}  // namespace

LOOM_CPU_KERNEL("MaxUnpool", 9, max_unpool_kernel, nullptr);

}  // namespace loom::cpu
