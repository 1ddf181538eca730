// Plugin ABI 1.5 profiling on the cpu reference device: one step per node, and a Loop reported
// as its own node, never under its body's node indices (profile_cases.cpp).
#include <gtest/gtest.h>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(DeviceProfile, CpuReportsEveryStep) {
  expect_steps_profiled("cpu", /*fuses_conv_relu=*/false);
}

TEST(DeviceProfile, CpuReportsTheLoopNodeOnce) {
  expect_control_flow_profiled("cpu");
}

}  // namespace
}  // namespace loom::device_testing
