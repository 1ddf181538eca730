// The simplest ai.onnx.ml operators (opset 1):
//   Binarizer(X): 1 where X > threshold, else 0, in X's type (NaN gives 0).
//   ArrayFeatureExtractor(X, Y): X's elements at the int64 indices Y along its last axis;
//   the result keeps X's leading axes, its last one has Y's element count (a 1-D X gives
//   [1, count], as the ONNX reference and onnxruntime do). Every index must be inside the axis.
#include <cstring>

#include "data_movement.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

void binarizer(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const double threshold = ctx.attrs().get_float("threshold", 0.f);
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, misc::dims_of(x));
  dispatch<kFloats | kSignedInts>(x.dtype, where, [&]<typename T>() {
    const T* in = sdk::data_of<const T>(x);
    T* out = sdk::data_of<T>(y);
    const auto count = static_cast<size_t>(sdk::element_count(x));
    for (size_t i = 0; i < count; ++i)
      out[i] = convert<T>(convert<double>(in[i]) > threshold ? 1.0 : 0.0);
  });
}

void array_feature_extractor(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& indices = ctx.required_input(1);
  if (x.rank < 1)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": X must have at least one axis, got a scalar");
  if (indices.dtype != LOOM_DTYPE_INT64)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": Y (the indices) must be int64, got " + sdk::dtype_name(indices.dtype));
  if (x.dtype == LOOM_DTYPE_STRING)
    fail(LOOM_ERROR_UNSUPPORTED, where + ": string tensors are not supported (numbers only)");
  const int64_t last = x.dims[x.rank - 1];
  const std::vector<int64_t> index = misc::read_ints(indices, where + " Y");
  for (int64_t i : index)
    if (i < 0 || i >= last)
      fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": index " + std::to_string(i) +
                                            " is outside X's last axis of " + std::to_string(last));
  std::vector<int64_t> out_dims = misc::dims_of(x);
  if (x.rank == 1) out_dims.insert(out_dims.begin(), 1);
  out_dims.back() = static_cast<int64_t>(index.size());
  loom_tensor_t& y = ctx.allocate_output(0, x.dtype, out_dims);
  const int64_t rows = last == 0 ? 0 : static_cast<int64_t>(sdk::element_count(x)) / last;
  const size_t width = sdk::dtype_size(x.dtype);
  const auto* in = static_cast<const unsigned char*>(x.data);
  auto* out = static_cast<unsigned char*>(y.data);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < index.size(); ++k)
      std::memcpy(out + (static_cast<size_t>(r) * index.size() + k) * width,
                  in + (static_cast<size_t>(r * last + index[k])) * width, width);
}

}  // namespace

LOOM_CPU_KERNEL_DOMAIN("ai.onnx.ml", "Binarizer", 1, binarizer, nullptr);
LOOM_CPU_KERNEL_DOMAIN("ai.onnx.ml", "ArrayFeatureExtractor", 1, array_feature_extractor, nullptr);

}  // namespace loom::cpu
