// precision=f16: every kernel family in the fp16-storage build of the program (float tensors
// stored as halves, inputs converted at the subgraph boundary, weights rounded at upload, f32
// arithmetic) against the f32 cpu reference device, with the reduced-precision tolerance that
// device_test_support writes down once for every device.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fp16_storage_cases.hpp"
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

TEST(OpenclF16, EveryKernelFamily) {
  LOOM_REQUIRE_OPENCL();
  // Both GEMM kernels (blocked: CPU drivers, tiled: GPUs) carry Conv, Gemm and MatMul.
  for (const char* gemm : {"gemm=blocked", "gemm=tiled"}) {
    for (const ModelCase& c : fp16_storage_cases()) {
      SCOPED_TRACE(std::string(gemm) + " " + c.name);
      expect_f16_matches_cpu(c.model, c.inputs, gemm);
    }
  }
}

// What only the opencl device covers beyond the shared cases: grouped convolution, a
// matrix-vector product (gemm_simple), PRelu, Softplus, same-shape (flat) binary kernels,
// LogSoftmax, ReduceSum and Pad with a fill value converted to half.
TEST(OpenclF16, GroupedConvMatrixVectorAndOpenclOnlyOps) {
  LOOM_REQUIRE_OPENCL();
  {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 12, 14, 13});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {18, 4, 3, 3}, 21));
    m.node("Conv", {"x", "w"}, {"y"}).i("group", 3).ints("pads", {1, 1, 1, 1});
    m.output("y");
    expect_f16_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 12, 14, 13}, 27)}});
  }
  {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {1, 500});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {500, 3}, 46));
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {1, 500}, 47)}});
  }
  {
    ModelBuilder m(18);
    m.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    m.input("b", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    m.initializer("slope", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 5}, 62, 0.5, 2.0));
    m.initializer("axes", int64_tensor({2}, {0, 2}));
    m.initializer("pads", int64_tensor({8}, {0, 0, 1, 2, 0, 1, 0, 1}));
    m.initializer("pad_value", float_tensor({}, {0.3f}));
    m.node("PRelu", {"a", "slope"}, {"pr"});
    m.node("Softplus", {"a"}, {"sp"});
    m.node("Mul", {"a", "b"}, {"mul"});
    m.node("LogSoftmax", {"a"}, {"ls"}).i("axis", -1);
    m.node("ReduceSum", {"a", "axes"}, {"rs"}).i("keepdims", 1);
    m.node("Pad", {"a", "pads", "pad_value"}, {"pd"});
    for (const char* out : {"pr", "sp", "mul", "ls", "rs", "pd"}) m.output(out);
    expect_f16_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 63, -3, 3)},
                               {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 65)}});
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
