// Shared helpers of the onednn device tests: run options that keep every node on onednn, and
// one-liners for the common single-input models.
#pragma once

#include <string>

#include "device_test_support.hpp"

namespace loom::onednn_testing {

using namespace loom::device_testing;

// onednn alone (no fallback: a node it refuses fails the test), two threads.
inline RunOptions onednn_only(const std::string& device_options = "") {
  RunOptions o;
  o.devices = "onednn";
  o.no_fallback = true;
  o.threads = 2;
  o.device_options = device_options;
  return o;
}

// Runs a model with one float input "x" of `shape` on onednn and on cpu and compares.
inline void check_unary_model(const ModelBuilder& m, std::vector<int64_t> shape, uint32_t seed = 1,
                              const std::string& device_options = "",
                              const Tolerance* tolerance = nullptr) {
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, seed)}},
                     onednn_only(device_options), tolerance);
}

}  // namespace loom::onednn_testing
