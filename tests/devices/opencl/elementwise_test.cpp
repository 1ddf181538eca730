// Elementwise kernels against the cpu device: unary math and activations, broadcasting binary
// ops, variadic ops, comparisons, Where, Cast and standalone BatchNormalization.
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

struct UnaryCase {
  std::string op;
  double low, high;
};

class UnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryTest, MatchesCpu) {
  LOOM_REQUIRE_OPENCL();
  const UnaryCase& c = GetParam();
  ModelBuilder m(c.op == "Mish" ? 18 : 17);  // Mish is an opset-18 op
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 37});
  m.node(c.op, {"x"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 37}, 11, c.low, c.high)}},
                     on_opencl());
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UnaryTest,
    ::testing::Values(UnaryCase{"Relu", -2, 2}, UnaryCase{"Sigmoid", -6, 6},
                      UnaryCase{"Tanh", -3, 3}, UnaryCase{"Exp", -4, 4}, UnaryCase{"Log", 0.01, 10},
                      UnaryCase{"Sqrt", 0, 10}, UnaryCase{"Abs", -2, 2}, UnaryCase{"Neg", -2, 2},
                      UnaryCase{"Erf", -3, 3}, UnaryCase{"Reciprocal", 0.5, 4},
                      UnaryCase{"Floor", -5, 5}, UnaryCase{"Ceil", -5, 5},
                      UnaryCase{"Round", -5, 5}, UnaryCase{"Sin", -4, 4}, UnaryCase{"Cos", -4, 4},
                      UnaryCase{"Tan", -1, 1}, UnaryCase{"Atan", -4, 4}, UnaryCase{"Sign", -2, 2},
                      UnaryCase{"Softplus", -30, 30}, UnaryCase{"Softsign", -3, 3},
                      UnaryCase{"HardSwish", -5, 5}, UnaryCase{"Mish", -5, 5},
                      UnaryCase{"LeakyRelu", -2, 2}, UnaryCase{"Elu", -2, 2},
                      UnaryCase{"Celu", -2, 2}, UnaryCase{"Selu", -2, 2},
                      UnaryCase{"HardSigmoid", -4, 4}, UnaryCase{"ThresholdedRelu", -2, 3}),
    [](const auto& info) { return info.param.op; });

TEST(OpenclElementwise, ActivationAttributes) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {5, 9});
  m.node("LeakyRelu", {"x"}, {"a"}).f("alpha", 0.3f);
  m.node("Elu", {"a"}, {"b"}).f("alpha", 0.7f);
  m.node("HardSigmoid", {"b"}, {"y"}).f("alpha", 0.3f).f("beta", 0.4f);
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {5, 9}, 3, -3, 3)}}, on_opencl());
}

TEST(OpenclElementwise, ClipWithConstantBoundsAndOldAttributes) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 33});
  m.initializer("lo", float_tensor({}, {-0.5f}));
  m.initializer("hi", float_tensor({}, {0.25f}));
  m.node("Clip", {"x", "lo", "hi"}, {"a"});
  m.node("Clip", {"x", "", "hi"}, {"b"});
  m.node("Add", {"a", "b"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {4, 33}, 5)}}, on_opencl());

  ModelBuilder old(6);
  old.input("x", LOOM_DTYPE_FLOAT32, {4, 33});
  old.node("Clip", {"x"}, {"y"}).f("min", -0.2f).f("max", 0.6f);
  old.output("y");
  expect_matches_cpu(old, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {4, 33}, 6)}}, on_opencl());
}

struct BinaryCase {
  std::vector<int64_t> a, b;
};

class BinaryBroadcastTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryBroadcastTest, EveryOpMatchesCpu) {
  LOOM_REQUIRE_OPENCL();
  const BinaryCase& c = GetParam();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"}) {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, c.a);
    m.input("b", LOOM_DTYPE_FLOAT32, c.b);
    m.node(op, {"a", "b"}, {"y"});
    m.output("y");
    // Positive bases keep Pow real; divisors away from 0 keep Div well-conditioned.
    SCOPED_TRACE(op);
    expect_matches_cpu(m,
                       {{"a", random_tensor(LOOM_DTYPE_FLOAT32, c.a, 21, 0.5, 2.0)},
                        {"b", random_tensor(LOOM_DTYPE_FLOAT32, c.b, 22, 0.5, 2.0)}},
                       on_opencl());
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BinaryBroadcastTest,
                         ::testing::Values(BinaryCase{{2, 3, 5}, {2, 3, 5}},
                                           BinaryCase{{2, 3, 5}, {5}},
                                           BinaryCase{{2, 1, 5}, {3, 1}},
                                           BinaryCase{{1}, {4, 1, 3}}, BinaryCase{{}, {3, 2}},
                                           BinaryCase{{7, 1, 1, 2}, {1, 3, 5, 1}}));

TEST(OpenclElementwise, PReluWithPerChannelSlope) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 4, 3, 3});
  m.initializer("slope", random_tensor(LOOM_DTYPE_FLOAT32, {4, 1, 1}, 8));
  m.node("PRelu", {"x", "slope"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 3, 3}, 9)}}, on_opencl());
}

TEST(OpenclElementwise, VariadicSumMeanMaxMinBroadcast) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {3, 4});
    m.input("b", LOOM_DTYPE_FLOAT32, {4});
    m.input("c", LOOM_DTYPE_FLOAT32, {3, 1});
    m.node(op, {"a", "b", "c"}, {"y"});
    m.node(op, {"a"}, {"z"});
    m.output("y");
    m.output("z");
    SCOPED_TRACE(op);
    expect_matches_cpu(m,
                       {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {3, 4}, 1)},
                        {"b", random_tensor(LOOM_DTYPE_FLOAT32, {4}, 2)},
                        {"c", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1}, 3)}},
                       on_opencl());
  }
}

TEST(OpenclElementwise, ComparisonsFeedWhere) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {3, 5});
    m.input("b", LOOM_DTYPE_FLOAT32, {5});
    m.node("Round", {"a"}, {"ra"});
    m.node("Round", {"b"}, {"rb"});
    m.node(op, {"ra", "rb"}, {"mask"});
    m.node("Where", {"mask", "a", "b"}, {"y"});
    m.output("mask");
    m.output("y");
    SCOPED_TRACE(op);
    expect_matches_cpu(m,
                       {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {3, 5}, 4, -2, 2)},
                        {"b", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 5, -2, 2)}},
                       on_opencl());
  }
}

TEST(OpenclElementwise, CastBetweenNumericTypes) {
  LOOM_REQUIRE_OPENCL();
  const loom_dtype_t types[] = {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT32, LOOM_DTYPE_INT64,
                                LOOM_DTYPE_UINT8,   LOOM_DTYPE_INT8,  LOOM_DTYPE_BOOL};
  for (loom_dtype_t from : types)
    for (loom_dtype_t to : types) {
      ModelBuilder m;
      m.input("x", from, {3, 7});
      m.node("Cast", {"x"}, {"y"}).i("to", to);
      m.output("y");
      SCOPED_TRACE(std::to_string(from) + " -> " + std::to_string(to));
      // Values in [0, 100) survive every conversion (no out-of-range behaviour involved).
      expect_matches_cpu(m, {{"x", random_tensor(from, {3, 7}, 6, 0, 100)}}, on_opencl());
    }
}

TEST(OpenclElementwise, BatchNormalizationAlone) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 5, 3, 7});
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 1));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 2));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 3));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 4, 0.5, 2));
  m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}).f("epsilon", 1e-3f);
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 5, 3, 7}, 5)}}, on_opencl());
}

}  // namespace
}  // namespace loom::device_testing
