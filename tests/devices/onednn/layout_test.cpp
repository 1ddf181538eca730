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

// A Transpose that only moves axes of extent 1 (ViT's [1, 197, 768] <-> [197, 1, 768]) is a
// view of the same bytes: no step, as a graph output, between computations and under a
// residual Add.
TEST(OnednnLayout, TransposeOfUnitAxesIsAView) {
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  for (const Case& c : {Case{{1, 5, 8}, {1, 0, 2}}, Case{{5, 1, 8}, {1, 0, 2}},
                        Case{{2, 1, 3, 1}, {1, 0, 3, 2}}, Case{{1, 1, 4}, {2, 1, 0}}}) {
    for (bool between : {false, true}) {
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, c.shape);
      std::string in = "x";
      if (between) {
        m.node("Relu", {"x"}, {"r"});
        in = "r";
      }
      m.node("Transpose", {in}, {between ? "t" : "y"}).ints("perm", c.perm);
      if (between) {
        m.node("Tanh", {"t"}, {"u"});
        m.node("Add", {"u", "t"}, {"y"});
      }
      m.output("y");
      std::vector<std::pair<std::string, Tensor>> inputs{
          {"x", random_tensor(LOOM_DTYPE_FLOAT32, c.shape, 1, -1.0, 1.0)}};
      expect_matches_cpu(m, inputs, onednn_only());
      for (const std::string& step :
           run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn"))
        EXPECT_EQ(step.rfind("Transpose ", 0), std::string::npos) << step;
    }
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

// Concat along channels of blocked conv outputs (a depthwise conv makes the subgraph use
// nChw16c): with batch 1 and whole 16-channel blocks each part is one flat copy into its range
// of the output (oneDNN's concat kernel copied at a few GB/s); a part of 24 channels, a batch
// of 2 or another axis use the concat primitive. All must match cpu. Without AVX-512 the blocks
// are 8 channels wide (nChw8c), so 24 channels are whole blocks and copy flat too.
TEST(OnednnLayout, ConcatOfConvOutputsAsFlatCopies) {
  const bool blocks_of_8 = !__builtin_cpu_supports("avx512f");
  struct Case {
    int64_t batch, left, right, axis;
    bool flat;
  };
  for (const Case& c : {Case{1, 32, 16, 1, true}, Case{1, 32, 24, 1, blocks_of_8},
                        Case{2, 32, 16, 1, false}, Case{1, 32, 32, 2, false}}) {
    SCOPED_TRACE("batch " + std::to_string(c.batch) + " channels " + std::to_string(c.left) + "+" +
                 std::to_string(c.right) + " axis " + std::to_string(c.axis));
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {c.batch, 16, 7, 7});
    m.initializer("wd", random_tensor(LOOM_DTYPE_FLOAT32, {16, 1, 3, 3}, 2));
    m.initializer("wl", random_tensor(LOOM_DTYPE_FLOAT32, {c.left, 16, 1, 1}, 3));
    m.initializer("wr", random_tensor(LOOM_DTYPE_FLOAT32, {c.right, 16, 3, 3}, 4));
    m.node("Conv", {"x", "wd"}, {"d"}).i("group", 16).ints("pads", {1, 1, 1, 1});
    m.node("Conv", {"d", "wl"}, {"l"});
    m.node("Conv", {"d", "wr"}, {"r"}).ints("pads", {1, 1, 1, 1});
    m.node("Concat", {"l", "r"}, {"cat"}).i("axis", c.axis);
    m.node("Relu", {"cat"}, {"y"});
    m.output("y");
    std::vector<std::pair<std::string, Tensor>> inputs{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, {c.batch, 16, 7, 7}, 1)}};
    expect_matches_cpu(m, inputs, onednn_only("winograd=off"));
    size_t parts = 0, primitives = 0;
    for (const std::string& step :
         run_model_capturing_log(m, inputs, onednn_only("verbose=1;winograd=off"), "onednn")) {
      if (step.rfind("Concat ", 0) != 0) continue;
      (step.find(" part ") != std::string::npos ? parts : primitives) += 1;
    }
    EXPECT_EQ(parts, c.flat ? 2u : 0u);
    EXPECT_EQ(primitives, c.flat ? 0u : 1u);
  }
}

