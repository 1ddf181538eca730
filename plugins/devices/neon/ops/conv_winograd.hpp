// The Winograd F(2x2, 3x3) path of Conv (kernels/winograd.hpp): 3x3 kernels, stride 1, no
// dilation, any pads and groups. The weights are transformed and packed once at compile time
// (16 packed GEMM operands per group, fp32 or fp16 like the other GEMM-based convolutions);
// each run transforms the input tiles, does 16 packed GEMMs and transforms the results back.
// Tiles are processed in chunks so the scratch stays bounded for any image size.
#pragma once

#include <cstdint>

#include "kernels/window.hpp"
#include "ops/gemm_driver.hpp"

namespace loom::neon {

class WinogradConv {
 public:
  // Worth it (and exact enough) for 3x3 / stride 1 / dilation 1 with at least this many input
  // and output channels per group; thinner convolutions spend more in the transforms than they
  // save in the GEMM.
  static constexpr int64_t kMinChannels = 4;
  static bool applies(const WindowAttrs& attrs, int64_t cin_per_group, int64_t cout_per_group);

  // weights: [cout][cin_per_group][3][3].
  WinogradConv(const float* weights, int64_t cout, int64_t cin_per_group, int64_t group, bool fp16);

  // y[n][cout][oh][ow] = conv(x[n][cin_per_group * group][ih][iw]) + bias (bias may be null).
  void run(const float* x, int64_t n, const Window2d& g, const float* bias, float* y,
           const Runtime& rt) const;

 private:
  template <typename T>
  void run_as(const T* packed, const float* x, int64_t n, const Window2d& g, const float* bias,
              float* y, const Runtime& rt) const;

  size_t cout_per_group_ = 0, cin_per_group_ = 0, group_ = 1;
  size_t matrix_stride_ = 0;  // packed elements of one U[xi]
  PackedWeights packed_;      // U[group][xi], packed as GEMM A operands
};

}  // namespace loom::neon
