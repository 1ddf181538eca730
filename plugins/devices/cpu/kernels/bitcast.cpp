// BitCast (26): reinterprets each element's bits as another type of the same bit width,
// shape unchanged. Only types the device stores at their full width qualify: the 4- and 2-bit
// types are held one element per byte (their bits are not the storage bits) and are refused.
// Bytes becoming bool must be 0 or 1, the only values a bool element may hold.
#include <cstring>
#include <loom/narrow_types.hpp>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

// Bits of one element, 0 for types BitCast cannot reinterpret here: the sub-byte types are
// stored one element per byte, so their storage bits are not the element's bits.
int bit_width(loom_dtype_t t) {
  const int bits = sdk::narrow::element_bits(t);
  return bits < 8 ? 0 : bits;
}

void bitcast_kernel(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (!ctx.attrs().has("to"))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'to' is required");
  const int64_t to_code = ctx.attrs().get_int("to", 0);
  const auto to = static_cast<loom_dtype_t>(to_code);
  const int from_bits = bit_width(x.dtype);
  const int to_bits = to_code > 0 && to_code <= LOOM_DTYPE_FLOAT6E3M2 ? bit_width(to) : 0;
  if (from_bits == 0 || to_bits == 0)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": cannot reinterpret element type " +
                                     std::to_string(x.dtype) + " as " + std::to_string(to_code) +
                                     " (string and sub-byte types are not bit-castable here)");
  if (from_bits != to_bits)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": element types of " + std::to_string(from_bits) +
                                       " and " + std::to_string(to_bits) + " bits differ in width");
  // Both sizes come from the device's own table, so a type it does not hold fails here.
  const size_t size = element_size(ctx, x.dtype);
  if (element_size(ctx, to) != size)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": element storage sizes differ");
  const size_t bytes = static_cast<size_t>(sdk::element_count(x)) * size;
  if (to == LOOM_DTYPE_BOOL) {
    const auto* p = static_cast<const uint8_t*>(x.data);
    for (size_t i = 0; i < bytes; ++i)
      if (p[i] > 1)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": byte " + std::to_string(p[i]) +
                                              " at element " + std::to_string(i) +
                                              " is not a bool (0 or 1)");
  }
  loom_tensor_t& y = ctx.allocate_output(0, to, sdk::shape_of(x));
  // Host memory is little endian on every target the device builds for, as ONNX requires.
  if (bytes) std::memcpy(y.data, x.data, bytes);
}

}  // namespace

LOOM_CPU_KERNEL("BitCast", 26, bitcast_kernel, nullptr);

}  // namespace loom::cpu
