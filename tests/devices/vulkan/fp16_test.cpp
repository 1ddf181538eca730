// precision=f16: every kernel family with fp16 storage (inputs converted at the subgraph
// boundary, weights converted at upload, f32 arithmetic) against the f32 cpu reference device,
// with the reduced-precision tolerance of device_test_support.
#include <cmath>
#include <filesystem>

#include "fp16_storage_cases.hpp"
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

const Tolerance kF16 = reduced_precision_tolerance(LOOM_DTYPE_FLOAT16);

RunOptions on_vulkan_f16() {
  return on_vulkan("precision=f16");
}

void expect_f16_matches_cpu(const ModelBuilder& m,
                            const std::vector<std::pair<std::string, Tensor>>& inputs) {
  expect_matches_cpu(m, inputs, on_vulkan_f16(), &kF16);
}

TEST(VulkanF16, ValuesAreStoredAsHalvesBetweenKernels) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // Two exact kernels with a stored intermediate: y = |-x|. In fp16 storage x, the
  // intermediate and y hold 11 significant bits, so y is |x| rounded to half, and not |x|.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4});
  m.node("Neg", {"x"}, {"t"});
  m.node("Abs", {"t"}, {"y"});
  m.output("y");
  const std::vector<float> x = {1.0f / 3.0f, -2.71828f, 1000.123f, 6.1e-3f};
  std::filesystem::path path = m.save();
  std::vector<Tensor> half = run_model(path, {{"x", float_tensor({4}, x)}}, on_vulkan_f16());
  std::vector<Tensor> full = run_model(path, {{"x", float_tensor({4}, x)}}, on_vulkan());
  std::filesystem::remove(path);
  ASSERT_EQ(half.size(), 1u);
  ASSERT_EQ(half[0].dtype, LOOM_DTYPE_FLOAT32);  // the host side stays f32
  for (size_t i = 0; i < x.size(); ++i) {
    float expected = std::fabs(x[i]);
    EXPECT_EQ(half[0].data<float>()[i], round_to_half(expected)) << "element " << i;
    EXPECT_NE(half[0].data<float>()[i], expected) << "element " << i << " kept f32 precision";
    EXPECT_EQ(full[0].data<float>()[i], expected) << "element " << i << " (precision=f32)";
  }
}

TEST(VulkanF16, OptionFollowsTheSharedConvention) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // vulkan.precision=f16 is for this device only; another device's prefixed key is ignored.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1});
  m.node("Neg", {"x"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  std::vector<Tensor> out = run_model(path, {{"x", float_tensor({1}, {1.0f / 3.0f})}},
                                      on_vulkan("vulkan.precision=f16;onednn.winograd=off"));
  std::filesystem::remove(path);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data<float>()[0], -round_to_half(1.0f / 3.0f));
}

TEST(VulkanF16, EveryKernelFamily) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (const ModelCase& c : fp16_storage_cases()) {
    SCOPED_TRACE(c.name);
    expect_f16_matches_cpu(c.model, c.inputs);
  }
}

TEST(VulkanF16, GraphInputPassedThroughToAnOutput) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // An input that is also an output, and read by a kernel: converted in and out again.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {5, 6});
  m.node("Identity", {"x"}, {"i"});
  m.node("Relu", {"x"}, {"y"});
  m.output("i");
  m.output("y");
  expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {5, 6}, 111)}});
}

}  // namespace
}  // namespace loom::device_testing
