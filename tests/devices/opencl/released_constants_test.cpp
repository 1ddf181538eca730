// Weights the opencl device uploads at compile are handed back to the core (plugin ABI 1.3's
// constant_copied), which frees its bytes: a session then holds each weight once, on the device
// (device_test_support's expect_copied_weights_released tells what is checked).
#include <gtest/gtest.h>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(OpenclReleasedConstants, UploadedWeightsAreFreedAndAnswersStay) {
  LOOM_REQUIRE_OPENCL();
  expect_copied_weights_released("opencl");
}

// A symbolic batch and image size: every shape gets a plan of its own, wholly on opencl.
TEST(OpenclReleasedConstants, SymbolicShapesArePlannedPerShapeOnTheDevice) {
  LOOM_REQUIRE_OPENCL();
  expect_symbolic_model_runs_on("opencl");
}

// The plans of a symbolic model's shapes and a second session upload each weight once: they
// share the device buffers (loom/shared_constants.hpp).
TEST(OpenclReleasedConstants, PlansAndSessionsShareTheUploadedWeights) {
  LOOM_REQUIRE_OPENCL();
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = "opencl";
  o.no_fallback = true;
  expect_plans_share_weights(o);
}

// Models hostile at run time (docs/limits.md) with opencl first in the device list.
TEST(OpenclReleasedConstants, HostileRuntimeModelsEndInAClearError) {
  LOOM_REQUIRE_OPENCL();
  expect_hostile_runtime_models_fail_cleanly("opencl");
}

// opencl polls between chunks of kStepsPerPoll kernels, staying at most two chunks ahead.
TEST(OpenclReleasedConstants, ALongSubgraphStopsWhenCancelled) {
  LOOM_REQUIRE_OPENCL();
  expect_long_subgraph_cancelled("opencl");
}

}  // namespace
}  // namespace loom::device_testing
