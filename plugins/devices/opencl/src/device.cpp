#include "device.hpp"

#include <loom/plugin.hpp>
#include <map>
#include <string_view>

#include "executable.hpp"
#include "ops/ops.hpp"
#include "program_cache.hpp"
#include "transfers.hpp"

namespace loom::opencl {

std::string_view kernel_source();  // generated from kernels/*.cl (embed_kernels.cmake)

DeviceOptions parse_device_options(const char* options) {
  DeviceOptions result;
  std::string precision = "f32";
  // The core passes the user's thread count to every device; the driver schedules its own
  // (the option is still checked).
  int threads = 0;
  sdk::kit::OptionReader("opencl")
      .threads(&threads)
      .precision(&precision)
      .choice("gemm", {"auto", "tiled", "blocked"}, &result.gemm)
      .choice("f16_convert", {"auto", "builtin", "bits"}, &result.f16_convert)
      .read(options);
  result.f16_storage = precision == "f16";
  result.bf16_requested = precision == "bf16";
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

namespace {

std::string describe(const DeviceEntry& entry, const DeviceOptions& options) {
  std::string text = entry.describe();
  // fp16 arithmetic (cl_khr_fp16) is not used even where the device has it: the kernels that
  // could take it are memory-bound, and they are only compiled where tests can run them.
  if (options.f16_storage) text += ", precision=f16: fp16 storage, f32 arithmetic";
  return text;
}

}  // namespace

Device::Device(DeviceEntry entry, std::string name, const DeviceOptions& options)
    : sdk::kit::Device({std::move(name), describe(entry, options), "", 0, kCostHints}),
      entry_(std::move(entry)),
      options_(options) {
  shared_ = shared_context(entry_);
  if (options_.bf16_requested)
    sdk::log(LOOM_LOG_WARNING, "opencl",
             info_.name +
                 ": precision=bf16 was asked for, but the opencl device has no bf16 "
                 "kernels; computing in f32");
}

std::string Device::why_unsupported(const loom_graph_t& graph, const loom_node_t& node) {
  return opencl::why_unsupported(graph, node);
}

std::unique_ptr<sdk::kit::Executable> Device::compile(const sdk::kit::CompileRequest& request) {
  auto exe = std::make_unique<Executable>(*this, request.graph(), request.arena_size());
  // Weights live on in the device's constants buffer: the core may free its bytes.
  for (int id : exe->release_uploaded_constants()) request.constant_copied(id);
  return exe;
}

std::unique_ptr<sdk::kit::Buffer> Device::allocate(size_t size) {
  auto buffer = std::make_unique<Buffer>();
  buffer->mem = allocate(size, "a buffer");
  buffer->size = size;
  return buffer;
}

void Device::read(sdk::kit::Buffer& src, size_t offset, void* dst, size_t size) {
  download(*this, static_cast<Buffer&>(src), offset, dst, size);
}

void Device::write(const void* src, sdk::kit::Buffer& dst, size_t offset, size_t size) {
  upload(*this, static_cast<Buffer&>(dst), offset, src, size);
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
             name() + ": kernels" + (options_.f16_storage ? " (f16 storage)" : "") + " " +
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
