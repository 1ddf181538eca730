// Thin C++ layer over the OpenCL 1.2 C API: error checking that names the failing call, and
// move-only owners for the reference-counted CL objects.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::opencl {

// The symbolic name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "error <n>".
std::string cl_error_name(cl_int err);

// Throws an sdk::Error (LOOM_ERROR_RUNTIME, or OUT_OF_MEMORY for allocation failures) naming
// `what` and the error when err != CL_SUCCESS.
void check_cl(cl_int err, const std::string& what);

template <typename T, cl_int (*Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ClHandle(ClHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~ClHandle() { reset(); }
  void reset() {
    if (handle_) Release(handle_);
    handle_ = nullptr;
  }
  T get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T handle_ = nullptr;
};

using ContextHandle = ClHandle<cl_context, clReleaseContext>;
using QueueHandle = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ProgramHandle = ClHandle<cl_program, clReleaseProgram>;
using KernelHandle = ClHandle<cl_kernel, clReleaseKernel>;
using MemHandle = ClHandle<cl_mem, clReleaseMemObject>;
using EventHandle = ClHandle<cl_event, clReleaseEvent>;

// Info queries; strings lose their trailing NULs.
std::string platform_string(cl_platform_id platform, cl_platform_info what);
std::string device_string(cl_device_id device, cl_device_info what);
template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T value{};
  check_cl(clGetDeviceInfo(device, what, sizeof value, &value, nullptr), "clGetDeviceInfo");
  return value;
}

}  // namespace loom::opencl
