// QuantizeLinear and DequantizeLinear left between float ops on the onednn device (reorders
// with scale and zero point), and the ops it runs on quantized tensors without dequantizing
// them: MaxPool (its own int8 kernel for 2-D pools), the fused DequantizeLinear + global
// average pool, and the layout ops. Against the cpu reference, within one quantization step
// (quantized_test_util.hpp).
#include <gtest/gtest.h>

#include "quantized_test_util.hpp"

namespace loom::onednn_testing {
namespace {

// A QuantizeLinear alone, float to a uint8 graph output (saturating at both ends).
TEST(OnednnQuantLinear, QuantizeAlone) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 7, 5});
  m.initializer("s", scalar(0.01f));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {}, {100}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"y"});
  m.output("y");
  expect_within_one_step(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 7, 5}, 1, -1.5, 2.0)}},
                         0);
}

// A DequantizeLinear alone, a uint8 graph input to float.
TEST(OnednnQuantLinear, DequantizeAlone) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_UINT8, {2, 3, 7, 5});
  m.initializer("s", scalar(0.05f));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {}, {77}));
  m.node("DequantizeLinear", {"x", "s", "z"}, {"y"});
  m.output("y");
  expect_within_one_step(m, {{"x", random_tensor(LOOM_DTYPE_UINT8, {2, 3, 7, 5}, 1, 0, 255)}},
                         1e-6);
}

// DequantizeLinear -> MaxPool -> QuantizeLinear with the same parameters runs on the uint8
// tensor (the maximum commutes with quantization): the bytes must be the cpu device's exactly,
// and no float step remains (the plain uint8 input is reordered to channels-last and back,
// where oneDNN has a jit int8 pooling, in place of its reference one).
TEST(OnednnQuantLinear, MaxPoolOnQuantized) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_UINT8, {1, 8, 11, 11});
  m.initializer("s", scalar(0.05f));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {}, {77}));
  m.node("DequantizeLinear", {"x", "s", "z"}, {"d"});
  m.node("MaxPool", {"d"}, {"p"})
      .ints("kernel_shape", {3, 3})
      .ints("strides", {2, 2})
      .ints("pads", {1, 1, 1, 1});
  m.node("QuantizeLinear", {"p", "s", "z"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_UINT8, {1, 8, 11, 11}, 1, 0, 255)}};
  expect_within_one_step(m, in, 0);
  std::vector<std::string> steps = compiled_steps(m, in);
  size_t pools = 0;
  for (const std::string& step : steps) {
    pools += step.rfind("MaxPool ", 0) == 0;
    EXPECT_EQ(step.find("f32"), std::string::npos) << step;
    EXPECT_EQ(step.find("uantize"), std::string::npos) << step;
  }
  EXPECT_EQ(pools, 1u);
}

// 2-D max pools of int8/uint8 run the device's own channels-last kernel (max_pool_int8.cpp):
// against cpu for both types, channel counts below, at and across a 64-byte vector (with a
// tail), strides, dilations, asymmetric pads and ceil_mode.
struct QuantPool {
  loom_dtype_t type;
  int64_t channels, size;
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode = 0;
};

