// Row-wise normalisations: Softmax over contiguous rows (and over a strided axis, vectorised
// across the inner dimension) and LayerNormalization over contiguous rows.
#pragma once

#include <cstddef>

namespace loom::neon {

// out[r][:] = softmax(in[r][:]) for rows [begin, end) of length `len` (contiguous rows).
void softmax_rows(const float* in, float* out, size_t len, size_t begin, size_t end);
// Softmax along the middle axis of an [outer, len, inner] block, for outer indices
// [begin, end): vectorised over `inner`.
void softmax_strided(const float* in, float* out, size_t len, size_t inner, size_t begin,
                     size_t end);
// y = (x - mean) / sqrt(var + epsilon) * scale + bias for rows [begin, end) of length `len`;
// scale has `len` values, bias `len` values or is null.
void layer_norm_rows(const float* in, float* out, size_t len, const float* scale, const float* bias,
                     float epsilon, size_t begin, size_t end);

}  // namespace loom::neon
