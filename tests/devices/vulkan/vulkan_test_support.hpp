// Shared by the Vulkan device tests: whether a usable Vulkan device exists (else the tests
// skip with the reason) and the run options that pin every node to it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "device_test_support.hpp"

namespace loom::device_testing {

// "" when vulkan:0 is listed and available; else why not.
std::string vulkan_unavailable_reason();

inline RunOptions on_vulkan(std::string device_options = "") {
  RunOptions o;
  o.devices = "vulkan";
  o.no_fallback = true;
  o.device_options = std::move(device_options);
  return o;
}

}  // namespace loom::device_testing

#define LOOM_SKIP_WITHOUT_VULKAN()                                         \
  do {                                                                     \
    std::string why = ::loom::device_testing::vulkan_unavailable_reason(); \
    if (!why.empty()) GTEST_SKIP() << "no usable Vulkan device: " << why;  \
  } while (0)
