// ReverseSequence: reverses the first sequence_lens[b] elements along time_axis for each
// batch entry b along batch_axis; the rest is copied unchanged.
#include "data_movement.hpp"

namespace loom::cpu {
namespace {

void reverse_sequence_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const std::vector<int64_t> lens = read_int_values(ctx, ctx.required_input(1), "sequence_lens");
  if (in.rank < 2) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": input must have rank >= 2");
  const int64_t batch_axis = normalize_axis(ctx, ctx.attrs().get_int("batch_axis", 1), in.rank);
  const int64_t time_axis = normalize_axis(ctx, ctx.attrs().get_int("time_axis", 0), in.rank);
  if (batch_axis == time_axis || batch_axis > 1 || time_axis > 1)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": batch_axis and time_axis must be 0 and 1 in some order");
  const int64_t batch = in.dims[batch_axis], time = in.dims[time_axis];
  if (static_cast<int64_t>(lens.size()) != batch)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": sequence_lens has " +
                                          std::to_string(lens.size()) + " entries for batch " +
                                          std::to_string(batch));
  for (int64_t l : lens)
    if (l < 0 || l > time)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": sequence length " + std::to_string(l) +
                                            " is outside [0, " + std::to_string(time) + "]");
  const size_t esize = element_size(ctx, in.dtype);
  const size_t inner = static_cast<size_t>(product(sdk::shape_of(in), 2)) * esize;
  const std::vector<int64_t> strides = strides_of(sdk::shape_of(in));
  OutputBuffer out(ctx, 0, in.dtype, sdk::shape_of(in));
  const auto* src = static_cast<const unsigned char*>(in.data);
  auto* dst = static_cast<unsigned char*>(out.data());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < time; ++t) {
      const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
      const size_t o =
          static_cast<size_t>(b * strides[batch_axis] + t * strides[time_axis]) * esize;
      const size_t i =
          static_cast<size_t>(b * strides[batch_axis] + from * strides[time_axis]) * esize;
      std::memcpy(dst + o, src + i, inner);
    }
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("ReverseSequence", 10, reverse_sequence_kernel, nullptr);

}  // namespace loom::cpu
