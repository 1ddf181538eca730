// Building the kernel program once per device and keeping the driver's binary on disk, so a
// second start compiles nothing: $XDG_CACHE_HOME/loom/opencl (or ~/.cache/loom/opencl), one
// file per (device, vendor, driver version, build options, kernel source) hash.
#pragma once

#include <CL/cl.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "cl_api.hpp"
#include "discovery.hpp"

namespace loom::opencl {

struct ProgramBuild {
  ProgramHandle program;
  bool from_cache = false;
  double milliseconds = 0;           // wall time of loading or compiling
  std::filesystem::path cache_file;  // empty when there is no cache directory
};

// The cache directory, or an empty path when neither XDG_CACHE_HOME nor HOME is set.
std::filesystem::path program_cache_directory();

// The cache file name for this device, build options and source.
std::string program_cache_key(const DeviceEntry& device, std::string_view options,
                              std::string_view source);

// Loads the program from the cache when a valid binary is there, else compiles `source` and
// stores the binary (failures to store are logged, not fatal). Throws with the build log when
// the source does not compile.
ProgramBuild build_program(cl_context context, const DeviceEntry& device, std::string_view source,
                           const std::string& options);

}  // namespace loom::opencl
