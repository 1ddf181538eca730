// Unary activations and broadcast binary ops on vulkan against the cpu device.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

Tensor f32(std::vector<int64_t> shape, uint32_t seed, double lo = -3, double hi = 3) {
  return random_tensor(LOOM_DTYPE_FLOAT32, std::move(shape), seed, lo, hi);
}

struct UnaryCase {
  const char* op;
  double lo, hi;  // input range where the op is defined
};

TEST(VulkanElementwise, UnaryActivationsMatchCpu) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const UnaryCase cases[] = {
      {"Relu", -3, 3},       {"Sigmoid", -20, 20},   {"Tanh", -20, 20},
      {"Exp", -5, 5},        {"Log", 0.01, 10},      {"Sqrt", 0, 10},
      {"Neg", -3, 3},        {"Abs", -3, 3},         {"Erf", -4, 4},
      {"LeakyRelu", -3, 3},  {"Elu", -3, 3},         {"HardSigmoid", -5, 5},
      {"HardSwish", -5, 5},  {"Reciprocal", 0.5, 4}, {"Floor", -3, 3},
      {"Ceil", -3, 3},       {"Sin", -3, 3},         {"Cos", -3, 3},
      {"Softplus", -30, 30}, {"Softsign", -3, 3},    {"Selu", -3, 3},
      {"Sign", -3, 3},       {"Celu", -3, 3},        {"ThresholdedRelu", -3, 3}};
  for (const UnaryCase& c : cases) {
    // 1000 elements: several workgroups and a partial last one.
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {10, 100});
    m.node(c.op, {"x"}, {"y"});
    m.output("y");
    SCOPED_TRACE(c.op);
    expect_matches_cpu(m, {{"x", f32({10, 100}, 3, c.lo, c.hi)}}, on_vulkan());
  }
}

TEST(VulkanElementwise, ActivationAttributesAreHonoured) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {7, 13});
  m.node("LeakyRelu", {"x"}, {"a"}).f("alpha", 0.3f);
  m.node("Elu", {"a"}, {"b"}).f("alpha", 0.7f);
  m.node("HardSigmoid", {"b"}, {"y"}).f("alpha", 0.3f).f("beta", 0.4f);
  m.output("y");
  expect_matches_cpu(m, {{"x", f32({7, 13}, 5)}}, on_vulkan());
}

TEST(VulkanElementwise, ClipWithConstantBoundsAndWithout) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 50});
  m.initializer("lo", float_tensor({}, {-0.5f}));
  m.initializer("hi", float_tensor({}, {6.0f}));
  m.node("Clip", {"x", "lo", "hi"}, {"a"});
  m.node("Clip", {"a", "", "hi"}, {"b"});
  m.node("Clip", {"b"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", f32({3, 50}, 7, -10, 10)}}, on_vulkan());
}

TEST(VulkanElementwise, ClipWithBoundsFromConstantNodesAndInputs) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // torch exports feed Clip's bounds through Constant nodes (ReLU6 in MobileNetV2); bounds can
  // also be run-time inputs.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 5, 5});
  m.input("hi", LOOM_DTYPE_FLOAT32, {});
  m.initializer("w", f32({8, 8, 3, 3}, 4, -0.5, 0.5));
  m.node("Constant", {}, {"zero"}).f("value_float", 0.0f);
  m.node("Constant", {}, {"six"}).f("value_float", 6.0f);
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Clip", {"c", "zero", "six"}, {"r"});
  m.node("Clip", {"r", "", "hi"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", f32({1, 8, 5, 5}, 1)}, {"hi", float_tensor({}, {2.5f})}},
                     on_vulkan());
}

struct BinaryCase {
  std::vector<int64_t> a, b;
};

TEST(VulkanElementwise, BinaryOpsBroadcastLikeNumpy) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const BinaryCase shapes[] = {
      {{4, 5}, {4, 5}},
      {{2, 3, 4}, {4}},
      {{2, 3, 4}, {3, 1}},
      {{1, 3, 1, 5}, {2, 1, 4, 1}},
      {{7}, {}},
      {{}, {7}},
      {{2, 3, 4, 5, 1, 1, 2}, {1, 1, 4, 5, 3, 2, 2}},  // 7-D, coalesces to 4
      {{1, 64, 7, 7}, {1, 64, 1, 1}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const BinaryCase& c : shapes) {
      ModelBuilder m;
      m.input("a", LOOM_DTYPE_FLOAT32, c.a);
      m.input("b", LOOM_DTYPE_FLOAT32, c.b);
      m.node(op, {"a", "b"}, {"y"});
      m.output("y");
      SCOPED_TRACE(std::string(op) + " " + std::to_string(c.a.size()) + "-D by " +
                   std::to_string(c.b.size()) + "-D");
      double lo = std::string(op) == "Div" ? 0.5 : -3;
      expect_matches_cpu(m, {{"a", f32(c.a, 1)}, {"b", f32(c.b, 2, lo, 3)}}, on_vulkan());
    }
  }
}

