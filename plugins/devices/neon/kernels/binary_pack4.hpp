// Add/Sub/Mul/Div in NC4HW4 over one block of 4 channels: each operand is either the full
// block (one vector per pixel) or one vector for the whole block (a per-channel or scalar
// operand broadcast over the plane), so the per-channel broadcast is a plain vector loop.
#pragma once

#include <cstddef>

#include "kernels/binary.hpp"

namespace loom::neon {

// out[i] = a[i] OP b[i] for the `plane` pixels of a block; a_full / b_full: the operand has a
// vector per pixel (else `a` / `b` is the one vector of the block).
void binary_pack4_block(BinaryOp op, const float* a, bool a_full, const float* b, bool b_full,
                        float* out, size_t plane);

}  // namespace loom::neon
