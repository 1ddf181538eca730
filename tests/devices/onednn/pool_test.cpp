// Pooling on the onednn device: max/average with pads, strides, dilations, ceil_mode, and the
// global pools, in 1D, 2D and 3D; also on a blocked conv output.
#include <gtest/gtest.h>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

void check_pool(const std::string& op, std::vector<int64_t> x, std::vector<int64_t> kernel,
                std::vector<int64_t> strides, std::vector<int64_t> pads, int64_t ceil_mode = 0,
                std::vector<int64_t> dilations = {}, int64_t count_include_pad = 0) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, x);
  NodeRef n = m.node(op, {"x"}, {"y"});
  n.ints("kernel_shape", kernel).i("ceil_mode", ceil_mode);
  if (!strides.empty()) n.ints("strides", strides);
  if (!pads.empty()) n.ints("pads", pads);
  if (!dilations.empty()) n.ints("dilations", dilations);
  if (op == "AveragePool") n.i("count_include_pad", count_include_pad);
  m.output("y");
  check_unary_model(m, x);
}

TEST(OnednnPool, MaxPool2D) {
  check_pool("MaxPool", {1, 8, 15, 15}, {3, 3}, {2, 2}, {1, 1, 1, 1});
}
TEST(OnednnPool, MaxPoolCeilModeAsymmetricPads) {
  check_pool("MaxPool", {2, 3, 10, 9}, {3, 2}, {2, 2}, {0, 1, 1, 0}, 1);
}
TEST(OnednnPool, MaxPoolDilated) {
  check_pool("MaxPool", {1, 4, 12, 12}, {2, 2}, {1, 1}, {}, 0, {2, 2});
}
TEST(OnednnPool, AveragePoolExcludeAndIncludePads) {
  check_pool("AveragePool", {1, 5, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, {}, 0);
  check_pool("AveragePool", {1, 5, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, {}, 1);
  check_pool("AveragePool", {1, 5, 10, 10}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1, {}, 0);
}
TEST(OnednnPool, OneAndThreeDimensional) {
  check_pool("MaxPool", {2, 3, 17}, {3}, {2}, {1, 1});
  check_pool("AveragePool", {1, 2, 6, 7, 8}, {2, 3, 2}, {2, 1, 2}, {});
}

TEST(OnednnPool, GlobalPoolsAfterConv) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 7, 7});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 16, 1, 1}, 2));
    m.node("Conv", {"x", "w"}, {"c"});
    m.node(op, {"c"}, {"g"});
    m.node("Flatten", {"g"}, {"y"});
    m.output("y");
    check_unary_model(m, {1, 16, 7, 7});
  }
}

// ReduceMean/ReduceMax over every spatial axis run as a global pooling on the convolution's
// blocked output (keepdims 1, and 0 through a plain copy); over other axes, the reduction
// primitive. Channels a multiple of 16 and not, batch 2, 1D to 3D.
TEST(OnednnPool, SpatialReduceMeanAndMaxAreGlobalPools) {
  struct Case {
    std::vector<int64_t> x;
    std::string op;
    std::vector<int64_t> axes;
    int64_t keepdims;
    bool pooled;
  };
  const Case cases[] = {
      {{1, 16, 7, 7}, "ReduceMean", {2, 3}, 0, true},
      {{2, 24, 5, 6}, "ReduceMean", {-1, -2}, 1, true},
      {{2, 32, 9, 4}, "ReduceMax", {2, 3}, 0, true},
      {{1, 16, 6}, "ReduceMean", {2}, 0, true},
      {{1, 16, 3, 4, 5}, "ReduceMean", {2, 3, 4}, 1, true},
      {{1, 16, 7, 7}, "ReduceMean", {3}, 1, false},
      {{1, 16, 7, 7}, "ReduceMean", {1, 2, 3}, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " rank " + std::to_string(c.x.size()) + " keepdims " +
                 std::to_string(c.keepdims));
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, c.x);
    std::vector<int64_t> w{c.x[1], c.x[1]};
    w.resize(c.x.size(), 1);
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, w, 2));
    m.node("Conv", {"x", "w"}, {"c"});
    m.node(c.op, {"c"}, {"y"}).ints("axes", c.axes).i("keepdims", c.keepdims);
    m.output("y");
    check_unary_model(m, c.x);
    bool pooled = false;
    for (const std::string& step :
         compiled_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.x, 1)}}))
      pooled = pooled || step.find("[pooling") != std::string::npos;
    EXPECT_EQ(pooled, c.pooled);
  }
}

// A MaxPool of a plain tensor (a graph input) runs a fast kernel, not oneDNN's
// simple_nchw/reference one: float a jit one after a reorder, int8 the device's own
// channels-last kernel (max_pool_int8.cpp).
TEST(OnednnPool, PlainSourcePoolsWithJit) {
  for (loom_dtype_t type : {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT8}) {
    ModelBuilder m;
    m.input("x", type, {1, 24, 16, 16});
    m.node("MaxPool", {"x"}, {"y"}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
    m.output("y");
    Tensor x = random_tensor(type, {1, 24, 16, 16}, 3, -100, 100);
    expect_matches_cpu(m, {{"x", x}}, onednn_only());
    // float: oneDNN's jit pooling after a reorder; int8: the device's own channels-last kernel.
    const char* kernel = type == LOOM_DTYPE_INT8 ? "loom max pool int8" : "jit";
    bool fast = false;
    for (const std::string& step : compiled_steps(m, {{"x", x}}))
      fast = fast ||
             (step.find("MaxPool") != std::string::npos && step.find(kernel) != std::string::npos);
    EXPECT_TRUE(fast) << kernel;
  }
}

}  // namespace
}  // namespace loom::onednn_testing
