// Softmax (old 2-D coercion and opset-13 single axis, contiguous and strided) and
// LayerNormalization on the neon device against cpu.
#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

TEST(NeonSoftmax, Opset13AnyAxis) {
  const std::vector<int64_t> shape = {2, 3, 5, 7};
  for (int64_t axis : {-1, 0, 1, 2, 3, -3}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.node("Softmax", {"x"}, {"y"}).i("axis", axis);
    m.output("y");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 1, -8, 8)}});
  }
}

TEST(NeonSoftmax, Opset11CoercesTo2d) {
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    ModelBuilder m(11);
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 4, 9});
    m.node("Softmax", {"x"}, {"y"}).i("axis", axis);
    m.output("y");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 4, 9}, 2, -5, 5)}});
  }
}

TEST(NeonSoftmax, LongRowsAndOddLengths) {
  for (int64_t len : {1, 3, 4, 5, 1000, 1001}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {4, len});
    m.node("Softmax", {"x"}, {"y"});
    m.output("y");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {4, len}, 3, -30, 30)}});
  }
}

TEST(NeonLayerNorm, AxesScaleAndBias) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    bool bias;
  };
  const Case cases[] = {{{2, 5, 768}, -1, true},
                        {{3, 7}, -1, false},
                        {{2, 3, 4, 5}, 2, true},
                        {{4, 13}, 0, true},
                        {{1, 9, 33}, 1, true}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE("axis " + std::to_string(c.axis));
    std::vector<int64_t> norm(c.shape.begin() + (c.axis < 0 ? c.axis + c.shape.size() : c.axis),
                              c.shape.end());
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, c.shape);
    m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, norm, ++seed));
    std::vector<std::string> inputs = {"x", "scale"};
    if (c.bias) {
      m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, norm, ++seed));
      inputs.push_back("bias");
    }
    m.node("LayerNormalization", inputs, {"y"}).i("axis", c.axis).f("epsilon", 1e-5f);
    m.output("y");
    // An offset mean, as real activations have, checks the two-pass variance.
    expect_neon_matches_cpu(m,
                            {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.shape, ++seed, 2.0, 5.0)}});
  }
}

TEST(NeonLayerNorm, BroadcastScale) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 6});
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {1, 6}, 1));
  m.initializer("bias", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1}, 2));
  m.node("LayerNormalization", {"x", "scale", "bias"}, {"y"}).i("axis", 1);
  m.output("y");
  expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 6}, 3)}});
}

}  // namespace
}  // namespace loom::neon_testing
