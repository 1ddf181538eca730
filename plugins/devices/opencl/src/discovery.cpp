#include "discovery.hpp"

#include <string>

#include "cl_api.hpp"

namespace loom::opencl {
namespace {

std::string memory_text(uint64_t bytes) {
  double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[64];
  if (mib >= 1024.0)
    std::snprintf(text, sizeof text, "%.1f GiB", mib / 1024.0);
  else
    std::snprintf(text, sizeof text, "%.0f MiB", mib);
  return text;
}

std::string type_text(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  return "device";
}

DeviceEntry describe_device(cl_platform_id platform, cl_device_id device) {
  DeviceEntry e;
  e.platform = platform;
  e.device = device;
  e.name = device_string(device, CL_DEVICE_NAME);
  e.vendor = device_string(device, CL_DEVICE_VENDOR);
  e.driver_version = device_string(device, CL_DRIVER_VERSION);
  e.device_version = device_string(device, CL_DEVICE_VERSION);
  e.platform_name = platform_string(platform, CL_PLATFORM_NAME);
  e.platform_version = platform_string(platform, CL_PLATFORM_VERSION);
  clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof e.type, &e.type, nullptr);
  cl_ulong mem = 0, local = 0, alloc = 0;
  clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, nullptr);
  clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
  clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof alloc, &alloc, nullptr);
  e.global_memory = mem;
  e.local_memory = local;
  e.max_alloc = alloc;
  size_t wg = 0;
  clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr);
  e.max_work_group = wg;
  cl_uint units = 0;
  clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
  e.compute_units = units;
  cl_bool available = CL_TRUE, compiler = CL_TRUE;
  clGetDeviceInfo(device, CL_DEVICE_AVAILABLE, sizeof available, &available, nullptr);
  clGetDeviceInfo(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, nullptr);
  e.available = available == CL_TRUE;
  e.compiler = compiler == CL_TRUE;
  e.fp16 = (" " + device_string(device, CL_DEVICE_EXTENSIONS) + " ").find(" cl_khr_fp16 ") !=
           std::string::npos;
  return e;
}

}  // namespace

std::string DeviceEntry::unusable_reason() const {
  if (!available) return "the driver reports the device as not available";
  if (!compiler) return "the driver has no OpenCL C compiler for this device";
  // OpenCL 1.x drivers say "OpenCL 1.1 ..."; we need 1.2 or newer.
  if (device_version.rfind("OpenCL 1.0", 0) == 0 || device_version.rfind("OpenCL 1.1", 0) == 0)
    return "the device speaks " + device_version + "; OpenCL 1.2 or newer is needed";
  if (max_work_group < 64)
    return "work-groups of at most " + std::to_string(max_work_group) +
           " work-items; the kernels need 64";
  return "";
}

std::string DeviceEntry::describe() const {
  return name + " (" + type_text(type) + ", " + vendor + "; " + platform_name + ", driver " +
         driver_version + "; " + memory_text(global_memory) + ", " + std::to_string(compute_units) +
         " compute units; fp16 " + (fp16 ? "yes" : "no") + ")";
}

Discovery discover_devices() {
  Discovery result;
  cl_uint platform_count = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &platform_count);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && platform_count == 0)) {
    result.error =
        "no OpenCL platform is installed (install the GPU vendor's OpenCL driver, or "
        "pocl-opencl-icd for OpenCL on the CPU)";
    return result;
  }
  if (err != CL_SUCCESS) {
    result.error = "clGetPlatformIDs failed: " + cl_error_name(err);
    return result;
  }
  std::vector<cl_platform_id> platforms(platform_count);
  if (clGetPlatformIDs(platform_count, platforms.data(), nullptr) != CL_SUCCESS) {
    result.error = "clGetPlatformIDs failed while listing the platforms";
    return result;
  }
  std::string problems;
  for (cl_platform_id p : platforms) {
    cl_uint count = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    if (err == CL_DEVICE_NOT_FOUND || count == 0) continue;
    if (err != CL_SUCCESS) {
      problems += (problems.empty() ? "" : "; ") + platform_string(p, CL_PLATFORM_NAME) + ": " +
                  cl_error_name(err);
      continue;
    }
    std::vector<cl_device_id> ids(count);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : ids) result.devices.push_back(describe_device(p, d));
  }
  if (result.devices.empty())
    result.error = "the OpenCL platforms list no device" +
                   (problems.empty() ? std::string() : " (" + problems + ")");
  return result;
}

int best_device(const std::vector<DeviceEntry>& devices) {
  int best = -1;
  auto rank = [](const DeviceEntry& e) {
    int kind = e.is_gpu() ? 2 : ((e.type & CL_DEVICE_TYPE_ACCELERATOR) ? 1 : 0);
    return static_cast<int64_t>(kind) * (int64_t{1} << 32) + e.compute_units;
  };
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].unusable_reason().empty()) continue;
    if (best < 0 || rank(devices[i]) > rank(devices[best])) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace loom::opencl
