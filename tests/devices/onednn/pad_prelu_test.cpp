// Pad (constant mode, constant pads) and PRelu on the onednn device against the cpu device:
// plain and blocked (conv output) sources, every axis, non-zero fill values, int8/uint8 data,
// broadcast slopes; and the forms it refuses (reflect/edge modes, negative or non-constant
// pads, slopes that do not broadcast or are not constants), which run on cpu.
#include <gtest/gtest.h>

#include "onednn_test_util.hpp"
#include "quantized_test_util.hpp"

namespace loom::onednn_testing {
namespace {

// x -> [Conv 1x1 to `conv_channels` (0: none)] -> Pad(pads, value) -> y.
ModelBuilder pad_model(std::vector<int64_t> x, std::vector<int64_t> pads, float value,
                       int64_t conv_channels = 0, std::vector<int64_t> axes = {},
                       const std::string& mode = "constant") {
  ModelBuilder m(axes.empty() ? 17 : 18);  // the axes input is opset 18's
  m.input("x", LOOM_DTYPE_FLOAT32, x);
  std::string in = "x";
  if (conv_channels > 0) {
    std::vector<int64_t> w{conv_channels, x[1]};
    w.resize(x.size(), 1);
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, w, 2));
    m.node("Conv", {"x", "w"}, {"c"});
    in = "c";
  }
  m.initializer("pads", int64_tensor({static_cast<int64_t>(pads.size())}, pads));
  m.initializer("value", float_tensor({}, {value}));
  std::vector<std::string> inputs{in, "pads", "value"};
  if (!axes.empty()) {
    m.initializer("axes", int64_tensor({static_cast<int64_t>(axes.size())}, axes));
    inputs.push_back("axes");
  }
  m.node("Pad", inputs, {"y"}).s("mode", mode);
  m.output("y");
  return m;
}

TEST(OnednnPad, ConstantPadsOnEveryAxis) {
  check_unary_model(pad_model({2, 3, 5, 7}, {0, 1, 2, 0, 1, 0, 3, 2}, 0.f), {2, 3, 5, 7});
  check_unary_model(pad_model({2, 3, 5, 7}, {1, 0, 0, 1, 0, 2, 1, 0}, 1.5f), {2, 3, 5, 7});
  check_unary_model(pad_model({4, 6}, {1, 2, 3, 0}, -2.f), {4, 6});
  check_unary_model(pad_model({3, 4, 5}, {0, 0, 0, 0, 0, 0}, 7.f), {3, 4, 5});
  check_unary_model(pad_model({1, 4, 3, 3, 3}, {0, 0, 1, 0, 0, 0, 0, 0, 1, 2}, 0.f),
                    {1, 4, 3, 3, 3});
}

// The shortcut PAD of TFLite residual blocks: zero channels appended to a conv output (blocked
// where the convolutions are), channel counts a multiple of 16 and not; spatial pads there too.
TEST(OnednnPad, ChannelPadOfAConvOutput) {
  // Blocked (whole blocks fit the view, or the plain fallback), channels-last and oneDNN's
  // own choice of the convolution's output layout.
  for (const std::string options : {"conv_layout=blocked", "conv_layout=any", "conv_layout=auto"}) {
    SCOPED_TRACE(options);
    check_unary_model(pad_model({1, 8, 9, 9}, {0, 0, 0, 0, 0, 8, 0, 0}, 0.f, 24), {1, 8, 9, 9}, 1,
                      options);
    check_unary_model(pad_model({1, 8, 9, 9}, {0, 0, 0, 0, 0, 16, 0, 0}, 0.f, 16), {1, 8, 9, 9}, 1,
                      options);
    check_unary_model(pad_model({2, 8, 6, 5}, {0, 16, 0, 0, 0, 16, 0, 0}, 0.f, 32), {2, 8, 6, 5}, 1,
                      options);
    check_unary_model(pad_model({1, 8, 7, 7}, {0, 0, 1, 1, 0, 0, 2, 2}, 0.f, 16), {1, 8, 7, 7}, 1,
                      options);
    check_unary_model(pad_model({1, 8, 7, 7}, {0, 0, 1, 0, 0, 4, 0, 1}, 3.f, 28), {1, 8, 7, 7}, 1,
                      options);
  }
}

