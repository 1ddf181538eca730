#include "cl_api.hpp"

#include <loom/plugin.hpp>

namespace loom::opencl {

std::string cl_error_name(cl_int err) {
  switch (err) {
#define LOOM_CL_ERROR(name) \
  case name:                \
    return #name;
    LOOM_CL_ERROR(CL_DEVICE_NOT_FOUND)
    LOOM_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    LOOM_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    LOOM_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    LOOM_CL_ERROR(CL_OUT_OF_RESOURCES)
    LOOM_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    LOOM_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    LOOM_CL_ERROR(CL_MEM_COPY_OVERLAP)
    LOOM_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    LOOM_CL_ERROR(CL_MAP_FAILURE)
    LOOM_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    LOOM_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    LOOM_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    LOOM_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    LOOM_CL_ERROR(CL_INVALID_VALUE)
    LOOM_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    LOOM_CL_ERROR(CL_INVALID_PLATFORM)
    LOOM_CL_ERROR(CL_INVALID_DEVICE)
    LOOM_CL_ERROR(CL_INVALID_CONTEXT)
    LOOM_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    LOOM_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    LOOM_CL_ERROR(CL_INVALID_HOST_PTR)
    LOOM_CL_ERROR(CL_INVALID_MEM_OBJECT)
    LOOM_CL_ERROR(CL_INVALID_BINARY)
    LOOM_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    LOOM_CL_ERROR(CL_INVALID_PROGRAM)
    LOOM_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    LOOM_CL_ERROR(CL_INVALID_KERNEL_NAME)
    LOOM_CL_ERROR(CL_INVALID_KERNEL)
    LOOM_CL_ERROR(CL_INVALID_ARG_INDEX)
    LOOM_CL_ERROR(CL_INVALID_ARG_VALUE)
    LOOM_CL_ERROR(CL_INVALID_ARG_SIZE)
    LOOM_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    LOOM_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    LOOM_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    LOOM_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    LOOM_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    LOOM_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    LOOM_CL_ERROR(CL_INVALID_EVENT)
    LOOM_CL_ERROR(CL_INVALID_OPERATION)
    LOOM_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    LOOM_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
#undef LOOM_CL_ERROR
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "error " + std::to_string(err);
  }
}

void check_cl(cl_int err, const std::string& what) {
  if (err == CL_SUCCESS) return;
  loom_status_code_t code =
      (err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE)
          ? LOOM_ERROR_OUT_OF_MEMORY
          : LOOM_ERROR_RUNTIME;
  sdk::fail(code, "opencl: " + what + " failed: " + cl_error_name(err));
}

namespace {
std::string trim_nuls(std::string s) {
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
}  // namespace

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetPlatformInfo(platform, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  return trim_nuls(std::move(s));
}

std::string device_string(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetDeviceInfo(device, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  return trim_nuls(std::move(s));
}

}  // namespace loom::opencl
