// precision=f16: every kernel family in the fp16-storage build of the program (float tensors
// stored as halves, inputs converted at the subgraph boundary, weights rounded at upload, f32
// arithmetic) against the f32 cpu reference device, with the reduced-precision tolerance that
// device_test_support writes down once for every device.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

const Tolerance kF16 = reduced_precision_tolerance(LOOM_DTYPE_FLOAT16);

RunOptions on_opencl_f16(const std::string& extra = "") {
  RunOptions options = on_opencl();
  options.device_options = "precision=f16" + (extra.empty() ? "" : ";" + extra);
  return options;
}

// Both ways of converting (f16_convert=builtin: vload_half/vstore_half_rte, the default on
// GPUs; bits: integer arithmetic, the default on CPU drivers) must give the same halves.
const char* const kConversions[] = {"f16_convert=builtin", "f16_convert=bits"};

void expect_f16_matches_cpu(const ModelBuilder& m,
                            const std::vector<std::pair<std::string, Tensor>>& inputs,
                            const std::string& extra = "") {
  for (const char* conversion : kConversions) {
    SCOPED_TRACE(conversion);
    expect_matches_cpu(m, inputs,
                       on_opencl_f16(extra.empty() ? conversion : extra + ";" + conversion), &kF16);
  }
}

// Rounds to the nearest binary16 value (normal range), to predict what fp16 storage keeps.
float round_to_half(float v) {
  int exponent = 0;
  float mantissa = std::frexp(v, &exponent);  // v = mantissa * 2^exponent, |mantissa| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
}

// A float tensor whose values are all exact halves, for ops whose results jump (comparisons,
// casts to integers): rounding the input to fp16 storage then changes nothing.
Tensor exact_halves(Tensor t) {
  float* v = reinterpret_cast<float*>(t.bytes.data());
  for (size_t i = 0; i < t.bytes.size() / sizeof(float); ++i) v[i] = round_to_half(v[i]);
  return t;
}

TEST(OpenclF16, ValuesAreStoredAsHalvesBetweenKernels) {
  LOOM_REQUIRE_OPENCL();
  // Two exact kernels with a stored intermediate: y = |-x|. In fp16 storage x, the
  // intermediate and y hold 11 significant bits, so y is |x| rounded to half, and not |x|.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4});
  m.node("Neg", {"x"}, {"t"});
  m.node("Abs", {"t"}, {"y"});
  m.output("y");
  const std::vector<float> x = {1.0f / 3.0f, -2.71828f, 1000.123f, 6.1e-3f};
  std::filesystem::path path = m.save();
  std::vector<Tensor> full = run_model(path, {{"x", float_tensor({4}, x)}}, on_opencl());
  for (const char* conversion : kConversions) {
    SCOPED_TRACE(conversion);
    std::vector<Tensor> half =
        run_model(path, {{"x", float_tensor({4}, x)}}, on_opencl_f16(conversion));
    ASSERT_EQ(half.size(), 1u);
    ASSERT_EQ(half[0].dtype, LOOM_DTYPE_FLOAT32);  // the host side stays f32
    for (size_t i = 0; i < x.size(); ++i) {
      float expected = std::fabs(x[i]);
      EXPECT_EQ(half[0].data<float>()[i], round_to_half(expected)) << "element " << i;
      EXPECT_NE(half[0].data<float>()[i], expected) << "element " << i << " kept f32 precision";
      EXPECT_EQ(full[0].data<float>()[i], expected) << "element " << i << " (precision=f32)";
    }
  }
  std::filesystem::remove(path);
}

