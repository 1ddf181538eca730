// Views and data movement on the onednn device: Reshape/Flatten/Squeeze/Unsqueeze of blocked
// and plain tensors, Transpose, Concat of mixed layouts, and the Reduce ops.
#include <gtest/gtest.h>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

TEST(OnednnLayout, ReshapeAndFlattenOfBlockedConvOutput) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 5, 5});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {16, 8, 3, 3}, 2));
  m.initializer("shape", int64_tensor({3}, {2, 16, 25}));
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Reshape", {"c", "shape"}, {"r"});
  m.node("Flatten", {"c"}, {"f"}).i("axis", 2);
  m.output("r");
  m.output("f");
  check_unary_model(m, {2, 8, 5, 5}, 1, "winograd=off");
}

TEST(OnednnLayout, SqueezeUnsqueezeIdentity) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 1, 4});
  m.initializer("axes", int64_tensor({1}, {1}));
  m.initializer("axes2", int64_tensor({2}, {0, 3}));
  m.node("Squeeze", {"x", "axes"}, {"s"});
  m.node("Unsqueeze", {"s", "axes2"}, {"u"});
  m.node("Identity", {"u"}, {"y"});
  m.output("y");
  check_unary_model(m, {3, 1, 4});
}

TEST(OnednnLayout, TransposePermutations) {
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{1, 0, 2, 3}, {0, 2, 3, 1}, {3, 2, 1, 0}, {}}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    NodeRef n = m.node("Transpose", {"x"}, {"y"});
    if (!perm.empty()) n.ints("perm", perm);
    m.output("y");
    check_unary_model(m, {2, 3, 4, 5});
  }
}

TEST(OnednnLayout, ConcatOfBlockedAndPlainInputs) {
  for (int64_t axis : {1, -1}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 6, 6});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 1, 1}, 2));
    m.initializer("k", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 6, 6}, 3));
    m.node("Conv", {"x", "w"}, {"c"});
    m.node("Concat", {"c", "x", "k"}, {"y"}).i("axis", axis);
    m.output("y");
    check_unary_model(m, {1, 16, 6, 6});
  }
}

TEST(OnednnReduce, AxesKeepdimsAndOps) {
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceL1", "ReduceL2", "ReduceSumSquare"}) {
    for (int64_t keepdims : {0, 1}) {
      SCOPED_TRACE(std::string(op) + " keepdims " + std::to_string(keepdims));
      ModelBuilder m(13);
      m.input("x", LOOM_DTYPE_FLOAT32, {3, 4, 5});
      NodeRef n = m.node(op, {"x"}, {"y"});
      n.i("keepdims", keepdims);
      if (std::string(op) != "ReduceSum") n.ints("axes", {0, -1});
      m.output("y");
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 4, 5}, 1, 0.5, 1.5)}},
                         onednn_only());
    }
  }
}

}  // namespace
}  // namespace loom::onednn_testing
