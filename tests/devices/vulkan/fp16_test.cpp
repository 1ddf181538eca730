// precision=f16: every kernel family with fp16 storage (inputs converted at the subgraph
// boundary, weights converted at upload, f32 arithmetic) against the f32 cpu reference device,
// with the reduced-precision tolerance of device_test_support.
#include <cmath>
#include <filesystem>

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

// Rounds to the nearest binary16 value (normal range), to predict what fp16 storage keeps.
float round_to_half(float v) {
  int exponent = 0;
  float mantissa = std::frexp(v, &exponent);  // v = mantissa * 2^exponent, |mantissa| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
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

TEST(VulkanF16, ConvPointwiseThreeByThreeDepthwiseWithBatchNormAndRelu) {
  LOOM_SKIP_WITHOUT_VULKAN();
  struct Case {
    int64_t c, k, kernel, group, stride;
  };
  for (const Case& c : {Case{32, 24, 1, 1, 1}, Case{16, 20, 3, 1, 2}, Case{24, 24, 3, 24, 1},
                        Case{3, 8, 7, 1, 2}}) {
    SCOPED_TRACE("k=" + std::to_string(c.kernel) + " group=" + std::to_string(c.group));
    ModelBuilder m;
    std::vector<int64_t> xs = {1, c.c, 14, 13};
    m.input("x", LOOM_DTYPE_FLOAT32, xs);
    m.initializer("w",
                  random_tensor(LOOM_DTYPE_FLOAT32, {c.k, c.c / c.group, c.kernel, c.kernel}, 21));
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 22));
    m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 23, 0.5, 1.5));
    m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 24));
    m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 25));
    m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 26, 0.5, 2.0));
    int64_t pad = c.kernel / 2;
    m.node("Conv", {"x", "w", "b"}, {"c"})
        .i("group", c.group)
        .ints("strides", {c.stride, c.stride})
        .ints("pads", {pad, pad, pad, pad});
    m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"});
    m.node("Relu", {"n"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, xs, 27)}});
  }
}

TEST(VulkanF16, StandaloneBatchNormalization) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 5, 6, 7});
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 31));
  m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 32));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 33));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 34, 0.5, 2.0));
  m.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"y"});
  m.output("y");
  expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 5, 6, 7}, 35)}});
}

TEST(VulkanF16, GemmAndBatchedMatMul) {
  LOOM_SKIP_WITHOUT_VULKAN();
  {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {37, 300});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {70, 300}, 41));
    m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, {70}, 42));
    m.node("Gemm", {"a", "b", "c"}, {"y"}).i("transB", 1).f("alpha", 0.5f).f("beta", 2.0f);
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {37, 300}, 43)}});
  }
  {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {2, 4, 33, 64});
    m.input("b", LOOM_DTYPE_FLOAT32, {2, 4, 64, 17});
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 33, 64}, 44)},
                               {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 64, 17}, 45)}});
  }
}

TEST(VulkanF16, Pooling) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 15, 15});
    NodeRef n = m.node(op, {"x"}, {"y"});
    if (std::string(op).rfind("Global", 0) != 0)
      n.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 15, 15}, 51)}});
  }
}

TEST(VulkanF16, UnaryAndBroadcastBinaryElementwise) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (const char* op : {"Sigmoid", "Tanh", "Erf", "Exp", "Neg", "HardSwish"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 50});
    m.node(op, {"x"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 50}, 61, -3, 3)}});
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 5}, 62, 0.5, 2.0));
    m.node(op, {"a", "b"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 63)}});
  }
}

TEST(VulkanF16, SoftmaxAndLayerNormalization) {
  LOOM_SKIP_WITHOUT_VULKAN();
  {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 4, 9, 130});
    m.node("Softmax", {"x"}, {"y"}).i("axis", -1);
    m.output("y");
    expect_f16_matches_cpu(m,
                           {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 9, 130}, 71, -4, 4)}});
  }
  {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 7, 96});
    m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {96}, 72));
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {96}, 73));
    m.node("LayerNormalization", {"x", "s", "b"}, {"y"}).i("axis", -1);
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 7, 96}, 74, -2, 3)}});
  }
}

TEST(VulkanF16, Reductions) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    ModelBuilder m(18);
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 20, 11});
    m.initializer("axes", int64_tensor({2}, {0, 2}));
    m.node(op, {"x", "axes"}, {"y"}).i("keepdims", 1);
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 20, 11}, 81)}});
  }
}

TEST(VulkanF16, MovementKernelsMoveHalves) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // Transpose, Slice (negative step), Concat, Split and Gather on fp16 tensors, an int64
  // Gather beside them (still 64-bit), a Constant node and a Reshape (buffer copy).
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 5, 7});
  m.initializer("table", random_tensor(LOOM_DTYPE_FLOAT32, {10, 6}, 91));
  m.input("ids", LOOM_DTYPE_INT64, {4});
  m.initializer("codes", int64_tensor({10}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
  m.initializer("starts", int64_tensor({1}, {-1}));
  m.initializer("ends", int64_tensor({1}, {-100}));
  m.initializer("slice_axes", int64_tensor({1}, {3}));
  m.initializer("steps", int64_tensor({1}, {-2}));
  m.initializer("shape", int64_tensor({2}, {6, -1}));
  m.node("Transpose", {"x"}, {"t"}).ints("perm", {0, 2, 3, 1});
  m.node("Slice", {"x", "starts", "ends", "slice_axes", "steps"}, {"s"});
  m.node("Concat", {"x", "s"}, {"c"}).i("axis", 3);
  m.node("Split", {"c"}, {"p0", "p1"}).i("axis", 0);
  m.node("Gather", {"table", "ids"}, {"g"}).i("axis", 0);
  m.node("Gather", {"codes", "ids"}, {"gi"}).i("axis", 0);
  m.node("Constant", {}, {"k"}).floats("value_floats", {0.25f, -1.5f, 3.0f, 0.1f, 2.0f, 7.0f});
  m.node("Add", {"g", "k"}, {"gk"});
  m.node("Reshape", {"t", "shape"}, {"r"});
  for (const char* out : {"t", "c", "p0", "p1", "gk", "gi", "r"}) m.output(out);
  expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 7}, 92)},
                             {"ids", int64_tensor({4}, {3, -1, 0, 9})}});
}

TEST(VulkanF16, ResizeNearestAndLinear) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (const char* mode : {"nearest", "linear"}) {
    SCOPED_TRACE(mode);
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 7, 9});
    m.initializer("roi", float_tensor({0}, {}));
    m.initializer("scales", float_tensor({4}, {1.0f, 1.0f, 2.0f, 1.5f}));
    m.node("Resize", {"x", "roi", "scales"}, {"y"}).s("mode", mode);
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 7, 9}, 101)}});
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