// Dropout is a view when it drops nothing: in inference, and in training mode with a ratio of
// 0 (Swin-T's attention exports that); the mask output, when nothing reads it, is omitted by
// the core. Training mode with another ratio stays on cpu (it is random).
TEST(OnednnLayout, DropoutThatDropsNothing) {
  Tensor yes{LOOM_DTYPE_BOOL, {}, {1}};
  for (float ratio : {0.f, 0.3f}) {
    SCOPED_TRACE(ratio);
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4});
    m.initializer("ratio", float_tensor({}, {ratio}));
    m.initializer("training", yes);
    m.node("Dropout", {"x", "ratio", "training"}, {"d", "mask"});
    m.node("Relu", {"d"}, {"y"});
    m.output("y");
    if (ratio == 0.f)
      check_unary_model(m, {2, 3, 4});
    else
      expect_refused(m, {2, 3, 4}, "Dropout in training mode", /*run_with_fallback=*/false);
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

// Reductions over one range of axes that oneDNN would run with its reference kernel run on the
// device's own ([outer, R, inner] rows), each matching cpu: a mean pooling's middle axis, the
// last axis, a range with an axis of extent 1 inside, and one large enough to split over
// threads with a partial last block of 256. No step is oneDNN's reference reduction.
TEST(OnednnReduce, RangesOfAxesRunTheOwnKernel) {
  struct Case {
    std::vector<int64_t> x, axes;
  };
  for (const Case& c : {Case{{2, 32, 384}, {1}}, Case{{3, 7}, {1}},
                        Case{{2, 5, 1, 6, 9}, {1, 2, 3}}, Case{{3, 50, 700}, {1}}})
    for (const char* op :
         {"ReduceMean", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare"}) {
      SCOPED_TRACE(std::string(op) + " of " + std::to_string(c.x.size()) + "-D over " +
                   std::to_string(c.axes.size()) + " axes");
      ModelBuilder m(13);
      m.input("x", LOOM_DTYPE_FLOAT32, c.x);
      // ReduceSum takes its axes as an input from opset 13, the others as an attribute.
      const bool axes_input = std::string(op) == "ReduceSum";
      if (axes_input)
        m.initializer("axes", int64_tensor({static_cast<int64_t>(c.axes.size())}, c.axes));
      NodeRef n = m.node(
          op, axes_input ? std::vector<std::string>{"x", "axes"} : std::vector<std::string>{"x"},
          {"y"});
      n.i("keepdims", 0);
      if (!axes_input) n.ints("axes", c.axes);
      m.output("y");
      const std::vector<std::pair<std::string, Tensor>> in{
          {"x", random_tensor(LOOM_DTYPE_FLOAT32, c.x, 1, 0.9, 1.1)}};
      expect_matches_cpu(m, in, onednn_only());
      // Either oneDNN has a real kernel for it, or the device's own runs: never the reference.
      bool reduced = false;
      for (const std::string& step :
           run_model_capturing_log(m, in, onednn_only("verbose=1"), "onednn"))
        if (step.rfind(std::string(op) + " ", 0) == 0) {
          reduced = true;
          EXPECT_EQ(step.find("ref:"), std::string::npos) << step;
        }
      EXPECT_TRUE(reduced);
      if (c.x.size() == 3 && c.x[1] >= 32) {
        SCOPED_TRACE("a middle axis, which oneDNN 2.6 reduces with its reference kernel");
        bool own = false;
        for (const std::string& step :
             run_model_capturing_log(m, in, onednn_only("verbose=1"), "onednn"))
          own |= step.find("[loom reduce]") != std::string::npos;
        EXPECT_TRUE(own);
      }
    }
}

}  // namespace
}  // namespace loom::onednn_testing