TEST(OnednnPad, AxesInputAndOpset2Attributes) {
  check_unary_model(pad_model({2, 3, 5, 7}, {1, 2, 0, 3}, 0.5f, 0, {1, -1}), {2, 3, 5, 7});
  ModelBuilder m(10);
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4});
  m.node("Pad", {"x"}, {"y"}).ints("pads", {0, 1, 2, 1, 0, 1}).f("value", -1.f);
  m.output("y");
  check_unary_model(m, {2, 3, 4});
}

TEST(OnednnPad, Int8AndUint8Data) {
  for (loom_dtype_t type : {LOOM_DTYPE_INT8, LOOM_DTYPE_UINT8}) {
    ModelBuilder m;
    m.input("x", type, {1, 5, 6, 6});
    m.initializer("pads", int64_tensor({8}, {0, 0, 1, 0, 0, 3, 1, 2}));
    m.initializer("value", int_tensor(type, {}, {type == LOOM_DTYPE_INT8 ? -5 : 7}));
    m.node("Pad", {"x", "pads", "value"}, {"p"});
    m.node("MaxPool", {"p"}, {"y"}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
    m.output("y");
    expect_matches_cpu(m, {{"x", random_tensor(type, {1, 5, 6, 6}, 4, -100, 100)}}, onednn_only());
  }
}

// A plain (dense, unblocked) source is padded by the device's own kernel in one step
// (pad_constant.cpp), no fill and reorder: float and int8, the channel pad of a TFLite shortcut
// on a channels-last int8 tensor (after an int8 max pool), and a tensor big enough for the
// OpenMP team.
TEST(OnednnPad, PlainSourcesUseTheOwnKernel) {
  auto expect_own_kernel = [](const ModelBuilder& m,
                              const std::vector<std::pair<std::string, Tensor>>& in) {
    std::string all;
    size_t own = 0;
    for (const std::string& step : compiled_steps(m, in)) {
      all += step + "\n";
      own += step.find("[loom pad]") != std::string::npos;
    }
    EXPECT_EQ(own, 1u) << all;
    EXPECT_EQ(all.find("fill"), std::string::npos) << all;
  };
  for (const auto& [dims, pads] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{2, 3, 5, 7}, {0, 1, 2, 0, 1, 0, 3, 2}},
           {{1, 3, 300, 300}, {0, 0, 4, 1, 0, 0, 3, 5}}}) {
    ModelBuilder m = pad_model(dims, pads, 1.25f);
    std::vector<std::pair<std::string, Tensor>> in{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, dims, 3)}};
    expect_matches_cpu(m, in, onednn_only());
    expect_own_kernel(m, in);
  }
  // int8 channels-last: DequantizeLinear -> MaxPool -> QuantizeLinear (the own int8 pool, NHWC)
  // -> Pad of the channels with the zero point, as blazeface_like_int8's shortcuts.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_INT8, {1, 24, 16, 16});
  m.initializer("s", scalar(0.05f));
  m.initializer("z", int_tensor(LOOM_DTYPE_INT8, {}, {-128}));
  m.node("DequantizeLinear", {"x", "s", "z"}, {"d"});
  m.node("MaxPool", {"d"}, {"p"}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.node("QuantizeLinear", {"p", "s", "z"}, {"q"});
  m.initializer("pads", int64_tensor({8}, {0, 0, 0, 0, 0, 4, 0, 0}));
  m.initializer("value", int_tensor(LOOM_DTYPE_INT8, {}, {-128}));
  m.node("Pad", {"q", "pads", "value"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_INT8, {1, 24, 16, 16}, 5, -128, 127)}};
  expect_matches_cpu(m, in, onednn_only());
  expect_own_kernel(m, in);
}

TEST(OnednnPad, RefusedForms) {
  expect_refused(pad_model({2, 3, 5, 7}, {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, 0, {}, "reflect"),
                 {2, 3, 5, 7}, "Pad mode 'reflect'");
  expect_refused(pad_model({2, 3, 5, 7}, {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, 0, {}, "edge"),
                 {2, 3, 5, 7}, "Pad mode 'edge'");
  expect_refused(pad_model({2, 3, 5, 7}, {0, 0, -1, 1, 0, 0, 1, 1}, 0.f), {2, 3, 5, 7},
                 "negative pads");
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3});
  m.input("pads", LOOM_DTYPE_INT64, {4});
  m.node("Pad", {"x", "pads"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  try {
    run_model(path,
              {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)},
               {"pads", int64_tensor({4}, {0, 1, 1, 0})}},
              onednn_only());
    ADD_FAILURE() << "onednn claimed a Pad with run-time pads";
  } catch (const std::runtime_error& e) {
    // Placement sees no output shape before it looks at the pads.
    const std::string what = e.what();
    EXPECT_TRUE(what.find("non-constant pads") != std::string::npos ||
                what.find("output shape depends on data") != std::string::npos)
        << what;
  }
  std::filesystem::remove(path);
}

