// Pooling against the cpu device: MaxPool/AveragePool with strides, pads, dilations,
// ceil_mode, count_include_pad, auto_pad, 1-D; GlobalAveragePool/GlobalMaxPool.
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

// Cases name only the fields they set (designated initializers); GCC 12 still warns about the
// omitted ones, which keep their defaults by design.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

struct PoolCase {
  std::string name;
  std::string op;
  std::vector<int64_t> x, kernel, strides, pads, dilations;
  int64_t ceil_mode = 0, count_include_pad = 0;
  std::string auto_pad;
};

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, MatchesCpu) {
  LOOM_REQUIRE_OPENCL();
  const PoolCase& c = GetParam();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, c.x);
  NodeRef node = m.node(c.op, {"x"}, {"y"});
  node.ints("kernel_shape", c.kernel);
  if (!c.strides.empty()) node.ints("strides", c.strides);
  if (!c.pads.empty()) node.ints("pads", c.pads);
  if (!c.dilations.empty()) node.ints("dilations", c.dilations);
  if (c.ceil_mode) node.i("ceil_mode", 1);
  if (c.count_include_pad) node.i("count_include_pad", 1);
  if (!c.auto_pad.empty()) node.s("auto_pad", c.auto_pad);
  m.output("y");
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, c.x, 1)}}, on_opencl());
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolTest,
                         ::testing::Values(PoolCase{.name = "MaxResNetStem",
                                                    .op = "MaxPool",
                                                    .x = {1, 8, 17, 17},
                                                    .kernel = {3, 3},
                                                    .strides = {2, 2},
                                                    .pads = {1, 1, 1, 1}},
                                           PoolCase{.name = "MaxCeilMode",
                                                    .op = "MaxPool",
                                                    .x = {2, 3, 10, 9},
                                                    .kernel = {3, 3},
                                                    .strides = {2, 2},
                                                    .ceil_mode = 1},
                                           PoolCase{.name = "MaxDilated",
                                                    .op = "MaxPool",
                                                    .x = {1, 2, 11, 11},
                                                    .kernel = {2, 2},
                                                    .strides = {1, 1},
                                                    .dilations = {2, 2}},
                                           PoolCase{.name = "MaxAutoPadSameUpper",
                                                    .op = "MaxPool",
                                                    .x = {1, 2, 7, 8},
                                                    .kernel = {3, 3},
                                                    .strides = {2, 2},
                                                    .ceil_mode = 0,
                                                    .count_include_pad = 0,
                                                    .auto_pad = "SAME_UPPER"},
                                           PoolCase{.name = "MaxOneDimensional",
                                                    .op = "MaxPool",
                                                    .x = {2, 3, 15},
                                                    .kernel = {4},
                                                    .strides = {3},
                                                    .pads = {1, 2}},
                                           PoolCase{.name = "AveragePadsExcluded",
                                                    .op = "AveragePool",
                                                    .x = {1, 4, 9, 9},
                                                    .kernel = {3, 3},
                                                    .strides = {2, 2},
                                                    .pads = {1, 1, 1, 1}},
                                           PoolCase{.name = "AveragePadsIncluded",
                                                    .op = "AveragePool",
                                                    .x = {1, 4, 9, 9},
                                                    .kernel = {3, 3},
                                                    .strides = {2, 2},
                                                    .pads = {1, 1, 1, 1},
                                                    .ceil_mode = 0,
                                                    .count_include_pad = 1},
                                           PoolCase{.name = "AverageAsymmetricPads",
                                                    .op = "AveragePool",
                                                    .x = {1, 2, 8, 7},
                                                    .kernel = {2, 3},
                                                    .strides = {1, 2},
                                                    .pads = {0, 1, 1, 2},
                                                    .ceil_mode = 0,
                                                    .count_include_pad = 1},
                                           PoolCase{.name = "AverageCeilMode",
                                                    .op = "AveragePool",
                                                    .x = {1, 3, 10, 10},
                                                    .kernel = {3, 3},
                                                    .strides = {3, 3},
                                                    .ceil_mode = 1},
                                           PoolCase{.name = "AverageOneDimensional",
                                                    .op = "AveragePool",
                                                    .x = {1, 2, 13},
                                                    .kernel = {3},
                                                    .strides = {2},
                                                    .pads = {1, 1}}),
                         [](const auto& info) { return info.param.name; });

TEST(OpenclPool, GlobalPools) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{2, 5, 7, 7}, std::vector<int64_t>{1, 3, 130},
          std::vector<int64_t>{1, 4, 1, 1}}) {
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, shape);
      m.node(op, {"x"}, {"y"});
      m.output("y");
      SCOPED_TRACE(op);
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 3)}}, on_opencl());
    }
}

}  // namespace
}  // namespace loom::device_testing
