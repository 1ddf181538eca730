// Weights the vulkan device uploads at compile are handed back to the core (plugin ABI 1.3's
// constant_copied), which frees its bytes: a session then holds each weight once, on the device
// (device_test_support's expect_copied_weights_released tells what is checked).
#include <gtest/gtest.h>

#include "vulkan_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(VulkanReleasedConstants, UploadedWeightsAreFreedAndAnswersStay) {
  LOOM_SKIP_WITHOUT_VULKAN();
  expect_copied_weights_released("vulkan");
}

// A symbolic batch and image size: every shape gets a plan of its own, wholly on vulkan.
TEST(VulkanReleasedConstants, SymbolicShapesArePlannedPerShapeOnTheDevice) {
  LOOM_SKIP_WITHOUT_VULKAN();
  expect_symbolic_model_runs_on("vulkan");
}

// Models hostile at run time (docs/limits.md) with vulkan first in the device list.
TEST(VulkanReleasedConstants, HostileRuntimeModelsEndInAClearError) {
  LOOM_SKIP_WITHOUT_VULKAN();
  expect_hostile_runtime_models_fail_cleanly("vulkan");
}

// vulkan submits its recorded segments of kStepsPerSegment steps one by one and polls between.
TEST(VulkanReleasedConstants, ALongSubgraphStopsWhenCancelled) {
  LOOM_SKIP_WITHOUT_VULKAN();
  expect_long_subgraph_cancelled("vulkan");
}

}  // namespace
}  // namespace loom::device_testing
