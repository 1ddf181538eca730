// Helpers of the quantized onednn tests (quantized_test.cpp, quantized_dynamic_test.cpp):
// VNNI detection, integer tensors and the comparison with the cpu reference within one
// quantization step.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {

// True when the cpu has VNNI (avx512_vnni or avx_vnni in /proc/cpuinfo's flags).
inline bool has_vnni() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, word;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    while (words >> word)
      if (word == "avx512_vnni" || word == "avx_vnni") return true;
    return false;
  }
  return false;
}

// The largest quantized activation the tests feed. Without VNNI oneDNN (like onnxruntime) sums
// pairs of uint8 x int8 products in 16 bits with saturation (VPMADDUBSW), so full-range data
// would not match the exact reference: activations then stay within 0..127 (127 * 128 * 2 <
// 32767). With VNNI the whole uint8 range is used.
inline int max_activation() {
  static const int max = has_vnni() ? 255 : 127;
  return max;
}

// An integer tensor (uint8, int8 or int32) holding `values`.
inline Tensor int_tensor(loom_dtype_t dtype, std::vector<int64_t> shape,
                         std::vector<int64_t> values) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t width = dtype == LOOM_DTYPE_INT32 ? 4 : 1;
  t.bytes.resize(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    int32_t v = static_cast<int32_t>(values[i]);
    if (width == 4)
      std::memcpy(&t.bytes[i * 4], &v, 4);
    else
      t.bytes[i] = static_cast<uint8_t>(v);
  }
  return t;
}

inline Tensor scalar(float v) {
  return float_tensor({}, {v});
}

// Float activations lying exactly on the quantization grid (zero, zero + 1, ... steps), so that
// QuantizeLinear recovers the random integers exactly on both devices: quantized values
// 0..high.
inline Tensor grid_input(std::vector<int64_t> shape, uint32_t seed, float scale, int zero,
                         int high = max_activation()) {
  Tensor q = random_tensor(LOOM_DTYPE_INT32, shape, seed, 0, high);
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, shape, seed);
  for (int64_t i = 0; i < x.elements(); ++i)
    x.data<float>()[i] = static_cast<float>(q.data<int32_t>()[i] - zero) * scale;
  return x;
}

inline double value_at(const Tensor& t, int64_t i) {
  if (t.dtype == LOOM_DTYPE_UINT8) return t.data<uint8_t>()[i];
  if (t.dtype == LOOM_DTYPE_INT8) return t.data<int8_t>()[i];
  return t.data<float>()[i];
}

// Runs `m` on onednn alone and on cpu: float outputs must agree within `atol`, integer outputs
// within 1.
inline void expect_within_one_step(const ModelBuilder& m,
                                   const std::vector<std::pair<std::string, Tensor>>& inputs,
                                   double atol) {
  std::filesystem::path path = m.save();
  RunOptions reference;
  reference.threads = 1;
  std::vector<Tensor> want = run_model(path, inputs, reference);
  std::vector<Tensor> got;
  try {
    got = run_model(path, inputs, onednn_only());
  } catch (const std::runtime_error& e) {
    ADD_FAILURE() << "onednn failed: " << e.what();
  }
  std::filesystem::remove(path);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].dtype, want[o].dtype) << "output " << o;
    ASSERT_EQ(got[o].shape, want[o].shape) << "output " << o;
    double limit = want[o].dtype == LOOM_DTYPE_FLOAT32 ? atol : 1.0, worst = 0;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < got[o].elements(); ++i) {
      double d = std::abs(value_at(got[o], i) - value_at(want[o], i));
      worst = std::max(worst, d);
      if (d > limit && bad++ == 0) first = i;
    }
    EXPECT_EQ(bad, 0) << "output " << o << ": " << bad << " of " << got[o].elements()
                      << " elements differ by more than " << limit << " (worst " << worst
                      << "; first at " << first << ": "
                      << (first >= 0 ? value_at(got[o], first) : 0) << " vs cpu "
                      << (first >= 0 ? value_at(want[o], first) : 0) << ")";
  }
}

// EXPECTs some compiled step to run `op` as an int8 primitive.
inline void expect_int8_step(const ModelBuilder& m,
                             const std::vector<std::pair<std::string, Tensor>>& inputs,
                             const std::string& op, size_t count = 1) {
  size_t found = 0;
  std::string all;
  for (const std::string& step : compiled_steps(m, inputs)) {
    all += step + "\n";
    found += step.rfind(op + " ", 0) == 0 && step.find("int8") != std::string::npos;
  }
  EXPECT_EQ(found, count) << all;
}

}  // namespace loom::onednn_testing
