// A 2-D max pool over int8/uint8 channels-last (NHWC) tensors: the device's own kernel. Each
// output pixel is the byte-wise maximum of the input pixels its window covers (at most kh * kw
// rows of `channels` bytes), a handful of vector instructions per pixel; oneDNN 2.6's jit_int
// pooling took 33 us for ResNet-50's 3x3/2 pool over 112x112x64 uint8 and 11-19 us for
// blazeface_like_int8's 2x2/2 pools (measurements in docs/onednn-device.md).
#pragma once

#include <cstdint>

namespace loom::onednn {

struct MaxPoolInt8Shape {
  int64_t batch = 1, height = 0, width = 0, channels = 0;
  int64_t out_height = 0, out_width = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;  // ONNX's: 1 = dense
  int64_t pad_top = 0, pad_left = 0;       // the bottom/right pads follow from the output extent
  bool is_signed = false;                  // int8 (else uint8)
};

// dst[n][oy][ox][c] = max over the window's positions inside the input of src[n][iy][ix][c]
// (positions in the padding do not count; a window wholly in padding gives the type's lowest
// value). Rows of the output are split across the OpenMP team.
void max_pool_int8(const MaxPoolInt8Shape& shape, const void* src, void* dst);

}  // namespace loom::onednn
