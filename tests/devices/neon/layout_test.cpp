// The NC4HW4 layout the neon device keeps between its ops: chains of packed ops against the cpu
// reference device (channel counts that are not multiples of 4, odd planes, pads, strides,
// residual adds, per-channel broadcasts, batches), the conversions at the subgraph boundary and
// around an op without a pack4 variant, and the layout plan itself, read from the device's
// debug log ("layout plan: N nodes, K in NC4HW4, P pack and U unpack conversions").
#include <cstdio>

#include "neon_test_util.hpp"

namespace loom::neon_testing {
namespace {

struct LayoutPlan {
  size_t nodes = 0, packed = 0, packs = 0, unpacks = 0;
};

// Runs the model once on neon alone with the debug log captured and returns the layout plan of
// its one neon subgraph.
LayoutPlan layout_plan(const ModelBuilder& m, const Inputs& inputs) {
  device_testing::RunOptions options;
  options.devices = "neon";
  options.no_fallback = true;
  options.threads = 1;
  std::vector<LayoutPlan> plans;
  for (const std::string& message :
       device_testing::run_model_capturing_log(m, inputs, options, "neon")) {
    LayoutPlan p;
    if (std::sscanf(message.c_str(),
                    "layout plan: %zu nodes, %zu in NC4HW4, %zu pack and %zu unpack conversions",
                    &p.nodes, &p.packed, &p.packs, &p.unpacks) == 4)
      plans.push_back(p);
  }
  EXPECT_EQ(plans.size(), 1u) << "one neon subgraph expected";
  return plans.empty() ? LayoutPlan{} : plans.front();
}

// Runs the model on neon, EXPECTs it to match cpu and its layout plan to be `expected`.
void expect_packed_run(const ModelBuilder& m, const Inputs& inputs, LayoutPlan expected) {
  expect_neon_matches_cpu(m, inputs);
  const LayoutPlan got = layout_plan(m, inputs);
  EXPECT_EQ(got.nodes, expected.nodes);
  EXPECT_EQ(got.packed, expected.packed) << "nodes run in NC4HW4";
  EXPECT_EQ(got.packs, expected.packs) << "NCHW -> NC4HW4 conversions";
  EXPECT_EQ(got.unpacks, expected.unpacks) << "NC4HW4 -> NCHW conversions";
}

Tensor weights(std::vector<int64_t> shape, uint32_t seed) {
  return random_tensor(LOOM_DTYPE_FLOAT32, std::move(shape), seed);
}

// x -> conv 1x1 (expand) -> Relu -> depthwise 3x3 -> Clip (ReLU6) -> conv 1x1 (project) ->
// + x -> BatchNorm: an inverted residual block, all packed; x is packed once for both uses.
ModelBuilder inverted_residual(int64_t n, int64_t c, int64_t h, int64_t w, int64_t expand,
                               int64_t stride) {
  const int64_t e = c * expand;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {n, c, h, w});
  m.initializer("w1", weights({e, c, 1, 1}, 1));
  m.initializer("b1", weights({e}, 2));
  m.initializer("wd", weights({e, 1, 3, 3}, 3));
  m.initializer("bd", weights({e}, 4));
  m.initializer("w2", weights({c, e, 1, 1}, 5));
  m.initializer("lo", float_tensor({}, {0.0f}));
  m.initializer("hi", float_tensor({}, {0.5f}));
  for (const char* name : {"scale", "bias", "mean"}) m.initializer(name, weights({c}, 6));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {c}, 7, 0.5, 2.0));
  m.node("Conv", {"x", "w1", "b1"}, {"e"});
  m.node("Relu", {"e"}, {"r"});
  m.node("Conv", {"r", "wd", "bd"}, {"d"})
      .i("group", e)
      .ints("pads", {1, 1, 1, 1})
      .ints("strides", {stride, stride});
  m.node("Clip", {"d", "lo", "hi"}, {"c"});
  m.node("Conv", {"c", "w2"}, {"p"});
  if (stride == 1) {
    m.node("Add", {"p", "x"}, {"s"});
    m.node("BatchNormalization", {"s", "scale", "bias", "mean", "var"}, {"y"});
  } else {
    m.node("BatchNormalization", {"p", "scale", "bias", "mean", "var"}, {"y"});
  }
  m.output("y");
  return m;
}

