// DeformConv of the cpu device: with zero offsets and no mask it is a plain convolution;
// fractional offsets sample bilinearly with zeros outside the image; the mask scales each tap
// and the bias is added; offset groups pick their channels' offsets; malformed shapes fail with
// a message.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

struct Case {
  std::vector<int64_t> x_dims;
  std::vector<float> x;
  std::vector<int64_t> w_dims;
  std::vector<float> w;
  std::vector<int64_t> offset_dims;
  std::vector<float> offset;
  std::vector<float> bias = {};
  std::vector<int64_t> mask_dims = {};
  std::vector<float> mask = {};
  int64_t offset_group = 1;
};

std::vector<float> deform_conv(const Case& c) {
  KernelHarness h("DeformConv", 22);
  h.input(make_filled<float>(c.x_dims, c.x));
  h.input(make_filled<float>(c.w_dims, c.w));
  h.input(make_filled<float>(c.offset_dims, c.offset));
  if (!c.bias.empty())
    h.input(make_filled<float>({static_cast<int64_t>(c.bias.size())}, c.bias));
  else if (!c.mask.empty())
    h.omitted_input();
  if (!c.mask.empty()) h.input(make_filled<float>(c.mask_dims, c.mask));
  if (c.offset_group != 1) h.attr_int("offset_group", c.offset_group);
  return values_of<float>(h.run(1)[0]);
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
}

TEST(DeformConv, ZeroOffsetsAreAPlainConvolution) {
  const Case c{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 2, 2}, {1, 1, 1, 1},
               {1, 8, 2, 2}, std::vector<float>(32, 0.f)};
  expect_near(deform_conv(c), {12, 16, 24, 28});
}

TEST(DeformConv, FractionalOffsetsSampleBilinearlyWithZerosOutside) {
  // A 1x1 kernel moved by (+0.5, +0.5) at every output pixel of a 2x2 image.
  Case c{{1, 1, 2, 2}, {1, 2, 3, 4}, {1, 1, 1, 1}, {1}, {1, 2, 2, 2}, {}};
  c.offset = {0.5f, 0.5f, 0.5f, 0.5f,   // row shifts of the four output pixels
              0.5f, 0.5f, 0.5f, 0.5f};  // column shifts
  // (0.5, 0.5) is the mean of all four; past the last row or column the missing neighbours
  // count as 0.
  expect_near(deform_conv(c), {2.5f, (2 + 4) * 0.25f, (3 + 4) * 0.25f, 4 * 0.25f});
}

TEST(DeformConv, MaskScalesEachTapAndTheBiasIsAdded) {
  Case c{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 2, 2}, {1, 1, 1, 1},
         {1, 8, 2, 2}, std::vector<float>(32, 0.f)};
  c.bias = {10};
  c.mask_dims = {1, 4, 2, 2};
  c.mask.assign(16, 0.f);
  for (int p = 0; p < 4; ++p) c.mask[static_cast<size_t>(p)] = 1.f;  // only the first tap
  expect_near(deform_conv(c), {11, 12, 14, 15});
}

TEST(DeformConv, EachOffsetGroupMovesItsOwnChannels) {
  // Two channels, two offset groups: channel 0 stays, channel 1 reads one column to the right.
  Case c{{1, 2, 1, 2}, {1, 2, 30, 40}, {1, 2, 1, 1}, {1, 1}, {1, 4, 1, 2}, {}};
  c.offset = {0, 0, 0, 0,   // group 0: rows, columns
              0, 0, 1, 1};  // group 1: rows 0, columns +1
  c.offset_group = 2;
  expect_near(deform_conv(c), {1 + 40, 2 + 0});
}

TEST(DeformConv, MalformedShapesFailWithAMessage) {
  const Case good{{1, 1, 3, 3}, std::vector<float>(9, 1.f),
                  {1, 1, 2, 2}, std::vector<float>(4, 1.f),
                  {1, 8, 2, 2}, std::vector<float>(32, 0.f)};
  auto message = [](const Case& c) {
    try {
      deform_conv(c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Case bad_offset = good;
  bad_offset.offset_dims = {1, 6, 2, 2};
  bad_offset.offset.resize(24);
  EXPECT_NE(message(bad_offset).find("offset [1, 6, 2, 2] must be [1, 8, 2, 2]"), std::string::npos)
      << message(bad_offset);
  Case bad_weights = good;
  bad_weights.w_dims = {1, 2, 2, 2};
  bad_weights.w.resize(8);
  EXPECT_NE(message(bad_weights).find("W [1, 2, 2, 2]"), std::string::npos) << message(bad_weights);
  Case one_d{{1, 1, 3}, {1, 2, 3}, {1, 1, 2}, {1, 1}, {1, 2, 2}, {0, 0, 0, 0}};
  EXPECT_NE(message(one_d).find("2-D images"), std::string::npos) << message(one_d);
}

}  // namespace
}  // namespace loom::cpu
