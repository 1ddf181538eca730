// Shared by the neon tests: run a model on the neon device alone (no fallback, so every node
// must be claimed by neon) and compare with the cpu reference device.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "device_test_support.hpp"

namespace loom::neon_testing {

using device_testing::float_tensor;
using device_testing::gemm_input_shape;
using device_testing::gemm_model;
using device_testing::GemmShape;
using device_testing::ModelBuilder;
using device_testing::random_tensor;
using device_testing::RunOptions;
using device_testing::Tensor;
using Inputs = std::vector<std::pair<std::string, Tensor>>;

inline RunOptions on_neon(int threads = 3) {
  RunOptions o;
  o.devices = "neon";
  o.no_fallback = true;
  o.threads = threads;  // an odd count, so chunking edge cases are exercised
  return o;
}

// Runs on neon (every node must be placed there) and EXPECTs the outputs to match cpu.
inline void expect_neon_matches_cpu(const ModelBuilder& m, const Inputs& inputs) {
  device_testing::expect_matches_cpu(m, inputs, on_neon());
}

}  // namespace loom::neon_testing