TEST(NeonLayout, InvertedResidualStaysPacked) {
  struct Shape {
    int64_t n, c, h, w, expand, stride;
  };
  const Shape shapes[] = {{1, 5, 9, 11, 2, 1},  {2, 3, 7, 7, 6, 1},   {1, 1, 5, 6, 5, 1},
                          {1, 17, 8, 13, 1, 1}, {1, 6, 12, 15, 3, 2}, {1, 4, 1, 1, 4, 1}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    SCOPED_TRACE("c=" + std::to_string(s.c) + " " + std::to_string(s.h) + "x" +
                 std::to_string(s.w) + " stride " + std::to_string(s.stride));
    const ModelBuilder m = inverted_residual(s.n, s.c, s.h, s.w, s.expand, s.stride);
    expect_packed_run(m, {{"x", weights({s.n, s.c, s.h, s.w}, seed++)}},
                      {s.stride == 1 ? 7u : 6u, s.stride == 1 ? 7u : 6u, 1, 1});
  }
}

// Packed kernels split work by (image, channel block) and GEMM tiles: the result must not
// depend on the thread count, bit for bit.
TEST(NeonLayout, PackedResultsDoNotDependOnThreads) {
  const ModelBuilder m = inverted_residual(2, 6, 13, 10, 3, 1);
  const auto path = m.save();
  const Inputs inputs = {{"x", weights({2, 6, 13, 10}, 9)}};
  const auto one = device_testing::run_model(path, inputs, on_neon(1));
  const auto four = device_testing::run_model(path, inputs, on_neon(4));
  std::filesystem::remove(path);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(four.size(), 1u);
  EXPECT_EQ(one[0].bytes, four[0].bytes);
}

// A ResNet-like stem and tail: conv 3x3 stride 2 (im2col) -> BN -> Relu -> MaxPool -> conv 3x3
// (Winograd) + residual -> Relu -> AveragePools -> GlobalAveragePool -> Flatten -> Gemm.
TEST(NeonLayout, ConvPoolChainWithResidual) {
  ModelBuilder m;
  const int64_t c = 17;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 23, 19});
  m.initializer("w1", weights({c, 3, 3, 3}, 11));
  m.initializer("w2", weights({c, c, 3, 3}, 12));
  m.initializer("b2", weights({c}, 13));
  m.initializer("wg", weights({10, c}, 14));
  for (const char* name : {"scale", "bias", "mean"}) m.initializer(name, weights({c}, 15));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {c}, 16, 0.5, 2.0));
  m.node("Conv", {"x", "w1"}, {"a"}).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  m.node("BatchNormalization", {"a", "scale", "bias", "mean", "var"}, {"b"});
  m.node("Relu", {"b"}, {"r"});
  m.node("MaxPool", {"r"}, {"p"})
      .ints("kernel_shape", {3, 3})
      .ints("strides", {2, 2})
      .ints("pads", {1, 1, 1, 1});
  m.node("Conv", {"p", "w2", "b2"}, {"q"}).ints("pads", {1, 1, 1, 1});
  m.node("Add", {"q", "p"}, {"s"});
  m.node("Relu", {"s"}, {"t"});
  m.node("AveragePool", {"t"}, {"u"})
      .ints("kernel_shape", {3, 3})
      .ints("pads", {1, 1, 1, 1})
      .i("count_include_pad", 1);
  m.node("AveragePool", {"u"}, {"v"})
      .ints("kernel_shape", {2, 2})
      .ints("strides", {2, 2})
      .i("ceil_mode", 1);
  m.node("GlobalAveragePool", {"v"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  m.node("Gemm", {"f", "wg"}, {"y"}).i("transB", 1);
  m.output("y");
  // Flatten and Gemm take NCHW: the pooled [2, 17, 1, 1] is unpacked once.
  expect_packed_run(m, {{"x", weights({2, 3, 23, 19}, 17)}}, {12, 10, 1, 1});
}

// Squeeze-and-excitation: per-channel [N, C, 1, 1] packed activations and NCHW constants of
// every broadcast form (vector [C, 1, 1], [1, C, 1, 1], scalar) with Mul, Sub, Div and Add.
TEST(NeonLayout, PerChannelAndScalarBroadcasts) {
  ModelBuilder m;
  const int64_t c = 6;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, c, 7, 5});
  m.initializer("w", weights({c, c, 1, 1}, 21));
  m.initializer("ws", weights({3, c, 1, 1}, 22));
  m.initializer("we", weights({c, 3, 1, 1}, 23));
  m.initializer("k3", weights({c, 1, 1}, 24));
  m.initializer("k4", weights({1, c, 1, 1}, 25));
  m.initializer("two", float_tensor({}, {2.0f}));
  m.node("Conv", {"x", "w"}, {"a"});
  m.node("GlobalAveragePool", {"a"}, {"g"});
  m.node("Conv", {"g", "ws"}, {"s1"});
  m.node("Relu", {"s1"}, {"s2"});
  m.node("Conv", {"s2", "we"}, {"s3"});
  m.node("Sigmoid", {"s3"}, {"s"});
  m.node("Mul", {"a", "s"}, {"m"});
  m.node("Sub", {"m", "k3"}, {"d"});
  m.node("Div", {"d", "two"}, {"h"});
  m.node("Add", {"k4", "h"}, {"i"});
  m.node("Div", {"i", "s"}, {"j"});
  m.node("Sub", {"two", "j"}, {"k"});
  m.node("HardSwish", {"k"}, {"y"});
  m.output("y");
  expect_packed_run(m, {{"x", weights({2, c, 7, 5}, 26)}}, {13, 13, 1, 1});
}

