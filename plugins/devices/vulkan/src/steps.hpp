// The recorded steps of an Executable: built by its SubgraphBuilder (executable.cpp), recorded
// into command buffers and submitted by executable_run.cpp.
#pragma once

#include <array>
#include <string>
#include <variant>
#include <vector>

#include "executable.hpp"

namespace loom::vulkan {

struct DispatchStep {
  const Pipeline* pipeline = nullptr;
  std::vector<Loc> bindings;
  std::array<uint32_t, 3> groups{};
  VkDescriptorSet set = VK_NULL_HANDLE;
  std::array<uint32_t, kMaxBindings> words{};  // push constants: the bindings' element offsets
};
struct CopyStep {
  Loc src, dst;
  uint64_t bytes = 0;
};
struct Executable::Step {
  std::variant<DispatchStep, CopyStep> what;
  // For profiled runs: the nodes of the compiled graph the step computes (its node and those
  // fused into it as epilogues), none for a conversion of the device's own (fp16 storage of
  // inputs and outputs); the first node's name or what the step does; the pipeline's name.
  std::vector<int32_t> nodes;
  std::string name, detail;
};

}  // namespace loom::vulkan
