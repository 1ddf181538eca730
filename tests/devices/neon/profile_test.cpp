// Plugin ABI 1.5 profiling: every step the neon device runs is reported with its nodes and times
// (tests/devices/common/profile_cases.cpp).
#include <gtest/gtest.h>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(DeviceProfile, NeonReportsEveryStep) {
  expect_steps_profiled("neon", /*fuses_conv_relu=*/false);
}

}  // namespace
}  // namespace loom::device_testing
