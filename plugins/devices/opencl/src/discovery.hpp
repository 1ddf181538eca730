// Finding OpenCL devices: every device of every platform the ICD loader knows, in a stable
// order (platform, then device), and the choice of the best one for "--device opencl".
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom::opencl {

struct DeviceEntry {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string name, vendor, driver_version, device_version, platform_name, platform_version;
  cl_device_type type = 0;
  uint64_t global_memory = 0;
  uint64_t local_memory = 0;
  uint64_t max_alloc = 0;
  size_t max_work_group = 0;
  uint32_t compute_units = 0;
  bool fp16 = false;
  bool available = true;
  bool compiler = true;

  bool is_gpu() const { return (type & CL_DEVICE_TYPE_GPU) != 0; }
  // "why not usable", or "" when usable.
  std::string unusable_reason() const;
  // One line for --list-devices: name, vendor, driver, memory, fp16.
  std::string describe() const;
};

struct Discovery {
  std::vector<DeviceEntry> devices;
  std::string error;  // why there are none, when devices is empty
};

// Never throws: a missing driver or platform ends up in `error`.
Discovery discover_devices();

// Index of the best usable device: a GPU first (most compute units), then any other; -1 if
// none is usable.
int best_device(const std::vector<DeviceEntry>& devices);

}  // namespace loom::opencl
