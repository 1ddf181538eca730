// Models hostile at run time on the cpu reference device (docs/limits.md): wrapping shapes,
// endless loops, memory bombs, deadlines and cancellation, absurd options. Every other device's
// tests run the same cases on their device set.
#include <gtest/gtest.h>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(HostileRuntime, CpuEndsEachInAClearError) {
  expect_hostile_runtime_models_fail_cleanly("cpu");
}

TEST(HostileRuntime, CpuStopsALongSubgraphWhenCancelled) {
  expect_long_subgraph_cancelled("cpu");
}

TEST(HostileRuntime, AbsurdSessionOptionsAreRefused) {
  expect_absurd_session_options_refused("cpu");
}

}  // namespace
}  // namespace loom::device_testing
