// MaxPool, AveragePool and the global pools on many geometries.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

struct PoolCase {
  const char* op;
  std::vector<int64_t> x, kernel, strides, pads;
  int64_t ceil_mode, count_include_pad;
  std::vector<int64_t> dilations = {};
};

TEST(VulkanPool, MaxAndAverageGeometries) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const PoolCase cases[] = {
      {"MaxPool", {1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},  // ResNet
      {"MaxPool", {2, 3, 9, 10}, {2, 3}, {2, 1}, {0, 1, 1, 0}, 1, 0},
      {"MaxPool", {1, 2, 11, 11}, {3, 3}, {1, 1}, {}, 0, 0, {2, 2}},
      {"AveragePool", {1, 4, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},
      {"AveragePool", {1, 4, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 1},
      {"AveragePool", {1, 4, 8, 7}, {3, 2}, {2, 2}, {1, 0, 1, 1}, 1, 1},
      {"AveragePool", {2, 3, 20}, {4}, {3}, {1, 2}, 0, 0},  // 1-D
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const PoolCase& c = cases[i];
    ModelBuilder m(19);
    m.input("x", LOOM_DTYPE_FLOAT32, c.x);
    NodeRef n = m.node(c.op, {"x"}, {"y"});
    n.ints("kernel_shape", c.kernel).ints("strides", c.strides).i("ceil_mode", c.ceil_mode);
    if (!c.pads.empty()) n.ints("pads", c.pads);
    if (!c.dilations.empty()) n.ints("dilations", c.dilations);
    if (std::string(c.op) == "AveragePool") n.i("count_include_pad", c.count_include_pad);
    m.output("y");
    SCOPED_TRACE("case " + std::to_string(i));
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.x, 5)}}, on_vulkan());
  }
}

TEST(VulkanPool, GlobalPools) {
  LOOM_SKIP_WITHOUT_VULKAN();
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{1, 2048, 7, 7}, {2, 5, 3, 13}, {3, 4, 9}}) {
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, shape);
      m.node(op, {"x"}, {"y"});
      m.output("y");
      SCOPED_TRACE(op);
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 6)}}, on_vulkan());
    }
  }
}

}  // namespace
}  // namespace loom::device_testing
