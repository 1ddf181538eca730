// Reduce* against the cpu device: every op over one axis, several axes, all axes, without
// keepdims, and with the axes as an input (ReduceSum opset 13, the others opset 18).
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

const char* const kReduceOps[] = {"ReduceSum",    "ReduceMean",     "ReduceMax", "ReduceMin",
                                  "ReduceProd",   "ReduceL1",       "ReduceL2",  "ReduceSumSquare",
                                  "ReduceLogSum", "ReduceLogSumExp"};

TEST(OpenclReduce, AxesAttribute) {
  LOOM_REQUIRE_OPENCL();
  struct Case {
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  for (const char* op : kReduceOps)
    for (const Case& c : {Case{{1}, 1}, Case{{0, 2}, 0}, Case{{}, 1}, Case{{-1}, 0}}) {
      ModelBuilder m(13);
      m.input("x", LOOM_DTYPE_FLOAT32, {3, 4, 5});
      std::vector<std::string> inputs = {"x"};
      if (std::string(op) == "ReduceSum" && !c.axes.empty()) {
        m.initializer("axes", int64_tensor({static_cast<int64_t>(c.axes.size())}, c.axes));
        inputs.push_back("axes");
      }
      NodeRef node = m.node(op, inputs, {"y"});
      node.i("keepdims", c.keepdims);
      if (std::string(op) != "ReduceSum" && !c.axes.empty()) node.ints("axes", c.axes);
      m.output("y");
      SCOPED_TRACE(std::string(op) + " over " + std::to_string(c.axes.size()) + " axes");
      // Positive values keep ReduceLogSum defined and ReduceProd well-scaled.
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 4, 5}, 3, 0.5, 1.5)}},
                         on_opencl());
    }
}

TEST(OpenclReduce, AxesInputAtOpset18) {
  LOOM_REQUIRE_OPENCL();
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceL2"}) {
    ModelBuilder m(18);
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 6, 7});
    m.initializer("axes", int64_tensor({2}, {0, -1}));
    m.node(op, {"x", "axes"}, {"y"});
    m.output("y");
    SCOPED_TRACE(op);
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 6, 7}, 4)}}, on_opencl());
  }
}

TEST(OpenclReduce, NonConstantAxesStayOffTheDevice) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3});
  m.input("axes", LOOM_DTYPE_INT64, {1});
  m.node("ReduceSum", {"x", "axes"}, {"y"});
  m.output("y");
  auto path = m.save();
  EXPECT_THROW(run_model(path,
                         {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)},
                          {"axes", int64_tensor({1}, {1})}},
                         on_opencl()),
               std::runtime_error);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::device_testing
