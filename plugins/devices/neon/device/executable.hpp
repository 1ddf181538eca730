// A compiled subgraph of the neon device. compile prepares every node once (attributes read,
// constant weights packed for the GEMM micro-kernel) and records when each value dies; run
// binds the inputs without copying, runs the ops in order on the device's threads and drops
// intermediates after their last use. Between ops that have an NC4HW4 variant, 4-D values stay
// packed by 4 channels; compile plans the layout of every value and inserts the conversions
// where a value enters or leaves the subgraph or meets an op without a pack4 variant. The core's
// view is only valid during compile, so the executable keeps its own copy of what it needs
// (constants' data, which the ABI keeps valid while the executable lives, is borrowed).
#pragma once

#include <loom/plugin.h>

#include <loom/device_kit.hpp>
#include <loom/plugin.hpp>
#include <loom/thread_pool.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/tensor.hpp"
#include "ops/op.hpp"

namespace loom::neon {

class Executable final : public sdk::kit::Executable {
 public:
  Executable(const loom_graph_t& graph, sdk::ThreadPool& pool, const CompileOptions& options);

  // The ABI's run (the kit has checked counts, dtypes and buffer ranges): runs the subgraph and
  // hands its outputs over, sharing the memory the run made.
  void run(const loom_run_args_t& args) override;

  // Inputs follow the subgraph's input order; returns its outputs in order.
  // Polls `control` before every step: a cancelled run or one past its deadline stops there.
  std::vector<Tensor> run_graph(std::span<const loom_tensor_t> inputs,
                                const sdk::RunControl& control) const;
  size_t num_outputs() const { return outputs_.size(); }

  // The layout plan, for the debug log and tests: nodes that run in NC4HW4 and the pack and
  // unpack conversions inserted between values and their consumers.
  struct LayoutStats {
    size_t nodes = 0, packed_nodes = 0, packs = 0, unpacks = 0;
  };
  const LayoutStats& layout_stats() const { return layout_stats_; }

 private:
  struct Step {
    std::unique_ptr<Op> op;
    std::string label;  // "<OpType> node '<name>'"
    // For profiled runs: the node it computes (an index of the compiled graph's nodes), or -1
    // for a layout conversion the device inserted; its name and how it runs.
    int32_t node = -1;
    std::string name, detail;
    std::vector<int32_t> inputs, outputs;  // value slots (see num_values_)
    std::vector<int32_t> release_after;    // values whose last use is this step
  };
  struct Input {
    int32_t value;
    std::string name;
    int32_t rank;               // -1 unknown
    std::vector<int64_t> dims;  // -1 unknown extent
  };

  // Decides which nodes run packed and appends the steps, conversions included.
  void plan_layouts(const loom_graph_t& graph, std::vector<Step> node_steps);

  sdk::ThreadPool& pool_;
  // Value v lives in slot v in the layout its producer writes; slot v + num_values_ holds its
  // copy converted to the other layout, made once before the first step that needs it.
  size_t num_values_ = 0;
  LayoutStats layout_stats_;
  std::vector<Tensor> constants_;  // per value; data == nullptr if not a constant
  std::vector<Input> inputs_;
  std::vector<int32_t> outputs_;  // slots
  std::vector<std::string> output_names_;
  std::vector<Step> steps_;
};

}  // namespace loom::neon
