// BatchNormalization (standalone), LayerNormalization (op and decomposed pattern), Softmax
// and LogSoftmax on the onednn device.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace loom::onednn_testing
