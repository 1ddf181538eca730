// Softmax, LogSoftmax and LayerNormalization against the cpu device: last and inner axes,
// the opset < 13 flattening rule, long rows, scale/bias shapes.
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

TEST(OpenclSoftmax, AxesAndOpsets) {
  LOOM_REQUIRE_OPENCL();
  struct Case {
    int64_t opset, axis;
    std::vector<int64_t> shape;
  };
  for (const Case& c : {Case{13, -1, {2, 3, 7}}, Case{13, 1, {2, 5, 3}}, Case{13, 0, {4, 6}},
                        Case{11, 1, {2, 3, 4}}, Case{13, -1, {3, 1000}}, Case{13, -1, {5, 1}}})
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      ModelBuilder m(c.opset);
      m.input("x", LOOM_DTYPE_FLOAT32, c.shape);
      m.node(op, {"x"}, {"y"}).i("axis", c.axis);
      m.output("y");
      SCOPED_TRACE(std::string(op) + " opset " + std::to_string(c.opset) + " axis " +
                   std::to_string(c.axis));
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.shape, 7, -8, 8)}},
                         on_opencl());
    }
}

TEST(OpenclLayerNormalization, LastAxisWithScaleAndBias) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 9, 77});
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {77}, 2));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {77}, 3));
  m.node("LayerNormalization", {"x", "s", "b"}, {"y"}).f("epsilon", 1e-6f);
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 9, 77}, 1, -3, 5)}},
                     on_opencl());
}

TEST(OpenclLayerNormalization, TwoAxesNoBias) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 4, 5});
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {4, 5}, 2));
  m.node("LayerNormalization", {"x", "s"}, {"y"}).i("axis", -2);
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 4, 5}, 1)}}, on_opencl());
}

TEST(OpenclLayerNormalization, BertSizedRows) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 768});
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {768}, 2));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {768}, 3));
  m.node("LayerNormalization", {"x", "s", "b"}, {"y"}).f("epsilon", 1e-12f);
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 768}, 1)}}, on_opencl());
}

}  // namespace
}  // namespace loom::device_testing
