// Activations (eltwise primitives) and arithmetic with numpy broadcasting (binary primitives)
// on the onednn device, standalone and on a blocked conv output.
#include <gtest/gtest.h>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

TEST(OnednnEltwise, Activations) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Softplus", "HardSwish"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 5, 7});
    m.node(op, {"x"}, {"y"});
    m.output("y");
    check_unary_model(m, {2, 3, 5, 7});
  }
}

TEST(OnednnEltwise, ActivationsWithAttributes) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4, 33});
  m.node("LeakyRelu", {"x"}, {"a"}).f("alpha", 0.2f);
  m.node("Elu", {"a"}, {"b"}).f("alpha", 0.7f);
  m.output("b");
  check_unary_model(m, {4, 33});
}

TEST(OnednnEltwise, PositiveDomainOps) {
  for (const char* op : {"Sqrt", "Reciprocal"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 17});
    m.node(op, {"x"}, {"y"});
    m.output("y");
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 17}, 1, 0.5, 3.0)}},
                       onednn_only());
  }
}

TEST(OnednnEltwise, ClipAndPowByConstants) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {5, 6});
  m.initializer("lo", float_tensor({}, {-0.25f}));
  m.initializer("two", float_tensor({}, {2.f}));
  m.node("Clip", {"x", "lo"}, {"c"});
  m.node("Pow", {"c", "two"}, {"y"});
  m.output("y");
  check_unary_model(m, {5, 6});
}

TEST(OnednnBinary, BroadcastsBothWays) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    SCOPED_TRACE(op);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    m.input("z", LOOM_DTYPE_FLOAT32, {3, 1, 5});
    m.node(op, {"x", "z"}, {"y"});
    m.output("y");
    expect_matches_cpu(m,
                       {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 1)},
                        {"z", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 5}, 2, 0.5, 2.0)}},
                       onednn_only());
  }
}

TEST(OnednnBinary, BroadcastFirstOperandOfCommutativeOp) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 6});
  m.input("z", LOOM_DTYPE_FLOAT32, {4, 6});
  m.node("Mul", {"x", "z"}, {"y"});
  m.output("y");
  expect_matches_cpu(m,
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 6}, 1)},
                      {"z", random_tensor(LOOM_DTYPE_FLOAT32, {4, 6}, 2)}},
                     onednn_only());
}

TEST(OnednnBinary, ScalarConstantOnEitherSide) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 7});
  m.initializer("one", float_tensor({}, {1.f}));
  m.initializer("k", float_tensor({1}, {-3.f}));
  m.node("Sub", {"one", "x"}, {"a"});
  m.node("Mul", {"a", "k"}, {"b"});
  m.node("Add", {"k", "b"}, {"y"});
  m.output("y");
  check_unary_model(m, {3, 7});
}

TEST(OnednnBinary, VariadicSumAndMax) {
  for (const char* op : {"Sum", "Max"}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 9});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 9}, 2));
    m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, {2, 9}, 3));
    m.node(op, {"x", "b", "c"}, {"y"});
    m.output("y");
    check_unary_model(m, {2, 9});
  }
}

// Add of two conv outputs in a blocked layout, then a per-channel constant multiply.
TEST(OnednnBinary, OnBlockedConvOutputs) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 6, 6});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {32, 16, 1, 1}, 2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {32, 16, 3, 3}, 3));
  m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {32, 1, 1}, 4));
  m.node("Conv", {"x", "w1"}, {"a"});
  m.node("Conv", {"x", "w2"}, {"b"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"a"}, {"ra"});
  m.node("Relu", {"b"}, {"rb"});
  m.node("Add", {"ra", "rb"}, {"c"});
  m.node("Mul", {"c", "s"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 16, 6, 6}, 1, "winograd=off");
}