TEST(OpenclF16, RoundsToNearestEvenAndKeepsInfinities) {
  LOOM_REQUIRE_OPENCL();
  // 1 + 2^-11 lies halfway between two halves: nearest-even gives 1. 1 + 3*2^-11 rounds up to
  // 1 + 2^-9. 70000 exceeds the half range: +inf. A weight goes through the host conversion.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4});
  m.initializer("w", float_tensor({4}, {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.0f, -0.0f}));
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  for (const char* conversion : kConversions) {
    SCOPED_TRACE(conversion);
    std::vector<Tensor> out = run_model(path, {{"x", float_tensor({4}, {0.0f, 0.0f, 0.0f, 0.0f})}},
                                        on_opencl_f16(conversion));
    ASSERT_EQ(out.size(), 1u);
    const float* y = out[0].data<float>();
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 1.0f + 0x1p-9f);
    EXPECT_TRUE(std::isinf(y[2]) && y[2] > 0) << y[2];
    EXPECT_EQ(y[3], 0.0f);
  }
  std::filesystem::remove(path);
}

TEST(OpenclF16, EdgeValuesConvertAlikeBothWays) {
  LOOM_REQUIRE_OPENCL();
  // Subnormal halves (steps of 2^-24) with their halfway cases, the top of the half range
  // (65519 rounds down, 65520 up to inf), infinities, NaN and -0, through an input conversion,
  // a stored intermediate and an output conversion. Both conversions must agree bit for bit,
  // and with the expected halves.
  const float step = 0x1p-24f;
  const std::vector<float> x = {3 * step,     2.5f * step, 3.5f * step,    0.5f * step,
                                0.75f * step, 1023 * step, 1023.5f * step, 0x1p-14f,
                                65519.0f,     65520.0f,    -65504.0f,      INFINITY,
                                -INFINITY,    NAN,         -0.0f,          1e-30f};
  const std::vector<float> expected = {
      3 * step, 2 * step, 4 * step,  0.0f,     step,      1023 * step, 0x1p-14f, 0x1p-14f,
      65504.0f, INFINITY, -65504.0f, INFINITY, -INFINITY, NAN,         -0.0f,    0.0f};
  ModelBuilder m;
  const int64_t n = static_cast<int64_t>(x.size());
  m.input("x", LOOM_DTYPE_FLOAT32, {n});
  m.node("Neg", {"x"}, {"t"});
  m.node("Neg", {"t"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  std::vector<std::vector<uint32_t>> bits;
  for (const char* conversion : kConversions) {
    SCOPED_TRACE(conversion);
    std::vector<Tensor> out =
        run_model(path, {{"x", float_tensor({n}, x)}}, on_opencl_f16(conversion));
    ASSERT_EQ(out.size(), 1u);
    const float* y = out[0].data<float>();
    std::vector<uint32_t>& b = bits.emplace_back(x.size());
    std::memcpy(b.data(), y, x.size() * sizeof(float));
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << "element " << i << ": " << y[i];
      } else {
        EXPECT_EQ(y[i], expected[i]) << "element " << i << " (" << x[i] << ")";
        EXPECT_EQ(std::signbit(y[i]), std::signbit(expected[i])) << "element " << i;
      }
    }
  }
  std::filesystem::remove(path);
  ASSERT_EQ(bits.size(), 2u);
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isnan(expected[i])) {
      EXPECT_EQ(bits[0][i], bits[1][i]) << "element " << i;
    }
}

TEST(OpenclF16, PrecisionOptionsFollowTheSharedConvention) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1});
  m.node("Neg", {"x"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  auto run_with = [&](const std::string& options) {
    RunOptions o = on_opencl();
    o.device_options = options;
    return run_model(path, {{"x", float_tensor({1}, {1.0f / 3.0f})}}, o)[0].data<float>()[0];
  };
  // opencl.KEY is for this device; another device's prefixed key is left out.
  EXPECT_EQ(run_with("opencl.precision=f16;vulkan.pipeline_cache=0"), -round_to_half(1.0f / 3.0f));
  EXPECT_EQ(run_with("vulkan.precision=f16"), -1.0f / 3.0f);
  // bf16 has no kernels here: warned, computed in f32. threads is common to every device.
  EXPECT_EQ(run_with("precision=bf16;threads=2"), -1.0f / 3.0f);
  try {
    run_with("precision=f8");
    ADD_FAILURE() << "precision=f8 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("precision='f8'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(OpenclF16, ConvPointwiseThreeByThreeDepthwiseGroupedWithBatchNormAndRelu) {
  LOOM_REQUIRE_OPENCL();
  struct Case {
    int64_t c, k, kernel, group, stride;
  };
  for (const char* gemm : {"blocked", "tiled"}) {
    for (const Case& c : {Case{32, 24, 1, 1, 1}, Case{16, 20, 3, 1, 2}, Case{24, 24, 3, 24, 1},
                          Case{12, 18, 3, 3, 1}, Case{3, 8, 7, 1, 2}}) {
      SCOPED_TRACE(std::string(gemm) + " k=" + std::to_string(c.kernel) +
                   " group=" + std::to_string(c.group));
      ModelBuilder m;
      std::vector<int64_t> xs = {2, c.c, 14, 13};
      m.input("x", LOOM_DTYPE_FLOAT32, xs);
      m.initializer(
          "w", random_tensor(LOOM_DTYPE_FLOAT32, {c.k, c.c / c.group, c.kernel, c.kernel}, 21));
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
      expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, xs, 27)}},
                             std::string("gemm=") + gemm);
    }
  }
}

