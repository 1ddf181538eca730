// MaxPool, AveragePool and the global pools on the neon device against cpu.
#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

struct PoolCase {
  std::vector<int64_t> shape, kernel, strides, pads;
  int64_t ceil_mode, count_include_pad;
};

TEST(NeonPool, MaxAndAverageMatchCpu) {
  const PoolCase cases[] = {
      {{1, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0, 0},
      {{2, 4, 13, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},
      {{1, 2, 13, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 1},
      {{1, 5, 9, 10}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0, 0},
      {{1, 2, 10, 9}, {3, 2}, {2, 3}, {0, 1, 1, 0}, 1, 0},
      {{1, 2, 12, 37}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1, 1},
      {{1, 1, 5, 5}, {5, 5}, {1, 1}, {2, 2, 2, 2}, 0, 1},
      {{1, 3, 7, 29}, {1, 3}, {1, 1}, {0, 1, 0, 1}, 0, 0},
  };
  uint32_t seed = 1;
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (const PoolCase& p : cases) {
      SCOPED_TRACE(std::string(op) + " on " + std::to_string(p.shape[2]) + "x" +
                   std::to_string(p.shape[3]) + " kernel " + std::to_string(p.kernel[0]) + "x" +
                   std::to_string(p.kernel[1]));
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, p.shape);
      auto node = m.node(op, {"x"}, {"y"});
      node.ints("kernel_shape", p.kernel).ints("strides", p.strides).ints("pads", p.pads);
      node.i("ceil_mode", p.ceil_mode);
      if (std::string(op) == "AveragePool") node.i("count_include_pad", p.count_include_pad);
      m.output("y");
      expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, p.shape, ++seed)}});
    }
  }
}

TEST(NeonPool, SamePaddingAndDilations) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 11, 12});
  m.node("MaxPool", {"x"}, {"a"})
      .ints("kernel_shape", {3, 3})
      .ints("strides", {2, 2})
      .s("auto_pad", "SAME_UPPER");
  m.node("MaxPool", {"x"}, {"b"})
      .ints("kernel_shape", {2, 2})
      .ints("dilations", {2, 2})
      .ints("pads", {1, 1, 1, 1});
  m.output("a");
  m.output("b");
  expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 11, 12}, 9)}});
}

TEST(NeonPool, GlobalPools) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{1, 32, 7, 7}, std::vector<int64_t>{2, 3, 5, 9},
        std::vector<int64_t>{1, 4, 13}, std::vector<int64_t>{2, 2, 3, 2, 5}}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, shape);
    m.node("GlobalAveragePool", {"x"}, {"avg"});
    m.node("GlobalMaxPool", {"x"}, {"max"});
    m.output("avg");
    m.output("max");
    expect_neon_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 3)}});
  }
}

}  // namespace
}  // namespace loom::neon_testing
