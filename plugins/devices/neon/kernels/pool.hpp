// 2-D max and average pooling of one channel plane, and global pooling of a whole plane.
// Like the depthwise kernel, each output row is reduced one kernel tap at a time over whole
// rows (vectorised for strides 1 and 2), with a scalar path for the border columns.
#pragma once

#include <cstddef>

#include "kernels/window.hpp"

namespace loom::neon {

void max_pool_plane(const float* in, float* out, const Window2d& g);
// count_include_pad: divide by the taps inside the padded input instead of the input.
void average_pool_plane(const float* in, float* out, const Window2d& g, bool count_include_pad);

float plane_sum(const float* in, size_t n);
float plane_max(const float* in, size_t n);

}  // namespace loom::neon
