// A compiled subgraph of the neon device. compile prepares every node once (attributes read,
// constant weights packed for the GEMM micro-kernel) and records when each value dies; run
// binds the inputs without copying, runs the ops in order on the device's threads and drops
// intermediates after their last use. The core's view is only valid during compile, so the
// executable keeps its own copy of what it needs (constants' data, which the ABI keeps valid
// while the executable lives, is borrowed).
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/tensor.hpp"
#include "ops/op.hpp"
#include "thread_pool.hpp"

namespace loom::neon {

class Executable {
 public:
  Executable(const loom_graph_t& graph, cpu::ThreadPool& pool, const CompileOptions& options);

  // Inputs follow the subgraph's input order; returns its outputs in order.
  std::vector<Tensor> run(std::span<const loom_tensor_t> inputs) const;
  size_t num_outputs() const { return outputs_.size(); }

 private:
  struct Step {
    std::unique_ptr<Op> op;
    std::string label;  // "<OpType> node '<name>'"
    std::vector<int32_t> inputs, outputs;
    std::vector<int32_t> release_after;  // values whose last use is this step
  };
  struct Input {
    int32_t value;
    std::string name;
    int32_t rank;               // -1 unknown
    std::vector<int64_t> dims;  // -1 unknown extent
  };

  cpu::ThreadPool& pool_;
  size_t num_values_ = 0;
  std::vector<Tensor> constants_;  // per value; data == nullptr if not a constant
  std::vector<Input> inputs_;
  std::vector<int32_t> outputs_;
  std::vector<std::string> output_names_;
  std::vector<Step> steps_;
};

}  // namespace loom::neon