TEST(OpenclF16, StandaloneBatchNormalizationAndClipWithTensorBounds) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 5, 6, 7});
  m.input("lo", LOOM_DTYPE_FLOAT32, {});
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 31));
  m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 32));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 33));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 34, 0.5, 2.0));
  m.initializer("hi", float_tensor({}, {0.75f}));
  m.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"n"});
  m.node("Clip", {"n", "lo", "hi"}, {"y"});
  m.output("y");
  expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 5, 6, 7}, 35)},
                             {"lo", float_tensor({}, {-0.5f})}});
}

TEST(OpenclF16, GemmAndBatchedMatMul) {
  LOOM_REQUIRE_OPENCL();
  for (const char* gemm : {"blocked", "tiled"}) {
    SCOPED_TRACE(gemm);
    {
      ModelBuilder m;
      m.input("a", LOOM_DTYPE_FLOAT32, {37, 300});
      m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {70, 300}, 41));
      m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, {70}, 42));
      m.node("Gemm", {"a", "b", "c"}, {"y"}).i("transB", 1).f("alpha", 0.5f).f("beta", 2.0f);
      m.output("y");
      expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {37, 300}, 43)}},
                             std::string("gemm=") + gemm);
    }
    {
      ModelBuilder m;
      m.input("a", LOOM_DTYPE_FLOAT32, {2, 4, 33, 64});
      m.input("b", LOOM_DTYPE_FLOAT32, {2, 4, 64, 17});
      m.node("MatMul", {"a", "b"}, {"y"});
      m.output("y");
      expect_f16_matches_cpu(m,
                             {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 33, 64}, 44)},
                              {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 64, 17}, 45)}},
                             std::string("gemm=") + gemm);
    }
  }
  {
    // A matrix-vector product (gemm_simple).
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {1, 500});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {500, 3}, 46));
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {1, 500}, 47)}});
  }
}

TEST(OpenclF16, Pooling) {
  LOOM_REQUIRE_OPENCL();
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

TEST(OpenclF16, UnaryAndBroadcastBinaryElementwise) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"Sigmoid", "Tanh", "Erf", "Exp", "Neg", "HardSwish", "Softplus"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 50});
    m.node(op, {"x"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 50}, 61, -3, 3)}});
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "PRelu"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 5}, 62, 0.5, 2.0));
    m.node(op, {"a", "b"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 63)}});
  }
  {
    // Same shapes (the flat kernels), both operands graph inputs.
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {4, 33});
    m.input("b", LOOM_DTYPE_FLOAT32, {4, 33});
    m.node("Mul", {"a", "b"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {4, 33}, 64)},
                               {"b", random_tensor(LOOM_DTYPE_FLOAT32, {4, 33}, 65)}});
  }
}

