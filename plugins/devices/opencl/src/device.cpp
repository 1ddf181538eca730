#include "device.hpp"

#include <loom/plugin.hpp>
#include <map>
#include <string_view>

#include "program_cache.hpp"

namespace loom::opencl {

std::string_view kernel_source();  // generated from kernels/*.cl (embed_kernels.cmake)

DeviceOptions parse_device_options(const char* options) {
  DeviceOptions result;
  for (const sdk::DeviceOption& option : sdk::device_options(options, "opencl")) {
    const std::string& key = option.key;
    const std::string& value = option.value;
    if (key == "precision") {
      if (value != "f32" && value != "f16" && value != "bf16")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "opencl device: option precision='" + value + "' is not f32, f16 or bf16");
      result.f16_storage = value == "f16";
      result.bf16_requested = value == "bf16";
    } else if (key == "gemm") {
      if (value != "auto" && value != "tiled" && value != "blocked")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "opencl device: gemm='" + value + "' is not one of auto, tiled, blocked");
      result.gemm = value;
    } else if (key == "f16_convert") {
      if (value != "auto" && value != "builtin" && value != "bits")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "opencl device: f16_convert='" + value + "' is not one of auto, builtin, bits");
      result.f16_convert = value;
    } else if (key == "threads") {
      // The core passes the user's thread count to every device; the driver schedules its own.
    } else {
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                sdk::unknown_option_message("opencl", key,
                                            "precision=f32|f16|bf16, gemm=auto|tiled|blocked, "
                                            "f16_convert=auto|builtin|bits"));
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
  shared->transfer_queue = QueueHandle(clCreateCommandQueue(shared->context.get(), id, 0, &err));
  check_cl(err, "clCreateCommandQueue (transfers) on " + entry.name);
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
  if (options_.bf16_requested)
    sdk::log(LOOM_LOG_WARNING, "opencl",
             name_ +
                 ": precision=bf16 was asked for, but the opencl device has no bf16 "
                 "kernels; computing in f32");
}

std::string Device::description() const {
  std::string text = entry_.describe();
  // fp16 arithmetic (cl_khr_fp16) is not used even where the device has it: the kernels that
  // could take it are memory-bound, and they are only compiled where tests can run them.
  if (options_.f16_storage) text += ", precision=f16: fp16 storage, f32 arithmetic";
  return text;
}

cl_program Device::program() {
  std::lock_guard<std::mutex> lock(shared_->program_mutex);
  const bool half_bits = options_.f16_storage && converts_half_bits();
  ProgramHandle& program = shared_->programs[options_.f16_storage ? (half_bits ? 2 : 1) : 0];
  if (!program) {
    // -cl-std=CL1.2 keeps the kernels within what every driver accepts; no fast-math flags:
    // results must match the cpu reference device closely. The storage variant is a define,
    // so it is part of the program cache key (the build options are).
    std::string options = "-cl-std=CL1.2";
    if (options_.f16_storage) options += " -DLOOM_F16_STORAGE";
    if (half_bits) options += " -DLOOM_HALF_BITS";
    ProgramBuild build = build_program(context(), entry_, kernel_source(), options);
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.0f ms", build.milliseconds);
    sdk::log(LOOM_LOG_INFO, "opencl",
             name_ + ": kernels" + (options_.f16_storage ? " (f16 storage)" : "") + " " +
                 (build.from_cache ? "loaded from the cache " + build.cache_file.string()
                                   : "compiled from source") +
                 " in " + ms);
    program = std::move(build.program);
  }
  return program.get();
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
