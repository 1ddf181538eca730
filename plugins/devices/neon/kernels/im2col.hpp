// im2col for the general convolution: unrolls `channels` input planes into the GEMM operand
// B[(c * kh + ky) * kw + kx][oy * ow + ox] (zero where the window reads padding), so the
// convolution of one group is a single packed GEMM with the weights.
#pragma once

#include <cstddef>

#include "kernels/window.hpp"

namespace loom::neon {

// Rows [row_begin, row_end) of the im2col matrix of `in` (channels x ih x iw) into `col`
// (rows x oh*ow). Rows are independent, so callers split them over threads.
void im2col_rows(const float* in, const Window2d& g, float* col, size_t row_begin, size_t row_end);

}  // namespace loom::neon