TEST(OpenclF16, ComparisonsWhereAndCasts) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {3, 16});
  m.input("b", LOOM_DTYPE_FLOAT32, {16});
  m.node("Greater", {"a", "b"}, {"g"});
  m.node("Where", {"g", "a", "b"}, {"w"});
  m.node("Cast", {"a"}, {"i"}).i("to", LOOM_DTYPE_INT32);
  m.node("Cast", {"i"}, {"f"}).i("to", LOOM_DTYPE_FLOAT32);
  m.node("Cast", {"g"}, {"gf"}).i("to", LOOM_DTYPE_FLOAT32);
  for (const char* out : {"g", "w", "i", "f", "gf"}) m.output(out);
  expect_f16_matches_cpu(
      m, {{"a", exact_halves(random_tensor(LOOM_DTYPE_FLOAT32, {3, 16}, 66, -20, 20))},
          {"b", exact_halves(random_tensor(LOOM_DTYPE_FLOAT32, {16}, 67, -20, 20))}});
}

TEST(OpenclF16, SoftmaxLogSoftmaxAndLayerNormalization) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 4, 9, 130});
    m.node(op, {"x"}, {"y"}).i("axis", -1);
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

TEST(OpenclF16, Reductions) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    ModelBuilder m(18);
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 20, 11});
    m.initializer("axes", int64_tensor({2}, {0, 2}));
    m.node(op, {"x", "axes"}, {"y"}).i("keepdims", 1);
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 20, 11}, 81)}});
  }
}

TEST(OpenclF16, MovementKernelsMoveHalves) {
  LOOM_REQUIRE_OPENCL();
  // Transpose, Slice (negative step), Concat, Split, Gather and Pad on fp16 tensors, an int64
  // Gather beside them (still 64-bit), a Constant node and a Reshape (a flat copy).
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
  m.initializer("pads", int64_tensor({8}, {0, 0, 1, 2, 0, 1, 0, 1}));
  m.initializer("pad_value", float_tensor({}, {0.3f}));
  m.node("Transpose", {"x"}, {"t"}).ints("perm", {0, 2, 3, 1});
  m.node("Slice", {"x", "starts", "ends", "slice_axes", "steps"}, {"s"});
  m.node("Concat", {"x", "s"}, {"c"}).i("axis", 3);
  m.node("Split", {"c"}, {"p0", "p1"}).i("axis", 0);
  m.node("Gather", {"table", "ids"}, {"g"}).i("axis", 0);
  m.node("Gather", {"codes", "ids"}, {"gi"}).i("axis", 0);
  m.node("Constant", {}, {"k"}).floats("value_floats", {0.25f, -1.5f, 3.0f, 0.1f, 2.0f, 7.0f});
  m.node("Add", {"g", "k"}, {"gk"});
  m.node("Reshape", {"t", "shape"}, {"r"});
  m.node("Pad", {"x", "pads", "pad_value"}, {"pd"});
  for (const char* out : {"t", "c", "p0", "p1", "gk", "gi", "r", "pd"}) m.output(out);
  expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 7}, 92)},
                             {"ids", int64_tensor({4}, {3, -1, 0, 9})}});
}

TEST(OpenclF16, ResizeNearestAndLinear) {
  LOOM_REQUIRE_OPENCL();
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

TEST(OpenclF16, GraphInputsAndConstantsPassedThroughToOutputs) {
  LOOM_REQUIRE_OPENCL();
  // An input that is also an output and read by a kernel comes back exactly (f32): it is
  // returned from its f32 boundary buffer, not from the fp16 copy the kernel reads. A Constant
  // node's output is a stored tensor like any other (rounded to half), unless the core folded
  // it into a graph constant, which run() returns from its f32 host data.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {5, 6});
  m.node("Relu", {"x"}, {"y"});
  m.node("Constant", {}, {"k"}).floats("value_floats", {1.0f / 3.0f, 0.1f});
  m.output("x");
  m.output("y");
  m.output("k");
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, {5, 6}, 111);
  std::vector<Tensor> out = expect_matches_cpu(m, {{"x", x}}, on_opencl_f16(), &kF16);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(compare(out[0], x, Tolerance{0, 0}), "");
  float k = out[2].data<float>()[0];
  EXPECT_TRUE(k == 1.0f / 3.0f || k == round_to_half(1.0f / 3.0f)) << k;
}

}  // namespace
}  // namespace loom::device_testing
