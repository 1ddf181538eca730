// The onednn device's 3x3 depthwise kernel (plugins/devices/onednn/depthwise3x3.hpp), each
// variant this CPU runs, against a double-precision convolution: widths around its 16-output
// tiles and on both sides of its rows/channel-blocks split, strides 1 and 2, every pad of 0 or
// 1 (the bottom/right ones set by the output extent), batches, 1 to 3 threads, and clamps
// (none, Relu, Relu6) with NaN passing through.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "depthwise3x3.hpp"

namespace loom::onednn {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  int64_t batch, blocks, height, width;
  int stride, pad_top, pad_left, pad_bottom, pad_right;
};

// Index of (n, channel, row, col) in nChw16c.
int64_t at(const Depthwise3x3Shape& s, int64_t n, int64_t c, int64_t h, int64_t w, bool out) {
  int64_t height = out ? s.out_height : s.height, width = out ? s.out_width : s.width;
  return (((n * s.blocks + c / 16) * height + h) * width + w) * 16 + c % 16;
}

void check(const Case& c, Depthwise3x3Kernel kernel, float lo, float hi, int threads) {
  Depthwise3x3Shape s;
  s.batch = c.batch;
  s.blocks = c.blocks;
  s.height = c.height;
  s.width = c.width;
  s.stride = c.stride;
  s.pad_top = c.pad_top;
  s.pad_left = c.pad_left;
  s.out_height = (c.height + c.pad_top + c.pad_bottom - 3) / c.stride + 1;
  s.out_width = (c.width + c.pad_left + c.pad_right - 3) / c.stride + 1;
  const int64_t channels = c.blocks * 16;
  std::mt19937 rng(static_cast<uint32_t>(c.height * 131 + c.width * 7 + c.stride));
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> src(c.batch * channels * c.height * c.width), weights(channels * 9),
      bias(channels);
  for (float& v : src) v = dist(rng);
  for (float& v : weights) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  // A NaN in the middle of channel 3 of the first image reaches the outputs that read it.
  const int64_t nan_row = c.height / 2, nan_col = c.width / 2;
  src[at(s, 0, 3, nan_row, nan_col, false)] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> packed(channels * 9, NAN);
  pack_depthwise3x3_weights(weights.data(), channels, packed.data());
  std::vector<float> dst(c.batch * channels * s.out_height * s.out_width, -12345.f);
  omp_set_num_threads(threads);
  depthwise3x3(s, src.data(), packed.data(), bias.data(), lo, hi, dst.data(), kernel);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t oh = 0; oh < s.out_height; ++oh)
        for (int64_t ow = 0; ow < s.out_width; ++ow) {
          double acc = bias[ch];
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              int64_t ih = oh * c.stride - c.pad_top + kh, iw = ow * c.stride - c.pad_left + kw;
              if (ih < 0 || ih >= c.height || iw < 0 || iw >= c.width) continue;
              acc += double(src[at(s, n, ch, ih, iw, false)]) * weights[ch * 9 + kh * 3 + kw];
            }
          float got = dst[at(s, n, ch, oh, ow, true)];
          if (std::isnan(acc)) {
            EXPECT_TRUE(std::isnan(got))
                << "NaN lost at " << n << "," << ch << "," << oh << "," << ow;
            continue;
          }
          double want = std::min<double>(hi, std::max<double>(lo, acc));
          ASSERT_NEAR(got, want, 1e-5 * (1 + std::fabs(want)))
              << "at image " << n << " channel " << ch << " row " << oh << " col " << ow;
        }
}

TEST(OnednnDepthwise3x3Kernel, EveryVariantMatchesADoubleConvolution) {
  const std::vector<Case> cases = {
      // MobileNetV2's layers (56 = 4 tiles of 14, 112 = 7 of 16), stride 1 and 2.
      {1, 2, 56, 56, 1, 1, 1, 1, 1},
      {1, 1, 112, 112, 2, 1, 1, 1, 1},
      {1, 3, 14, 14, 1, 1, 1, 1, 1},
      {1, 2, 7, 7, 1, 1, 1, 1, 1},
      {1, 2, 14, 14, 2, 1, 1, 1, 1},
      // Widths around the 16-output tiles; odd sizes with stride 2 (right pad 1 or 0 used).
      {2, 2, 5, 15, 1, 1, 1, 1, 1},
      {1, 1, 4, 16, 1, 1, 1, 1, 1},
      {1, 1, 3, 17, 1, 1, 1, 1, 1},
      {1, 2, 9, 33, 2, 1, 1, 1, 1},
      {1, 1, 6, 31, 2, 1, 1, 0, 0},
      {2, 3, 11, 13, 2, 1, 1, 1, 1},
      // Tiny images: every tap of a row in the padding but one.
      {1, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 2, 2, 2, 2, 1, 1, 1, 1},
      {1, 1, 3, 3, 1, 0, 0, 0, 0},
      // Asymmetric pads (TensorFlow's SAME puts the extra one at the end).
      {1, 1, 8, 8, 2, 0, 0, 1, 1},
      {1, 2, 10, 9, 1, 1, 0, 0, 1},
      {1, 1, 7, 12, 1, 0, 1, 1, 0},
      // Rows split across images of a batch (>= 512 pixels).
      {3, 1, 24, 24, 1, 1, 1, 1, 1},
  };
  struct Clamp {
    float lo, hi;
  };
  for (Depthwise3x3Kernel kernel : {Depthwise3x3Kernel::kAvx512, Depthwise3x3Kernel::kGeneric}) {
    if (!depthwise3x3_kernel_runs_here(kernel)) continue;
    for (const Case& c : cases)
      for (Clamp k : {Clamp{-kInf, kInf}, Clamp{0.f, kInf}, Clamp{0.f, 6.f}})
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)) + " batch " +
                       std::to_string(c.batch) + " blocks " + std::to_string(c.blocks) + " " +
                       std::to_string(c.height) + "x" + std::to_string(c.width) + " stride " +
                       std::to_string(c.stride) + " pads " + std::to_string(c.pad_top) +
                       std::to_string(c.pad_left) + std::to_string(c.pad_bottom) +
                       std::to_string(c.pad_right) + " clamp " + std::to_string(k.lo) + ".." +
                       std::to_string(k.hi) + " threads " + std::to_string(threads));
          check(c, kernel, k.lo, k.hi, threads);
        }
  }
  omp_set_num_threads(2);
}

}  // namespace
}  // namespace loom::onednn
