// Plugin ABI 1.5 profiling: every step the vulkan device runs is reported with its nodes and times
// (tests/devices/common/profile_cases.cpp).
#include <gtest/gtest.h>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(DeviceProfile, VulkanReportsEveryStep) {
  expect_steps_profiled("vulkan", /*fuses_conv_relu=*/true);
}

}  // namespace
}  // namespace loom::device_testing
