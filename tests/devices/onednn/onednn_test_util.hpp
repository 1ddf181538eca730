// Shared helpers of the onednn device tests: run options that keep every node on onednn, and
// one-liners for the common single-input models.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

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

// The steps the onednn device compiled `m` into (verbose=1, with `device_options`), without the
// memory summary.
inline std::vector<std::string> compiled_steps(
    const ModelBuilder& m, const std::vector<std::pair<std::string, Tensor>>& inputs,
    const std::string& device_options = "") {
  std::vector<std::string> steps;
  std::string options = device_options.empty() ? "verbose=1" : device_options + ";verbose=1";
  for (const std::string& line : run_model_capturing_log(m, inputs, onednn_only(options), "onednn"))
    if (line.rfind("memory:", 0) != 0) steps.push_back(line);
  return steps;
}

// A model with one float input "x" of `shape` that onednn must refuse: onednn alone fails with
// an error naming `reason`; with `run_with_fallback`, onednn,cpu runs it (the node on cpu) and
// matches cpu.
inline void expect_refused(const ModelBuilder& m, const std::vector<int64_t>& shape,
                           const std::string& reason, bool run_with_fallback = true) {
  SCOPED_TRACE("refused for: " + reason);
  std::filesystem::path path = m.save();
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, shape, 3);
  try {
    run_model(path, {{"x", x}}, onednn_only());
    ADD_FAILURE() << "onednn claimed the node";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  if (!run_with_fallback) return;
  RunOptions fallback;
  fallback.devices = "onednn,cpu";
  fallback.threads = 2;
  expect_matches_cpu(m, {{"x", x}}, fallback);
}

}  // namespace loom::onednn_testing
