// Broadcasting binary ops, activations, Clip, BatchNormalization and Flatten on the neon device
// against cpu. Sizes are chosen so vector loops end in every possible tail (n mod 4, mod 8).
#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

TEST(NeonElementwise, BinaryOpsBroadcast) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 5, 7}, {2, 3, 5, 7}},  // same shape
      {{1, 8, 6, 6}, {8, 1, 1}},     // per-channel constant
      {{2, 3, 4, 5}, {}},            // scalar
      {{3, 1, 5}, {1, 4, 1}},        // both broadcast
      {{4, 9}, {9}},                 // row vector
      {{1, 16, 3, 3}, {1, 16, 1, 1}},
      {{5, 1}, {1, 6}},
      {{7}, {1}},
      {{2, 0, 3}, {3}},  // empty
  };
  uint32_t seed = 1;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(op) + " case " + std::to_string(seed));
      ModelBuilder m;
      m.input("a", LOOM_DTYPE_FLOAT32, a);
      m.input("b", LOOM_DTYPE_FLOAT32, b);
      m.node(op, {"a", "b"}, {"y"});
      m.output("y");
      // Divisors away from zero so the relative comparison is meaningful.
      double low = std::string(op) == "Div" ? 0.5 : -1.0;
      expect_neon_matches_cpu(m, {{"a", random_tensor(LOOM_DTYPE_FLOAT32, a, ++seed)},
                                  {"b", random_tensor(LOOM_DTYPE_FLOAT32, b, ++seed, low, 2.0)}});
    }
  }
}

TEST(NeonElementwise, BinaryWithConstantOperandFirst) {
  ModelBuilder m;
  m.initializer("a", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 1}, 4));
  m.input("b", LOOM_DTYPE_FLOAT32, {2, 3, 5, 6});
  m.node("Sub", {"a", "b"}, {"y"});
  m.output("y");
  expect_neon_matches_cpu(m, {{"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 6}, 5)}});
}

TEST(NeonElementwise, Activations) {
  struct Act {
    const char* op;
    float alpha = 0, beta = 0;
    bool has_alpha = false, has_beta = false;
  };
  const Act acts[] = {{"Relu"},
                      {"Sigmoid"},
                      {"Tanh"},
                      {"LeakyRelu", 0.1f, 0, true},
                      {"HardSigmoid", 0.3f, 0.4f, true, true},
                      {"HardSwish"},
                      {"Abs"},
                      {"Neg"},
                      {"Exp"},
                      {"LeakyRelu"}};
  for (const Act& a : acts) {
    for (int64_t n : {1, 3, 4, 7, 8, 13, 1000, 40001}) {
      SCOPED_TRACE(std::string(a.op) + " n=" + std::to_string(n));
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, {n});
      auto node = m.node(a.op, {"x"}, {"y"});
      if (a.has_alpha) node.f("alpha", a.alpha);
      if (a.has_beta) node.f("beta", a.beta);
      m.output("y");
      // A wide range so the exp-based ops see saturation as well as the linear region.
      expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {n}, 7, -12.0, 12.0)}});
    }
  }
}

TEST(NeonElementwise, TranscendentalsAtTheirLimits) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {12});
  m.node("Exp", {"x"}, {"e"});
  m.node("Sigmoid", {"x"}, {"s"});
  m.node("Tanh", {"x"}, {"t"});
  m.output("e");
  m.output("s");
  m.output("t");
  expect_neon_matches_cpu(
      m, {{"x", float_tensor({12}, {-100.0f, -87.0f, -20.0f, -1e-3f, 0.0f, 1e-6f, 0.05f, 0.07f,
                                    20.0f, 88.0f, 88.7f, 95.0f})}});
}

TEST(NeonElementwise, SqrtOfNonNegativeValues) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 37});
  m.node("Sqrt", {"x"}, {"y"});
  m.output("y");
  expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 37}, 8, 0.0, 9.0)}});
}

TEST(NeonElementwise, ClipWithConstantBoundsAndOldAttributes) {
  {
    ModelBuilder m;  // opset 17: bounds as constant inputs (ReLU6 as exported by torch)
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 45});
    m.initializer("lo", float_tensor({}, {0.0f}));
    m.initializer("hi", float_tensor({}, {6.0f}));
    m.node("Clip", {"x", "lo", "hi"}, {"y"});
    m.node("Clip", {"x", "", "hi"}, {"z"});
    m.output("y");
    m.output("z");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 45}, 9, -10, 10)}});
  }
  {
    ModelBuilder m(6);  // opset 6: attributes
    m.input("x", LOOM_DTYPE_FLOAT32, {17});
    m.node("Clip", {"x"}, {"y"}).f("min", -0.5f).f("max", 0.25f);
    m.output("y");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {17}, 10)}});
  }
}

TEST(NeonElementwise, ClipBoundsFromConstantNodesAndInputs) {
  // torch exports ReLU6 with Constant nodes for the bounds.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 7});
  m.input("hi", LOOM_DTYPE_FLOAT32, {});
  auto lo = m.node("Constant", {}, {"lo"});
  auto* value = lo.proto().add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  value->mutable_t()->add_float_data(-0.25f);
  m.node("Clip", {"x", "lo", "hi"}, {"y"});
  m.output("y");
  expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 7}, 11)},
                              {"hi", float_tensor({}, {0.5f})}});
}

TEST(NeonElementwise, FloatConstantNodes) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3});
  m.node("Constant", {}, {"a"}).floats("value_floats", {1.5f, -2.0f, 0.25f});
  m.node("Constant", {}, {"b"}).f("value_float", 3.0f);
  m.node("Add", {"x", "a"}, {"xa"});
  m.node("Mul", {"xa", "b"}, {"y"});
  m.output("y");
  m.output("a");
  expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 12)}});
}

TEST(NeonElementwise, BatchNormalizationInference) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 5, 7, 3}, std::vector<int64_t>{3, 6}}) {
    const int64_t c = shape[1];
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {c}, 1));
    m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {c}, 2));
    m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {c}, 3));
    m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {c}, 4, 0.1, 2.0));
    m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}).f("epsilon", 1e-3f);
    m.output("y");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 5)}});
  }
}

TEST(NeonElementwise, FlattenFeedsGemmWithoutACopy) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 1, 1});
  m.node("Flatten", {"x"}, {"f"}).i("axis", 1);
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {5, 8}, 1));
  m.node("Gemm", {"f", "w"}, {"y"}).i("transB", 1);
  m.node("Flatten", {"x"}, {"g"}).i("axis", -2);
  m.output("y");
  m.output("g");
  expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 8, 1, 1}, 2)}});
}

}  // namespace
}  // namespace loom::neon_testing
