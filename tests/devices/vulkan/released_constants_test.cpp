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

// The plans of a symbolic model's shapes upload the weights once: a later plan shares the
// constants block of an earlier one with the same bytes (loom/shared_constants.hpp). (Each
// session has a Vulkan device of its own, so sessions do not share.)
TEST(VulkanReleasedConstants, PlansOfOneSessionShareTheUploadedWeights) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 32, -1, -1});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {32, 32, 3, 3}, 1, -.1, .1));
  m.node("Conv", {"x", "w"}, {"y"}).ints("pads", {1, 1, 1, 1});
  m.output("y");
  auto image = [](int64_t size) {
    return std::vector<std::pair<std::string, Tensor>>{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 32, size, size}, 3)}};
  };
  RunOptions options;
  options.devices = "vulkan";
  options.no_fallback = true;
  std::vector<std::string> uploads;
  for (const std::string& line :
       run_model_capturing_log(m, {image(6), image(9), image(6)}, options, "vulkan"))
    if (line.find("bytes of constants") != std::string::npos) uploads.push_back(line);
  const std::string weights = std::to_string(32 * 32 * 9 * 4);
  ASSERT_EQ(uploads.size(), 2u);  // the third run reuses the first shape's plan
  EXPECT_EQ(uploads[0], weights + " bytes of constants uploaded");
  EXPECT_EQ(uploads[1],
            weights + " bytes of constants shared with another executable of this device");
  // And the plans compute with them.
  expect_matches_cpu(m, image(9), options);
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