// A value that is a subgraph output and feeds packed ops: unpacked for the output only.
TEST(NeonLayout, GraphOutputInTheMiddleOfAChain) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 5, 6, 7});
  m.initializer("w1", weights({6, 5, 1, 1}, 31));
  m.initializer("w2", weights({3, 6, 3, 3}, 32));
  m.node("Conv", {"x", "w1"}, {"a"});
  m.node("Relu", {"a"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"y"}).ints("pads", {1, 1, 1, 1});
  m.output("a");
  m.output("y");
  expect_packed_run(m, {{"x", weights({1, 5, 6, 7}, 33)}}, {3, 3, 1, 2});
}

// Softmax has no pack4 variant: its input is unpacked and its output packed again for the
// packed ops after it.
TEST(NeonLayout, OpWithoutPack4VariantInTheChain) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 7, 5, 9});
  m.initializer("w1", weights({5, 7, 1, 1}, 41));
  m.initializer("w2", weights({7, 5, 1, 1}, 42));
  m.node("Conv", {"x", "w1"}, {"a"});
  m.node("Relu", {"a"}, {"r"});
  m.node("Softmax", {"r"}, {"s"}).i("axis", 3);
  m.node("Conv", {"s", "w2"}, {"b"});
  m.node("Relu", {"b"}, {"y"});
  m.output("y");
  expect_packed_run(m, {{"x", weights({1, 7, 5, 9}, 43)}}, {5, 4, 2, 2});
}

// Ops with a pack4 variant but no packed neighbour stay NCHW: no conversions at all.
TEST(NeonLayout, IsolatedOpsStayNchw) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 6, 5, 5});
  m.initializer("w", weights({4, 6, 3, 3}, 51));
  m.node("Conv", {"x", "w"}, {"a"});
  m.node("Softmax", {"a"}, {"s"}).i("axis", 1);
  m.node("Relu", {"s"}, {"y"});
  m.output("y");
  expect_packed_run(m, {{"x", weights({1, 6, 5, 5}, 52)}}, {3, 0, 0, 0});
}

// The packed depthwise kernel (3x3 register path and the generic kxk path, border pixels)
// over odd planes, strides, dilations and asymmetric pads, followed by a packed Relu.
TEST(NeonLayout, PackedDepthwiseShapes) {
  struct Case {
    int64_t n, c, h, w, k, stride_h, stride_w, dilation;
    std::vector<int64_t> pads;
  };
  const Case cases[] = {
      {1, 5, 7, 7, 3, 1, 1, 1, {1, 1, 1, 1}},   {2, 3, 16, 16, 3, 2, 2, 1, {0, 0, 1, 1}},
      {1, 6, 19, 21, 5, 2, 2, 1, {2, 2, 2, 2}}, {1, 3, 11, 12, 3, 1, 1, 2, {2, 2, 2, 2}},
      {1, 9, 11, 13, 3, 3, 3, 1, {1, 1, 1, 1}}, {1, 2, 3, 4, 3, 1, 1, 1, {1, 1, 1, 1}},
      {1, 4, 5, 67, 3, 1, 2, 1, {1, 1, 1, 1}},  {1, 1, 9, 9, 7, 1, 1, 1, {3, 3, 3, 3}},
      {1, 7, 6, 5, 3, 2, 1, 1, {0, 1, 2, 0}},   {1, 8, 2, 2, 3, 1, 1, 1, {1, 1, 1, 1}},
  };
  uint32_t seed = 60;
  for (const Case& k : cases) {
    SCOPED_TRACE("c=" + std::to_string(k.c) + " " + std::to_string(k.h) + "x" +
                 std::to_string(k.w) + " k" + std::to_string(k.k));
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {k.n, k.c, k.h, k.w});
    m.initializer("w", weights({k.c, 1, k.k, k.k}, seed++));
    m.initializer("b", weights({k.c}, seed++));
    m.node("Conv", {"x", "w", "b"}, {"d"})
        .i("group", k.c)
        .ints("strides", {k.stride_h, k.stride_w})
        .ints("dilations", {k.dilation, k.dilation})
        .ints("pads", k.pads);
    m.node("LeakyRelu", {"d"}, {"y"}).f("alpha", 0.1f);
    m.output("y");
    expect_packed_run(m, {{"x", weights({k.n, k.c, k.h, k.w}, seed++)}}, {2, 2, 1, 1});
  }
}

}  // namespace
}  // namespace loom::neon_testing