// Several scalar affine ops after a primitive (regression: oneDNN 2.6 got a binary primitive
// with two eltwise_linear post-ops wrong; consecutive ones are now composed into one, and a
// chain never carries two separate ones).
TEST(OnednnBinary, ChainsOfScalarAffineOps) {
  struct Chain {
    const char* name;
    std::vector<const char*> ops;  // "div", "rsub", "mul", "add", "relu"
  };
  const Chain chains[] = {{"div,rsub", {"div", "rsub"}},
                          {"mul,rsub,add", {"mul", "rsub", "add"}},
                          {"rsub,relu,mul", {"rsub", "relu", "mul"}},
                          {"relu,div,mul", {"relu", "div", "mul"}},
                          {"div,relu,relu", {"div", "relu", "relu"}}};
  for (const Chain& chain : chains)
    for (bool broadcast : {false, true}) {
      SCOPED_TRACE(std::string(chain.name) +
                   (broadcast ? " after a broadcast Sub" : " after a Sub"));
      ModelBuilder m;
      m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 5});
      std::vector<int64_t> b_shape =
          broadcast ? std::vector<int64_t>{1, 1, 1, 5} : std::vector<int64_t>{1, 4, 6, 5};
      m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, b_shape, 7));
      m.node("Sub", {"x", "b"}, {"v0"});
      std::string prev = "v0";
      for (size_t i = 0; i < chain.ops.size(); ++i) {
        std::string op = chain.ops[i], k = "k" + std::to_string(i),
                    out = "v" + std::to_string(i + 1);
        m.initializer(k, float_tensor({}, {2.f + static_cast<float>(i)}));
        if (op == "div") m.node("Div", {prev, k}, {out});
        if (op == "rsub") m.node("Sub", {k, prev}, {out});
        if (op == "mul") m.node("Mul", {prev, k}, {out});
        if (op == "add") m.node("Add", {k, prev}, {out});
        if (op == "relu") m.node("Relu", {prev}, {out});
        prev = out;
      }
      m.output(prev);
      check_unary_model(m, {1, 4, 6, 5});
    }
}

// The same composition on a convolution's post-ops.
TEST(OnednnConvPostOps, ScalarAffineChainAfterConv) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 7, 7});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {16, 8, 3, 3}, 2));
  m.initializer("two", float_tensor({}, {2.f}));
  m.initializer("three", float_tensor({}, {3.f}));
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Div", {"c", "two"}, {"d"});
  m.node("Sub", {"three", "d"}, {"e"});
  m.node("Relu", {"e"}, {"f"});
  m.node("Mul", {"f", "three"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 8, 7, 7});
}

// oneDNN 2.6 has JIT binary kernels for a few broadcast forms only; others (Swin-T's
// shifted-window mask added per head: [1,64,3,49,49] + [1,64,1,49,49]) took its reference
// kernel, 50x slower. Adjacent axes that broadcast alike are merged into views that match a
// JIT form. Outputs match cpu and no step is the reference kernel, with a fused Relu too.
TEST(OnednnBinary, BroadcastsOnMergedAxesGetAJitKernel) {
  struct Case {
    std::vector<int64_t> x, z;
  };
  for (const Case& shapes : {Case{{1, 4, 3, 7, 7}, {1, 4, 1, 7, 7}}, Case{{2, 3, 5}, {2, 3, 1}},
                             Case{{2, 3, 4, 5}, {1, 3, 4, 1}}, Case{{2, 3, 4, 5}, {3, 1, 1}}}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      for (bool constant : {true, false}) {
        SCOPED_TRACE(std::string(op) + (constant ? " constant" : " input") + " z of rank " +
                     std::to_string(shapes.z.size()));
        ModelBuilder m;
        m.input("x", LOOM_DTYPE_FLOAT32, shapes.x);
        Tensor z = random_tensor(LOOM_DTYPE_FLOAT32, shapes.z, 2, 0.5, 2.0);
        std::vector<std::pair<std::string, Tensor>> inputs{
            {"x", random_tensor(LOOM_DTYPE_FLOAT32, shapes.x, 1, -1.0, 2.0)}};
        if (constant) {
          m.initializer("z", z);
        } else {
          m.input("z", LOOM_DTYPE_FLOAT32, shapes.z);
          inputs.emplace_back("z", z);
        }
        m.node(op, {"x", "z"}, {"s"});
        m.node("Relu", {"s"}, {"y"});
        m.output("y");
        expect_matches_cpu(m, inputs, onednn_only());
        for (const std::string& step :
             run_model_capturing_log(m, inputs, onednn_only("verbose=1"), "onednn"))
          EXPECT_EQ(step.find("ref:"), std::string::npos) << step;
      }
    }
  }
}

}  // namespace
}  // namespace loom::onednn_testing
