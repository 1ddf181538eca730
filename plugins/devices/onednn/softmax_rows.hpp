// Softmax and LogSoftmax over contiguous rows of f32: the last axis of a plain tensor (opset
// 13), or the trailing axes of the 2-D form before it.
//
// oneDNN 2.6's softmax takes 0.34 ms for BERT-base's [12, 128, 128] attention scores at 2
// threads (4 ms of a 122 ms run) and 0.35 ms for ViT-B/16's [12, 197, 197]; ONNX Runtime's
// takes 0.13 ms for the latter. Its kernel spends most of that between rows (three passes,
// horizontal reductions and tails on 128- and 197-wide rows). This one runs each row in three
// vector passes with an inline exp (docs/onednn-device.md, item 14).
#pragma once

#include <cstdint>

namespace loom::onednn {

// True where the vector kernel runs (x86-64 with AVX-512F); elsewhere oneDNN's stays.
bool softmax_rows_available();

// y[r][j] = exp(x[r][j] - max_r) / sum_r, or (x[r][j] - max_r) - log(sum_r) when `log`, for
// `rows` rows of `len` floats. Rows split over the calling thread's OpenMP team. A row holding
// a NaN or +inf gives NaN throughout, as the reference does; -inf gives exactly 0 (log: -inf).
void softmax_rows(const float* x, float* y, int64_t rows, int64_t len, bool log);

// Softmax of one row in place on the calling thread, for kernels that build their rows
// themselves (ops_attention.cpp); any CPU (AVX-512 where available). A row of only -inf (a query
// whose every key is masked) becomes 0 rather than NaN, as ONNX Attention specifies; a row
// holding a NaN or +inf gives NaN.
void softmax_row_inplace(float* row, int64_t len);

}  // namespace loom::onednn
