// A 3x3 depthwise convolution over channel-blocked (nChw16c) f32 tensors with its bias and a
// clamp (Relu, Relu6/Clip) applied in registers: the device's own kernel for MobileNet-style
// depthwise layers, which oneDNN 2.6's jit_dw runs 10-25% slower (per-layer timings in
// docs/onednn-device.md). AVX-512 only; the builder keeps oneDNN's primitive elsewhere.
#pragma once

#include <cstdint>

namespace loom::onednn {

inline constexpr int64_t kDepthwiseBlock = 16;  // channels per block of nChw16c

struct Depthwise3x3Shape {
  int64_t batch = 1, blocks = 0;  // blocks of 16 channels
  int64_t height = 0, width = 0, out_height = 0, out_width = 0;
  int stride = 1;                 // 1 or 2, both axes
  int pad_top = 0, pad_left = 0;  // 0 or 1; the bottom/right pads (0 or 1) follow from the
                                  // output extent
};

// The AVX-512 kernel the device runs, and a one-lane-at-a-time one the tests compare it with.
enum class Depthwise3x3Kernel { kAvx512, kGeneric };
bool depthwise3x3_kernel_runs_here(Depthwise3x3Kernel kernel);

// Packs ONNX weights [C][1][3][3] as [ceil(C/16)][3][3][16]: one vector of 16 channels per tap,
// zeros for the channels that pad the last block.
void pack_depthwise3x3_weights(const float* weights, int64_t channels, float* packed);

// dst = clamp(conv(src) + bias, lo, hi) over nChw16c tensors; NaN passes the clamp. The work
// is split across the OpenMP team the way oneDNN's 1x1 convolutions split theirs (rows on
// large images, channel blocks on small ones), so a layer between two 1x1 convolutions reads
// and writes in its own core's cache. `kernel` must run here (depthwise3x3_kernel_runs_here).
void depthwise3x3(const Depthwise3x3Shape& shape, const float* src, const float* packed_weights,
                  const float* bias, float lo, float hi, float* dst,
                  Depthwise3x3Kernel kernel = Depthwise3x3Kernel::kAvx512);

}  // namespace loom::onednn
