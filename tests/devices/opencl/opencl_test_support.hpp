// Shared by the opencl device tests: whether an OpenCL device is usable here (the tests skip
// with the reason when not) and the run options that keep every node on the device.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "device_test_support.hpp"

namespace loom::opencl_testing {

// "" when the opencl plugin lists a usable device, else why not.
std::string opencl_unavailable_reason();

// devices "opencl", no fallback: a node the device does not take fails the test.
device_testing::RunOptions on_opencl();

}  // namespace loom::opencl_testing

#define LOOM_REQUIRE_OPENCL()                                                        \
  do {                                                                               \
    std::string loom_reason_ = ::loom::opencl_testing::opencl_unavailable_reason();  \
    if (!loom_reason_.empty()) GTEST_SKIP() << "no OpenCL device: " << loom_reason_; \
  } while (0)