// x -> [Conv] -> PRelu(slope) -> y.
ModelBuilder prelu_model(std::vector<int64_t> x, std::vector<int64_t> slope,
                         int64_t conv_channels = 0) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, x);
  std::string in = "x";
  if (conv_channels > 0) {
    std::vector<int64_t> w{conv_channels, x[1]};
    w.resize(x.size(), 1);
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, w, 2));
    m.node("Conv", {"x", "w"}, {"c"});
    in = "c";
  }
  m.initializer("slope", random_tensor(LOOM_DTYPE_FLOAT32, slope, 5));
  m.node("PRelu", {in, "slope"}, {"y"});
  m.output("y");
  return m;
}

TEST(OnednnPRelu, BroadcastSlopes) {
  check_unary_model(prelu_model({1, 16, 6, 6}, {16, 1, 1}), {1, 16, 6, 6});  // TFLite's form
  check_unary_model(prelu_model({2, 5, 4, 3}, {1}), {2, 5, 4, 3});
  check_unary_model(prelu_model({2, 5, 4, 3}, {5, 4, 3}), {2, 5, 4, 3});
  check_unary_model(prelu_model({2, 5, 4, 3}, {3}), {2, 5, 4, 3});
  check_unary_model(prelu_model({2, 5, 4, 3}, {2, 5, 1, 3}), {2, 5, 4, 3});
  check_unary_model(prelu_model({7, 9}, {9}), {7, 9});
  check_unary_model(prelu_model({3, 4, 10}, {4, 1}), {3, 4, 10});
}

TEST(OnednnPRelu, AfterBlockedConvolutions) {
  for (const std::string options : {"conv_layout=blocked", "conv_layout=any"}) {
    SCOPED_TRACE(options);
    check_unary_model(prelu_model({1, 8, 9, 9}, {24, 1, 1}, 24), {1, 8, 9, 9}, 1, options);
    check_unary_model(prelu_model({1, 8, 9, 9}, {32, 1, 1}, 32), {1, 8, 9, 9}, 1, options);
    check_unary_model(prelu_model({2, 8, 5, 5}, {16, 5, 5}, 16), {2, 8, 5, 5}, 1, options);
  }
}

// A residual block as TFLite orders it: Conv, then the shortcut (MaxPool and a channel Pad of
// the block's input) after it, Add, PRelu. The Conv is emitted after the Pad so that the Add
// is its post-op. (oneDNN 2.6 has no jit convolution with a prelu post-op: PRelu stays a step.)
TEST(OnednnPad, ShortcutMadeAfterTheBlocksConvolution) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 10, 10});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {16, 8, 3, 3}, 2));
  m.node("Conv", {"x", "w"}, {"c"}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
  m.node("MaxPool", {"x"}, {"p"}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.initializer("pads", int64_tensor({8}, {0, 0, 0, 0, 0, 8, 0, 0}));
  m.node("Pad", {"p", "pads"}, {"s"});
  m.node("Add", {"c", "s"}, {"sum"});
  m.initializer("slope", random_tensor(LOOM_DTYPE_FLOAT32, {16, 1, 1}, 5));
  m.node("PRelu", {"sum", "slope"}, {"y"});
  m.output("y");
  check_unary_model(m, {1, 8, 10, 10});
  std::string all;
  size_t apart = 0;
  for (const std::string& step :
       compiled_steps(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 10, 10}, 1)}})) {
    all += step + "\n";
    apart += step.rfind("Add", 0) == 0;
  }
  EXPECT_EQ(apart, 0u) << all;
}

TEST(OnednnPRelu, RefusedForms) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 4});
  m.input("slope", LOOM_DTYPE_FLOAT32, {4});
  m.node("PRelu", {"x", "slope"}, {"y"});
  m.output("y");
  std::filesystem::path path = m.save();
  try {
    run_model(path,
              {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4}, 1)},
               {"slope", random_tensor(LOOM_DTYPE_FLOAT32, {4}, 2)}},
              onednn_only());
    ADD_FAILURE() << "onednn claimed a PRelu with a run-time slope";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("slope is not a constant"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::onednn_testing
