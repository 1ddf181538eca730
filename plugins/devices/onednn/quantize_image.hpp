// QuantizeLinear of a float three-channel image into the channels-last int8/uint8 tensor that
// oneDNN's int8 convolutions read (ops_quant.cpp emits the step).
#pragma once
#include <cstdint>

namespace loom::onednn {

// Whether quantize_image runs on this CPU (AVX-512 BW) for `channels`; where not, the caller
// keeps oneDNN's reorder, which does the same in 0.09 ms for ResNet-50's 1x3x224x224 input.
bool quantize_image_supported(int64_t channels);

// x [images, 3, pixels] float -> q [images, pixels, 3] (int8 when `is_signed`, else uint8):
// saturate(round_half_even(x / scale) + zero), NaN as 0 before the zero point, exactly as the
// cpu device computes QuantizeLinear. Runs on the calling thread's OpenMP team (oneDNN's) when
// the image is large enough to pay for it.
void quantize_image(const float* x, void* q, int64_t images, int64_t pixels, float scale,
                    int32_t zero, bool is_signed);

}  // namespace loom::onednn
