// The onednn device as a whole: its options, bf16 precision, threads, and a small ResNet-like
// network claimed as one subgraph and matching the cpu device.
#include <gtest/gtest.h>

#include <stdexcept>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

ModelBuilder small_network() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 32, 32});
  m.initializer("w0", random_tensor(LOOM_DTYPE_FLOAT32, {16, 3, 3, 3}, 2, -0.3, 0.3));
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 3, 3}, 3, -0.1, 0.1));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {16, 16, 3, 3}, 4, -0.1, 0.1));
  m.initializer("fc", random_tensor(LOOM_DTYPE_FLOAT32, {10, 16}, 5));
  m.initializer("fcb", random_tensor(LOOM_DTYPE_FLOAT32, {10}, 6));
  m.node("Conv", {"x", "w0"}, {"c0"}).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  m.node("Relu", {"c0"}, {"r0"});
  m.node("Conv", {"r0", "w1"}, {"c1"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("Conv", {"r1", "w2"}, {"c2"}).ints("pads", {1, 1, 1, 1});
  m.node("Add", {"c2", "r0"}, {"s"});
  m.node("Relu", {"s"}, {"r2"});
  m.node("GlobalAveragePool", {"r2"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  m.node("Gemm", {"f", "fc", "fcb"}, {"y"}).i("transB", 1);
  m.output("y");
  return m;
}

TEST(OnednnDevice, SmallNetworkMatchesCpuAtAnyThreadCount) {
  for (const char* options : {"threads=1", "threads=2", "winograd=off", "dw_fusion=off",
                              "conv_layout=blocked", "winograd=off;conv_layout=any"})
    check_unary_model(small_network(), {1, 3, 32, 32}, 1, options);
}

TEST(OnednnDevice, RepeatedRunsGiveIdenticalResults) {
  std::filesystem::path path = small_network().save();
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 32, 32}, 9);
  auto a = run_model(path, {{"x", x}}, onednn_only());
  auto b = run_model(path, {{"x", x}}, onednn_only());
  std::filesystem::remove(path);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(compare(a[0], b[0], Tolerance{0, 0}), "");
}

TEST(OnednnDevice, UnknownOptionIsAClearError) {
  std::filesystem::path path = small_network().save();
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 32, 32}, 9);
  for (const char* options :
       {"colour=blue", "precision=f8", "threads=many", "winograd=maybe", "dw_fusion=yes",
        "depthwise=fast", "conv_layout=nchw", "huge_pages=on"}) {
    try {
      run_model(path, {{"x", x}}, onednn_only(options));
      ADD_FAILURE() << "option '" << options << "' was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("onednn device"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(path);
}

// bf16 matmul/conv: compared with the f32 cpu device at bfloat16's tolerance, relative to the
// output's scale. Skipped on CPUs without AVX-512 BF16, where the option is refused.
TEST(OnednnDevice, Bfloat16PrecisionStaysClose) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 16, 64});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {64, 32}, 2, -0.2, 0.2));
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {32}, 3));
  m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, {32}, 4));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "b"}, {"h"});
  m.node("Relu", {"h"}, {"r"});
  m.node("LayerNormalization", {"r", "g"}, {"ln"});
  m.node("Softmax", {"ln"}, {"y"});
  m.output("y");
  Tolerance bf16{5e-2, 2e-2};
  try {
    check_unary_model(m, {2, 16, 64}, 1, "precision=bf16", &bf16);
    check_unary_model(small_network(), {1, 3, 32, 32}, 1, "precision=bf16", &bf16);
    check_unary_model(small_network(), {1, 3, 32, 32}, 1, "precision=bf16;conv_layout=blocked",
                      &bf16);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("AVX-512 BF16") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
}

}  // namespace
}  // namespace loom::onednn_testing