void check_quant_pool(const QuantPool& c) {
  const bool s8 = c.type == LOOM_DTYPE_INT8;
  ModelBuilder m;
  m.input("x", c.type, {1, c.channels, c.size, c.size});
  m.initializer("s", scalar(0.05f));
  m.initializer("z", int_tensor(c.type, {}, {s8 ? -128 : 77}));
  m.node("DequantizeLinear", {"x", "s", "z"}, {"d"});
  NodeRef pool = m.node("MaxPool", {"d"}, {"p"});
  pool.ints("kernel_shape", c.kernel).ints("strides", c.strides).ints("pads", c.pads);
  if (!c.dilations.empty()) pool.ints("dilations", c.dilations);
  if (c.ceil_mode) pool.i("ceil_mode", 1);
  m.node("QuantizeLinear", {"p", "s", "z"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{
      {"x",
       random_tensor(c.type, {1, c.channels, c.size, c.size}, 7, s8 ? -128 : 0, s8 ? 127 : 255)}};
  expect_within_one_step(m, in, 0);
  std::string all;
  for (const std::string& step : compiled_steps(m, in)) all += step + "\n";
  EXPECT_NE(all.find("loom max pool int8"), std::string::npos) << all;
}

TEST(OnednnQuantLinear, MaxPoolInt8OwnKernel) {
  check_quant_pool({LOOM_DTYPE_INT8, 24, 16, {2, 2}, {2, 2}, {0, 0, 0, 0}, {}});   // TFLite's
  check_quant_pool({LOOM_DTYPE_UINT8, 64, 15, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}});  // ResNet's
  check_quant_pool({LOOM_DTYPE_UINT8, 70, 9, {3, 2}, {1, 2}, {0, 1, 2, 0}, {}});   // a tail
  check_quant_pool({LOOM_DTYPE_INT8, 130, 11, {3, 3}, {2, 1}, {1, 1, 1, 1}, {2, 2}});
  check_quant_pool({LOOM_DTYPE_INT8, 5, 10, {3, 3}, {2, 2}, {0, 0, 0, 0}, {}, 1});  // ceil
}

// DequantizeLinear -> GlobalAveragePool (a quantized CNN's last feature map) is one pass over
// the int8 tensor (ops_quant.cpp): the same means as the cpu device's float ones, for uint8
// and int8, a plain and a channels-last source (after an int8 convolution), several images;
// the dequantized tensor itself is never made.
TEST(OnednnQuantLinear, DequantizeThenGlobalAveragePool) {
  for (loom_dtype_t type : {LOOM_DTYPE_UINT8, LOOM_DTYPE_INT8}) {
    const bool is_signed = type == LOOM_DTYPE_INT8;
    SCOPED_TRACE(is_signed ? "int8" : "uint8");
    ModelBuilder m;
    m.input("x", type, {3, 40, 5, 7});
    m.initializer("s", scalar(0.05f));
    m.initializer("z", int_tensor(type, {}, {is_signed ? -9 : 77}));
    m.node("DequantizeLinear", {"x", "s", "z"}, {"d"});
    m.node("GlobalAveragePool", {"d"}, {"y"});
    m.output("y");
    std::vector<std::pair<std::string, Tensor>> in{
        {"x", random_tensor(type, {3, 40, 5, 7}, 1, is_signed ? -128 : 0, is_signed ? 127 : 255)}};
    expect_within_one_step(m, in, 1e-5);
    std::vector<std::string> steps = compiled_steps(m, in);
    ASSERT_EQ(steps.size(), 1u) << steps.front();
    EXPECT_NE(steps[0].find("+ GlobalAveragePool [loom]"), std::string::npos) << steps[0];
  }
  // After a quantized convolution (its uint8 output channels-last), as in MobileNetV2.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 6, 6});
  m.initializer("s", scalar(0.02f));
  m.initializer("z", int_tensor(LOOM_DTYPE_UINT8, {}, {10}));
  m.initializer("wq", random_tensor(LOOM_DTYPE_INT8, {32, 16, 1, 1}, 2, -60, 60));
  m.initializer("ws", scalar(0.01f));
  m.initializer("wz", int_tensor(LOOM_DTYPE_INT8, {}, {0}));
  m.initializer("ys", scalar(0.1f));
  m.initializer("yz", int_tensor(LOOM_DTYPE_UINT8, {}, {3}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"xq"});
  m.node("DequantizeLinear", {"xq", "s", "z"}, {"xd"});
  m.node("DequantizeLinear", {"wq", "ws", "wz"}, {"w"});
  m.node("Conv", {"xd", "w"}, {"c"});
  m.node("QuantizeLinear", {"c", "ys", "yz"}, {"cq"});
  m.node("DequantizeLinear", {"cq", "ys", "yz"}, {"cd"});
  m.node("GlobalAveragePool", {"cd"}, {"y"});
  m.output("y");
  std::vector<std::pair<std::string, Tensor>> in{{"x", grid_input({1, 16, 6, 6}, 3, 0.02f, 10)}};
  // The convolution's requantization may round a value one step (0.1) apart from the cpu
  // device's, as expect_within_one_step allows integer outputs: a mean over 36 pixels then
  // moves by 0.1 / 36 for each such value (two allowed here).
  expect_within_one_step(m, in, 2 * 0.1 / 36 + 1e-5);
  bool fused = false;
  for (const std::string& step : compiled_steps(m, in))
    fused = fused || step.find("+ GlobalAveragePool [loom]") != std::string::npos;
  EXPECT_TRUE(fused);
}

// Ops that only move bytes take int8 tensors (TFLite's int8 graphs transpose, reshape and
// concatenate them between QLinearConvs): the bytes must be the cpu device's, on onednn alone.
TEST(OnednnQuantLinear, LayoutOpsOnInt8) {
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_INT8, {2, 3, 4});
  m.input("b", LOOM_DTYPE_INT8, {2, 5});
  m.initializer("shape", int64_tensor({2}, {2, 12}));
  m.node("Transpose", {"a"}, {"t"}).ints("perm", {0, 2, 1});
  m.node("Reshape", {"t", "shape"}, {"r"});
  m.node("Concat", {"r", "b"}, {"y"}).i("axis", 1);
  m.output("y");
  expect_within_one_step(m,
                         {{"a", random_tensor(LOOM_DTYPE_INT8, {2, 3, 4}, 1, -128, 127)},
                          {"b", random_tensor(LOOM_DTYPE_INT8, {2, 5}, 2, -128, 127)}},
                         0);
}

}  // namespace
}  // namespace loom::onednn_testing
