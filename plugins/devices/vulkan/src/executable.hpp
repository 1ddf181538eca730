// A compiled subgraph: its memory (arena at the core's planned offsets, constants, private
// slots for inputs and outputs), the dispatches recorded once into command buffers of
// kStepsPerSegment steps each, and the per-run transfers of inputs and outputs.
#pragma once

#include <loom/plugin.h>
#include <vulkan/vulkan.h>

#include <loom/device_kit.hpp>
#include <loom/plugin.hpp>
#include <memory>
#include <string>
#include <vector>

#include "builder.hpp"
#include "context.hpp"

namespace loom::vulkan {

// Steps per recorded command buffer. A run submits the segments one after the other, staying
// at most two ahead of the device, and looks at its cancel flag and deadline between them
// (loom_run_control_t.poll): a cancelled run stops within two segments, not at the subgraph's end.
constexpr size_t kStepsPerSegment = 8;

class Executable final : public sdk::kit::Executable {
 public:
  Executable(Context& context, const loom_graph_t& graph, size_t arena_size);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const loom_graph_t& graph() const { return graph_; }
  // Copies the inputs in, replays the recorded command buffers, allocates the outputs (with the
  // device's buffers) and copies the results out. Polls `control` between segments.
  void run(std::span<const loom_tensor_t> inputs, std::span<loom_tensor_t> outputs,
           const sdk::RunControl& control);
  void run(const loom_run_args_t& args) override {
    run(std::span<const loom_tensor_t>(args.inputs, args.num_inputs),
        std::span<loom_tensor_t>(args.outputs, args.num_outputs), sdk::RunControl(&args));
  }
  // The graph constants copied into the constants buffer at compile: run() never reads their
  // host bytes, so the core may free them (ABI 1.3's constant_copied).
  std::vector<int> uploaded_constants() const;

  struct Step;  // a dispatch or a copy (executable.cpp)

 private:
  friend class SubgraphBuilder;
  void plan_arena();
  void record();
  std::pair<VkBuffer, uint64_t> absolute(const Loc& loc) const;
  VkDescriptorBufferInfo resolve(const Loc& loc, uint32_t* word_offset) const;
  void release();
  // Makes constants_ from constant_bytes_: a shared block with the same bytes, or a new one.
  void share_constants();
  void submit_segments(VkCommandBuffer out_cmd, const sdk::RunControl& control);
  // Records `s` (its dispatch or copy, then a full barrier) into `cmd`; its descriptor set is
  // already written.
  void record_step(VkCommandBuffer cmd, const Step& s);
  // Profiled runs (plugin ABI 1.5): one command buffer per step, recorded on the first one.
  void record_single_steps();
  void submit_profiled(VkCommandBuffer out_cmd, const sdk::RunControl& control);

  Context& context_;
  const loom_graph_t& graph_;
  std::vector<TensorInfo> values_;  // per value id; loc set for the ones this subgraph uses
  std::vector<Step> steps_;
  std::vector<uint8_t> constant_bytes_;
  std::vector<uint64_t> value_offsets_;  // arena offset per value id (plan_arena)
  uint64_t arena_bytes_ = 0, private_bytes_ = 0;
  bool uses_error_word_ = false;
  Loc error_word_;
  Allocation arena_, constants_, private_;
  // Holds constants_, which executables of this context with the same constants share.
  std::shared_ptr<void> shared_constants_;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer transfers_ = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> segments_;  // the recorded steps, kStepsPerSegment each
  std::vector<VkFence> fences_;            // one per segment
  // Profiling: each step in a command buffer of its own, submitted and waited for alone (the
  // segments batch 8 steps, whose times could not be told apart).
  std::vector<VkCommandBuffer> single_steps_;
  // Nodes that dispatch nothing (empty results, values aliased in place), reported by profiled
  // runs as zero-length steps before step `before_step`, so that every node is covered.
  struct StepFreeNode {
    size_t before_step;
    int32_t node;
    std::string name, detail;
  };
  std::vector<StepFreeNode> step_free_nodes_;
};

}  // namespace loom::vulkan
