// One Conv node with random weights/bias/input, described by its shape and attributes: shared by
// the Conv tests (conv_test.cpp: every path on fixed shapes; conv3x3_test.cpp: Winograd and the
// 3x3 depthwise kernel on random shapes).
#pragma once

#include <string>
#include <vector>

#include "neon_test_util.hpp"

namespace loom::neon_testing {

struct ConvCase {
  std::string name;
  int64_t n, c, h, w, cout, kh, kw, group;
  std::vector<int64_t> strides, pads, dilations;
  bool bias;
  std::string auto_pad = "";
};

inline ModelBuilder conv_model(const ConvCase& k, uint32_t seed) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {k.n, k.c, k.h, k.w});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {k.cout, k.c / k.group, k.kh, k.kw}, seed));
  std::vector<std::string> inputs = {"x", "w"};
  if (k.bias) {
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {k.cout}, seed + 1));
    inputs.push_back("b");
  }
  auto node = m.node("Conv", inputs, {"y"});
  node.i("group", k.group).ints("strides", k.strides).ints("dilations", k.dilations);
  if (k.auto_pad.empty())
    node.ints("pads", k.pads);
  else
    node.s("auto_pad", k.auto_pad);
  m.output("y");
  return m;
}

inline Inputs conv_inputs(const ConvCase& k, uint32_t seed) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {k.n, k.c, k.h, k.w}, seed + 2)}};
}

// Runs the case on neon alone and EXPECTs it to match cpu (within `tolerance` if given).
inline void run_conv(const ConvCase& k, uint32_t seed, const RunOptions& options = on_neon(),
                     const device_testing::Tolerance* tolerance = nullptr) {
  SCOPED_TRACE(k.name);
  device_testing::expect_matches_cpu(conv_model(k, seed), conv_inputs(k, seed), options, tolerance);
}

}  // namespace loom::neon_testing
