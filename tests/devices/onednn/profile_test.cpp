// Plugin ABI 1.5 profiling: every step the onednn device runs is reported with its nodes and times
// (tests/devices/common/profile_cases.cpp).
#include <gtest/gtest.h>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

TEST(DeviceProfile, OnednnReportsEveryStep) {
  expect_steps_profiled("onednn", /*fuses_conv_relu=*/true);
}

}  // namespace
}  // namespace loom::device_testing
