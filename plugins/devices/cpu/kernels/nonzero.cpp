// NonZero: the coordinates of the non-zero elements, as int64 [rank, count] in row-major
// order. A scalar is treated as shape [1] (like numpy).
#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void nonzero_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const size_t n = static_cast<size_t>(sdk::element_count(in));
  std::vector<size_t> hits;
  dispatch<kNumeric | kBool>(in.dtype, ctx, [&]<typename T>() {
    const T* p = static_cast<const T*>(in.data);
    for (size_t i = 0; i < n; ++i)
      if (convert<double>(p[i]) != 0) hits.push_back(i);
  });
  std::vector<int64_t> dims = dims_of(in);
  if (dims.empty()) dims.push_back(1);
  const size_t rank = dims.size();
  int64_t out_dims[2] = {static_cast<int64_t>(rank), static_cast<int64_t>(hits.size())};
  loom_tensor_t& out = ctx.allocate_output(0, LOOM_DTYPE_INT64, out_dims);
  int64_t* o = sdk::data_of<int64_t>(out);
  for (size_t k = 0; k < hits.size(); ++k) {
    size_t flat = hits[k];
    for (size_t d = rank; d-- > 0;) {
      o[d * hits.size() + k] = static_cast<int64_t>(flat % static_cast<size_t>(dims[d]));
      flat /= static_cast<size_t>(dims[d]);
    }
  }
}

}  // namespace

LOOM_CPU_KERNEL("NonZero", 9, nonzero_kernel, nullptr);

}  // namespace loom::cpu