TEST(VulkanElementwise, PowWithNegativeBaseAndIntegerExponent) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {2, 6});
  m.initializer("e", float_tensor({6}, {2, 3, 0, -1, 0.5f, 1}));
  m.node("Pow", {"a", "e"}, {"y"});
  m.output("y");
  Tensor a = float_tensor({2, 6}, {-2, -1.5f, -3, -0.5f, 4, -7, 3, 2.5f, 0, 2, 9, 0});
  expect_matches_cpu(m, {{"a", a}}, on_vulkan());
}

TEST(VulkanElementwise, PReluWithPerChannelSlope) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
  m.initializer("s", f32({3, 1, 1}, 9, 0, 1));
  m.node("PRelu", {"x", "s"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"x", f32({2, 3, 4, 5}, 4)}}, on_vulkan());
}

TEST(VulkanElementwise, AddThenReluFusesAndKeepsResults) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {1, 8, 6, 6});
  m.input("b", LOOM_DTYPE_FLOAT32, {1, 8, 6, 6});
  m.node("Add", {"a", "b"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  m.node("Sigmoid", {"s"}, {"z"});  // s has two readers: no fusion for it
  m.node("Mul", {"y", "z"}, {"t"});
  m.node("Relu", {"t"}, {"u"});  // fused into Mul
  m.output("u");
  m.output("s");
  expect_matches_cpu(m, {{"a", f32({1, 8, 6, 6}, 1)}, {"b", f32({1, 8, 6, 6}, 2)}}, on_vulkan());
}

TEST(VulkanElementwise, VariadicSumMaxMinWithOneAndTwoInputs) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {3, 4});
  m.input("b", LOOM_DTYPE_FLOAT32, {4});
  m.node("Sum", {"a", "b"}, {"s"});
  m.node("Max", {"s"}, {"t"});
  m.node("Min", {"t", "b"}, {"y"});
  m.output("y");
  expect_matches_cpu(m, {{"a", f32({3, 4}, 1)}, {"b", f32({4}, 2)}}, on_vulkan());
}

TEST(VulkanElementwise, BroadcastBeyondSixDimsIsRefusedWithAReason) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // Alternating broadcast dims do not coalesce: 7 dims stay 7, the node goes to another device.
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {2, 1, 3, 1, 2, 1, 3});
  m.input("b", LOOM_DTYPE_FLOAT32, {1, 4, 1, 2, 1, 3, 1});
  m.node("Add", {"a", "b"}, {"y"});
  m.output("y");
  auto path = m.save();
  try {
    run_model(path, {{"a", f32({2, 1, 3, 1, 2, 1, 3}, 1)}, {"b", f32({1, 4, 1, 2, 1, 3, 1}, 2)}},
              on_vulkan());
    ADD_FAILURE() << "a 7-D broadcast was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("more than 6 dims"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::device_testing
