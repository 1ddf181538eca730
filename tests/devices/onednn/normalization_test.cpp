// BatchNormalization (standalone), LayerNormalization (op and decomposed pattern), Softmax
// and LogSoftmax on the onednn device.
#include <gtest/gtest.h>

#include <limits>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

TEST(OnednnNorm, BatchNormalizationAfterPool) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 6, 8, 8});
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {6}, 2));
  m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {6}, 3));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {6}, 4));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {6}, 5, 0.5, 2.0));
  m.node("MaxPool", {"x"}, {"p"}).ints("kernel_shape", {2, 2});
  m.node("BatchNormalization", {"p", "scale", "shift", "mean", "var"}, {"y"});
  m.output("y");
  check_unary_model(m, {2, 6, 8, 8});
}

TEST(OnednnNorm, LayerNormalizationAxes) {
  for (int64_t axis : {-1, 1}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 5, 24});
    std::vector<int64_t> shape =
        axis == -1 ? std::vector<int64_t>{24} : std::vector<int64_t>{5, 24};
    m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, shape, 2));
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, shape, 3));
    m.node("LayerNormalization", {"x", "g", "b"}, {"y"}).i("axis", axis).f("epsilon", 1e-5f);
    m.output("y");
    check_unary_model(m, {2, 5, 24});
  }
}

TEST(OnednnNorm, LayerNormalizationWithoutBias) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {7, 33});
  m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, {33}, 2));
  m.node("LayerNormalization", {"x", "g"}, {"y"});
  m.output("y");
  check_unary_model(m, {7, 33});
}

// What older exporters emit for LayerNorm: compile fuses it into one primitive.
TEST(OnednnNorm, DecomposedLayerNormalization) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 6, 32});
  m.initializer("two", float_tensor({}, {2.f}));
  m.initializer("eps", float_tensor({}, {1e-5f}));
  m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, {32}, 2));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {32}, 3));
  m.node("ReduceMean", {"x"}, {"mean"}).ints("axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"sq"});
  m.node("ReduceMean", {"sq"}, {"var"}).ints("axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"d", "sd"}, {"n"});
  m.node("Mul", {"n", "g"}, {"ng"});
  m.node("Add", {"ng", "b"}, {"y"});
  m.output("y");
  check_unary_model(m, {2, 6, 32});
}

TEST(OnednnNorm, SoftmaxOpsetsAndAxes) {
  for (int64_t opset : {11, 13}) {
    for (int64_t axis : {0, 1, -1}) {
      for (const char* op : {"Softmax", "LogSoftmax"}) {
        SCOPED_TRACE(std::string(op) + " opset " + std::to_string(opset) + " axis " +
                     std::to_string(axis));
        ModelBuilder m(opset);
        m.input("x", LOOM_DTYPE_FLOAT32, {3, 4, 5});
        m.node(op, {"x"}, {"y"}).i("axis", axis);
        m.output("y");
        check_unary_model(m, {3, 4, 5});
      }
    }
  }
}

// Softmax and LogSoftmax along the last axis (attention scores, masked with -inf by an Add) run
// the device's row kernel where it has one; along another axis, oneDNN's primitive.
TEST(OnednnNorm, SoftmaxAlongTheLastAxisRunsTheRowKernel) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {-1, 1}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 37});
      std::vector<float> mask(37, 0.f);
      mask[5] = mask[36] = -std::numeric_limits<float>::infinity();
      m.initializer("mask", float_tensor({37}, mask));
      m.node("Add", {"x", "mask"}, {"s"});
      m.node(op, {"s"}, {"y"}).i("axis", axis);
      m.output("y");
      std::vector<std::pair<std::string, Tensor>> inputs{
          {"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 37}, 1, -20.0, 20.0)}};
      expect_matches_cpu(m, inputs, onednn_only());
      bool row_kernel = false;
      for (const std::string& step :
           run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn"))
        row_kernel |= step.rfind(std::string(op) + " ", 0) == 0 &&
                      step.find("[loom rows]") != std::string::npos;
#if defined(__x86_64__)
      if (__builtin_cpu_supports("avx512f")) {
        EXPECT_EQ(row_kernel, axis == -1);
      }
#endif
      if (axis != -1) {
        EXPECT_FALSE(row_kernel);
      }
    }
  }
}

}  // namespace
}  // namespace loom::onednn_testing
