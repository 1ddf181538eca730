// Pad of the cpu device: every mode, negative pads, the attribute form and the axes input.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

std::vector<float> pad1d(const std::string& mode, std::vector<float> in, int64_t before,
                         int64_t after, int opset = 13) {
  KernelHarness h("Pad", opset);
  const int64_t n = static_cast<int64_t>(in.size());
  h.input(make_filled<float>({n}, in));
  h.input(make_filled<int64_t>({2}, {before, after}));
  h.input(make_filled<float>({}, {-1}));
  h.attr_string("mode", mode);
  return values_of<float>(h.run(1)[0]);
}

TEST(Pad, ConstantWithValue) {
  EXPECT_EQ(pad1d("constant", {1, 2, 3}, 2, 1), (std::vector<float>{-1, -1, 1, 2, 3, -1}));
}

TEST(Pad, ReflectExcludesTheEdge) {
  EXPECT_EQ(pad1d("reflect", {1, 2, 3}, 2, 2), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  // Pads longer than the axis keep reflecting (numpy semantics).
  EXPECT_EQ(pad1d("reflect", {1, 2}, 3, 0), (std::vector<float>{2, 1, 2, 1, 2}));
}

TEST(Pad, EdgeAndWrap) {
  EXPECT_EQ(pad1d("edge", {1, 2, 3}, 2, 1), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(pad1d("wrap", {1, 2, 3}, 2, 1, 19), (std::vector<float>{2, 3, 1, 2, 3, 1}));
}

TEST(Pad, NegativePadsCrop) {
  EXPECT_EQ(pad1d("constant", {1, 2, 3, 4}, -1, 1), (std::vector<float>{2, 3, 4, -1}));
}

TEST(Pad, ReflectTwoDimensional) {
  KernelHarness h("Pad", 11);
  h.input(make_filled<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  h.input(make_filled<int64_t>({4}, {1, 1, 0, 0}));  // one row above, one column left
  h.attr_string("mode", "reflect");
  auto out = h.run(1);
  EXPECT_EQ(out[0].view.dims[0], 3);
  EXPECT_EQ(out[0].view.dims[1], 4);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{5, 4, 5, 6, 2, 1, 2, 3, 5, 4, 5, 6}));
}

TEST(Pad, AttributeFormOfOpset2) {
  KernelHarness h("Pad", 2);
  h.input(make_filled<int32_t>({2}, {7, 8}));
  h.attr_ints("pads", {1, 0});
  h.attr_float("value", 3.0f);
  EXPECT_EQ(values_of<int32_t>(h.run(1)[0]), (std::vector<int32_t>{3, 7, 8}));
}

TEST(Pad, AxesInputOfOpset18) {
  KernelHarness h("Pad", 18);
  h.input(make_filled<float>({2, 2}, {1, 2, 3, 4}));
  h.input(make_filled<int64_t>({2}, {0, 1}));
  h.omitted_input();
  h.input(make_filled<int64_t>({1}, {-1}));
  auto out = h.run(1);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 2, 0, 3, 4, 0}));
}

TEST(Pad, ReflectOnEmptyAxisIsAnError) {
  KernelHarness h("Pad", 13);
  h.input(make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{0}));
  h.input(make_filled<int64_t>({2}, {1, 1}));
  h.attr_string("mode", "reflect");
  EXPECT_THROW(h.run(1), Error);
}

}  // namespace
}  // namespace loom::cpu
