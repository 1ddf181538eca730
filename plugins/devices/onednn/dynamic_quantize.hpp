// DynamicQuantizeLinear's arithmetic for the onednn device (ops_quant.cpp emits the step).
#pragma once
#include <cstdint>

namespace loom::onednn {

// x (float, `count` elements) -> uint8 q, scale and zero point exactly as the cpu device computes
// them (kernels/quantize.cpp): the range [min(0, x), max(0, x)] over 255 steps, NaN skipped,
// x / scale rounded half to even, plus the zero point, saturated. Runs on the calling thread's
// OpenMP team (oneDNN's) when the tensor is large enough to pay for it.
void dynamic_quantize(const float* xs, int64_t count, uint8_t* q, float& scale, uint8_t& zero);

}  // namespace loom::onednn
