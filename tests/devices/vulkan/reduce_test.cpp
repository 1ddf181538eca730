// Reduce* over single axes, several axes, all axes, with and without keepdims.
#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(VulkanReduce, EveryOpOverSeveralAxisSets) {
  LOOM_SKIP_WITHOUT_VULKAN();
  const std::vector<int64_t> shape = {3, 4, 5, 6};
  const std::vector<std::vector<int64_t>> axis_sets = {{1}, {-1}, {0, 2}, {1, 3}, {}};
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    bool positive = std::string(op) == "ReduceLogSum" || std::string(op) == "ReduceProd";
    for (const auto& axes : axis_sets) {
      for (int64_t keep : {0, 1}) {
        ModelBuilder m(13);
        m.input("x", LOOM_DTYPE_FLOAT32, shape);
        std::vector<std::string> in = {"x"};
        bool axes_input = std::string(op) == "ReduceSum";  // an input from opset 13
        if (axes_input && !axes.empty()) {
          m.initializer("axes", int64_tensor({static_cast<int64_t>(axes.size())}, axes));
          in.push_back("axes");
        }
        NodeRef n = m.node(op, in, {"y"});
        n.i("keepdims", keep);
        if (!axes_input && !axes.empty()) n.ints("axes", axes);
        m.output("y");
        SCOPED_TRACE(std::string(op) + " axes " + std::to_string(axes.size()) + " keepdims " +
                     std::to_string(keep));
        expect_matches_cpu(m,
                           {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 2, positive ? 0.5 : -2,
                                                positive ? 1.5 : 2)}},
                           on_vulkan());
      }
    }
  }
}

}  // namespace
}  // namespace loom::device_testing
