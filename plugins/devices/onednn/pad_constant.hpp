// A constant-mode Pad over dense, unblocked tensors (any axis order): the device's own kernel.
// oneDNN has no pad primitive; the device used to fill the whole destination and then reorder
// the source into a sub-memory view of it: two steps and two passes over the destination. TFLite
// models pad the channel axis of channels-last residuals (BlazeFace's shortcuts, 24 -> 28
// channels), where each row is a few dozen bytes: those two steps took 3.1 us a Pad in
// blazeface_like_int8, 7% of its run. This kernel writes every destination byte once, a 64-byte
// vector at a time (AVX-512BW masked loads and stores) where the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::onednn {

struct PadConstantShape {
  // In memory order (outermost first), both dense: dst_dims[i] = before[i] + src_dims[i] +
  // after (the after pads follow from the extents).
  std::vector<int64_t> src_dims, dst_dims, before;
  size_t element_size = 4;                // 1, 2 or 4 bytes
  unsigned char value[4] = {0, 0, 0, 0};  // the fill value's bytes (element_size of them)
};

// Both kernels: the AVX-512BW one the device runs where it can, and a portable one (also the
// reference the tests compare the other with).
enum class PadConstantKernel { kAvx512, kPortable };
bool pad_constant_kernel_runs_here(PadConstantKernel kernel);

// dst = src padded with `value`. Rows (the innermost axis) are split across the OpenMP team
// when the destination is large enough to pay for waking it.
void pad_constant(const PadConstantShape& shape, const void* src, void* dst,
                  PadConstantKernel kernel = PadConstantKernel::kAvx512);

}  // namespace loom::onednn
