// The onednn device's QuantizeLinear of a float three-channel image into channels-last int8/uint8
// (quantize_image.cpp), byte for byte against the cpu device's arithmetic: x / scale in float,
// NaN as 0, round half to even, plus the zero point, saturated.
#include "quantize_image.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace loom::onednn {
namespace {

int32_t reference(float x, float scale, int32_t zero, bool is_signed) {
  float v = x / scale;
  double r = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v));
  r += zero;
  return static_cast<int32_t>(std::clamp(r, is_signed ? -128.0 : 0.0, is_signed ? 127.0 : 255.0));
}

void check(int64_t images, int64_t pixels, float scale, int32_t zero, bool is_signed) {
  SCOPED_TRACE(testing::Message() << images << " images of " << pixels << " pixels, scale " << scale
                                  << ", zero " << zero << (is_signed ? ", int8" : ""));
  std::mt19937 rng(static_cast<uint32_t>(pixels));
  std::uniform_real_distribution<float> wide(-200.f * scale, 200.f * scale);
  std::uniform_int_distribution<int> steps(-300, 300);
  std::vector<float> x(static_cast<size_t>(images * 3 * pixels));
  for (size_t i = 0; i < x.size(); ++i) {
    switch (i % 7) {
      case 0:  // exact ties k + 0.5 (scale is a power of two here or the tie is inexact)
        x[i] = (static_cast<float>(steps(rng)) + 0.5f) * scale;
        break;
      case 1:
        x[i] = static_cast<float>(steps(rng)) * scale;
        break;
      default:
        x[i] = wide(rng);
    }
  }
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            1e30f,
                            -1e30f,
                            0.f,
                            -0.f};
  for (size_t k = 0; k < std::size(specials) && 5 * k < x.size(); ++k) x[5 * k] = specials[k];
  std::vector<uint8_t> q(x.size(), 0xAB);
  quantize_image(x.data(), q.data(), images, pixels, scale, zero, is_signed);
  int64_t bad = 0;
  for (int64_t n = 0; n < images; ++n)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < 3; ++c) {
        const float in = x[static_cast<size_t>((n * 3 + c) * pixels + p)];
        const uint8_t got = q[static_cast<size_t>((n * pixels + p) * 3 + c)];
        const int32_t want = reference(in, scale, zero, is_signed);
        const int32_t value = is_signed ? static_cast<int8_t>(got) : got;
        if (value != want && bad++ < 5)
          ADD_FAILURE() << "image " << n << " pixel " << p << " channel " << c << ": x " << in
                        << " gave " << value << ", want " << want;
      }
  EXPECT_EQ(bad, 0);
}

TEST(OnednnQuantizeImage, MatchesTheCpuArithmetic) {
  if (!quantize_image_supported(3)) GTEST_SKIP() << "no AVX-512 BW: oneDNN's reorder runs instead";
  for (int64_t pixels : {1, 15, 16, 17, 47, 100, 9216 + 7})  // the last one in parallel
    for (bool is_signed : {false, true}) {
      check(2, pixels, 0.0078125f, is_signed ? -3 : 128, is_signed);
      check(1, pixels, 0.0173f, is_signed ? 0 : 7, is_signed);
    }
}

TEST(OnednnQuantizeImage, OnlyThreeChannels) {
  EXPECT_FALSE(quantize_image_supported(1));
  EXPECT_FALSE(quantize_image_supported(4));
}

}  // namespace
}  // namespace loom::onednn
