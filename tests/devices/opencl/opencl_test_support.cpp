#include "opencl_test_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <loom/loom.hpp>
#include <string>

namespace loom::opencl_testing {

std::string opencl_unavailable_reason() {
  static const std::string reason = [] {
    loom::Runtime runtime({device_testing::plugin_dir()}, /*default_paths=*/false);
    struct Found {
      bool plugin = false;
      bool usable = false;
      std::string reasons;
    } found;
    loom_runtime_list_devices(
        runtime.get(),
        [](void* user, const char* family, const loom_device_info_t* info) {
          auto* f = static_cast<Found*>(user);
          if (std::string(family) != "opencl") return;
          f->plugin = true;
          if (info->available)
            f->usable = true;
          else
            f->reasons += std::string(f->reasons.empty() ? "" : "; ") + info->name + ": " +
                          info->unavailable_reason;
        },
        &found);
    if (!found.plugin)
      return std::string("the opencl plugin is not in ") + device_testing::plugin_dir();
    return found.usable ? std::string() : found.reasons;
  }();
  return reason;
}

device_testing::RunOptions on_opencl() {
  device_testing::RunOptions options;
  options.devices = "opencl";
  options.no_fallback = true;
  return options;
}

}  // namespace loom::opencl_testing

// The program cache must never land in the user's home: without XDG_CACHE_HOME from the test
// driver, use a directory under the system temp dir.
int main(int argc, char** argv) {
  if (!std::getenv("XDG_CACHE_HOME")) {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "loom-opencl-test-cache";
    std::filesystem::create_directories(dir);
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
