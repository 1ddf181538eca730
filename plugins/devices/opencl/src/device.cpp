#include "device.hpp"

#include <loom/plugin.hpp>
#include <map>
#include <string_view>

#include "program_cache.hpp"

namespace loom::opencl {

std::string_view kernel_source();  // generated from kernels/*.cl (embed_kernels.cmake)

DeviceOptions parse_device_options(const char* options) {
  DeviceOptions result;
  std::string text = options ? options : "";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(';', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "precision") {
      if (value == "f32")
        result.want_fp16 = false;
      else if (value == "f16")
        result.want_fp16 = true;
      else
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "opencl device: precision='" + value + "' is not supported (use f32 or f16)");
    } else if (key == "gemm") {
      if (value != "auto" && value != "tiled" && value != "blocked")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "opencl device: gemm='" + value + "' is not one of auto, tiled, blocked");
      result.gemm = value;
    } else {
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl device: unknown option '" + key +
                                                 "' (known: precision=f32|f16, "
                                                 "gemm=auto|tiled|blocked)");
    }
  }
  return result;
}

namespace {

// Never destroyed by static destructors: the driver may be gone by then. Cleared by the
// plugin's shutdown hook instead.
std::mutex& shared_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<cl_device_id, std::shared_ptr<SharedContext>>& shared_map() {
  static auto* map = new std::map<cl_device_id, std::shared_ptr<SharedContext>>;
  return *map;
}

std::shared_ptr<SharedContext> shared_context(const DeviceEntry& entry) {
  std::lock_guard<std::mutex> lock(shared_mutex());
  auto& slot = shared_map()[entry.device];
  if (slot) return slot;
  auto shared = std::make_shared<SharedContext>();
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(entry.platform), 0};
  cl_device_id id = entry.device;
  shared->context = ContextHandle(clCreateContext(props, 1, &id, nullptr, nullptr, &err));
  check_cl(err, "clCreateContext on " + entry.name);
  shared->queue = QueueHandle(clCreateCommandQueue(shared->context.get(), id, 0, &err));
  check_cl(err, "clCreateCommandQueue on " + entry.name);
  slot = shared;
  return shared;
}

}  // namespace

void release_shared_contexts() {
  std::lock_guard<std::mutex> lock(shared_mutex());
  shared_map().clear();
}

Device::Device(DeviceEntry entry, std::string name, const DeviceOptions& options)
    : entry_(std::move(entry)), name_(std::move(name)), options_(options) {
  shared_ = shared_context(entry_);
  if (options_.want_fp16)
    sdk::log(LOOM_LOG_WARNING, "opencl",
             name_ + ": precision=f16 was asked for, but " +
                 (entry_.fp16 ? std::string("the fp16 kernels are not implemented yet")
                              : entry_.name + " lacks cl_khr_fp16") +
                 "; computing in f32");
}

std::string Device::description() const {
  return entry_.describe();
}

cl_program Device::program() {
  std::lock_guard<std::mutex> lock(shared_->program_mutex);
  if (!shared_->program) {
    // -cl-std=CL1.2 keeps the kernels within what every driver accepts; no fast-math flags:
    // results must match the cpu reference device closely.
    ProgramBuild build = build_program(context(), entry_, kernel_source(), "-cl-std=CL1.2");
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.0f ms", build.milliseconds);
    sdk::log(LOOM_LOG_INFO, "opencl",
             name_ + ": kernels " +
                 (build.from_cache ? "loaded from the cache " + build.cache_file.string()
                                   : "compiled from source") +
                 " in " + ms);
    shared_->program = std::move(build.program);
  }
  return shared_->program.get();
}

KernelHandle Device::create_kernel(const char* name) {
  cl_int err = CL_SUCCESS;
  KernelHandle kernel(clCreateKernel(program(), name, &err));
  check_cl(err, std::string("clCreateKernel(") + name + ")");
  return kernel;
}

MemHandle Device::allocate(size_t bytes, const char* what) {
  if (bytes > entry_.max_alloc && entry_.max_alloc)
    sdk::fail(LOOM_ERROR_OUT_OF_MEMORY,
              std::string("opencl: ") + what + " of " + std::to_string(bytes) +
                  " bytes exceeds the largest allocation " + entry_.name + " allows (" +
                  std::to_string(entry_.max_alloc) + " bytes)");
  cl_int err = CL_SUCCESS;
  MemHandle mem(clCreateBuffer(context(), CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &err));
  check_cl(err, std::string("allocating ") + what + " of " + std::to_string(bytes) + " bytes");
  return mem;
}

}  // namespace loom::opencl
