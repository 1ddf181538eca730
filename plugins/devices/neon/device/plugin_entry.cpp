// The neon device plugin: the entry point and the loom_device_api_t functions. Every ABI entry
// runs inside loom::sdk::guard (or catches everything itself when it returns no status), so no
// exception crosses the boundary.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <loom/device_plugin.hpp>
#include <loom/host_memory.hpp>
#include <loom/plugin.hpp>
#include <thread>

#include "device/cpu_features.hpp"
#include "device/neon_device.hpp"

namespace loom::neon {
namespace {

void copy_text(char* dst, size_t capacity, const std::string& text) {
  std::snprintf(dst, capacity, "%s", text.c_str());
}

void fill_info(const std::string& name, const std::string& description, loom_device_info_t* out) {
  size_t size = out->struct_size ? std::min(out->struct_size, sizeof(loom_device_info_t))
                                 : sizeof(loom_device_info_t);
  loom_device_info_t info{};
  info.struct_size = size;
  copy_text(info.name, sizeof info.name, name);
  copy_text(info.description, sizeof info.description, description);
  info.available = true;
  info.flags = LOOM_DEVICE_HOST_MEMORY;
  std::memcpy(out, &info, size);
}

std::string base_description() {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return describe_features(cpu_features()) + " (" + std::to_string(cores) + " hardware threads)";
}

// Reads the device options (see sdk::device_options for the convention): threads=N overrides
// the thread count; precision=f16 selects the fp16 GEMM and packed depthwise kernels where the
// CPU has ARMv8.2 FP16 arithmetic. What cannot run in the asked precision (bf16; f16 without FP16)
// runs in f32.
int parse_options(const char* options, int threads, CompileOptions& compile) {
  for (const sdk::DeviceOption& option : sdk::device_options(options, "neon")) {
    const std::string& key = option.key;
    const std::string& value = option.value;
    if (key == "threads") {
      char* stop = nullptr;
      long n = std::strtol(value.c_str(), &stop, 10);
      if (value.empty() || *stop != '\0' || n < 0 || n > 4096)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "neon device: option threads='" + value + "' is not a thread count 0..4096");
      threads = static_cast<int>(n);
    } else if (key == "precision") {
      if (value != "f32" && value != "f16" && value != "bf16")
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "neon device: precision='" + value + "' (use f32, bf16 or f16)");
      compile.fp16 = false;
      if (value == "f16" && cpu_features().fp16_arithmetic) {
        compile.fp16 = true;
      } else if (value != "f32") {
        sdk::log(LOOM_LOG_WARNING, "neon",
                 "precision=" + value +
                     (value == "f16" ? " needs ARMv8.2 FP16 arithmetic, which this CPU lacks"
                                     : " is not supported by the neon device") +
                     "; computing in f32");
      }
    } else {
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           sdk::unknown_option_message("neon", key, "threads=N, precision=f32|f16"));
    }
  }
  return threads;
}

void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
  try {
    loom_device_info_t info{};
    info.struct_size = sizeof info;
    fill_info("neon", base_description(), &info);
    fn(fn_user, &info);
  } catch (...) {
    // enumerate must not fail; nothing sensible to report without the description.
  }
}

loom_status_t* create(void*, const loom_device_create_args_t* args, loom_device_t** out) {
  return sdk::guard([&] {
    if (!args || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "neon device: create without args or out");
    if (args->instance > 0)
      fail(LOOM_ERROR_NOT_FOUND, "neon device: instance " + std::to_string(args->instance) +
                                     " does not exist (there is one: 0)");
    if (args->threads < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "neon device: negative thread count " + std::to_string(args->threads));
    CompileOptions compile;
    int threads = parse_options(args->options, args->threads, compile);
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto device = std::make_unique<loom_device_t>();
    device->description = base_description() + ", " + std::to_string(threads) + " threads" +
                          (compile.fp16 ? ", fp16 GEMM and depthwise" : "");
    device->compile = compile;
    device->pool = std::make_unique<cpu::ThreadPool>(threads);
    *out = device.release();
  });
}

void destroy(loom_device_t* device) {
  delete device;
}

void get_info(loom_device_t* device, loom_device_info_t* out) {
  if (!device || !out) return;
  fill_info(device->name, device->description, out);
}

void supports_node(loom_device_t* device, const loom_graph_t* graph, const loom_node_t* node,
                   loom_support_t* out) {
  if (!out) return;
  std::string reason;
  try {
    reason = (device && graph && node) ? why_unsupported(*graph, *node)
                                       : "supports_node called without a device, graph or node";
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "internal error while checking the node";
  }
  out->supported = reason.empty();
  copy_text(out->reason, sizeof out->reason, reason);
}

loom_status_t* alloc(loom_device_t*, size_t size, loom_buffer_t** out) {
  return sdk::guard([&] {
    if (!out) fail(LOOM_ERROR_INVALID_ARGUMENT, "alloc: out is NULL");
    auto buffer = std::make_unique<loom_buffer_t>();
    buffer->owner = sdk::allocate_host_block(size, "alloc");
    buffer->data = buffer->owner.get();
    buffer->size = size;
    *out = buffer.release();
  });
}

void free_buffer(loom_device_t*, loom_buffer_t* buffer) {
  delete buffer;
}

void* buffer_host_ptr(loom_device_t*, loom_buffer_t* buffer) {
  return buffer ? buffer->data : nullptr;
}

loom_status_t* copy_to_host(loom_device_t*, loom_buffer_t* src, size_t offset, void* dst,
                            size_t size) {
  return sdk::copy_host_to_user(src ? src->data : nullptr, src ? src->size : 0, offset, dst, size);
}

loom_status_t* copy_from_host(loom_device_t*, const void* src, loom_buffer_t* dst, size_t offset,
                              size_t size) {
  return sdk::copy_user_to_host(src, dst ? dst->data : nullptr, dst ? dst->size : 0, offset, size);
}

loom_status_t* compile(loom_device_t* device, const loom_compile_args_t* args,
                       loom_executable_t** out) {
  return sdk::guard([&] {
    if (!device || !args || !args->graph || !out)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "neon compile: missing device, args, graph or out");
    // The core's arena plan is not used: Flatten aliases its input, which a plan made outside
    // the device cannot see; every value gets its own reference-counted allocation.
    auto exe = std::make_unique<loom_executable_t>();
    exe->impl = std::make_unique<Executable>(*args->graph, *device->pool, device->compile);
    *out = exe.release();
  });
}

void release_executable(loom_device_t*, loom_executable_t* exe) {
  delete exe;
}

// Hands a result over as a loom_buffer_t: owned memory is shared, borrowed memory (a subgraph
// input or constant passed through) is copied.
void hand_over(const Tensor& t, loom_tensor_t& out) {
  if (t.dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, "neon: an output has rank above " + std::to_string(LOOM_MAX_RANK));
  auto buffer = std::make_unique<loom_buffer_t>();
  size_t bytes = t.size() * sizeof(float);
  if (t.owner) {
    buffer->owner = t.owner;
    buffer->data = t.data;
  } else {
    Tensor copy = make_tensor(t.dims);
    if (bytes) std::memcpy(copy.data, t.data, bytes);
    buffer->owner = copy.owner;
    buffer->data = copy.data;
  }
  buffer->size = bytes;
  out.dtype = LOOM_DTYPE_FLOAT32;
  out.rank = static_cast<int32_t>(t.dims.size());
  for (size_t d = 0; d < t.dims.size(); ++d) out.dims[d] = t.dims[d];
  out.data = buffer->data;
  out.offset = 0;
  out.byte_size = bytes;
  out.buffer = buffer.release();
}

loom_status_t* run(loom_device_t* device, loom_executable_t* exe, const loom_run_args_t* args) {
  return sdk::guard([&] {
    if (!device || !exe || !args)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "neon run: missing device, executable or args");
    if (args->num_outputs != exe->impl->num_outputs())
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "neon run: the subgraph has " + std::to_string(exe->impl->num_outputs()) + " outputs, " +
               std::to_string(args->num_outputs) + " requested");
    std::vector<Tensor> results = exe->impl->run(
        std::span<const loom_tensor_t>(args->inputs, args->num_inputs), sdk::RunControl(args));
    size_t done = 0;
    try {
      for (; done < results.size(); ++done) {
        loom_tensor_t& out = args->outputs[done];
        out = sdk::empty_tensor();
        hand_over(results[done], out);
      }
    } catch (...) {
      for (size_t i = 0; i < done; ++i) {
        delete args->outputs[i].buffer;
        args->outputs[i] = sdk::empty_tensor();
      }
      throw;
    }
  });
}

const loom_device_api_t kDeviceApi = {
    sizeof(loom_device_api_t),
    "neon",
    "aarch64 NEON kernels for the hot ops (conv, GEMM, pooling, elementwise, softmax, "
    "layer norm); fp32, fp16 GEMM and depthwise on ARMv8.2 FP16 CPUs",
    enumerate,
    create,
    destroy,
    get_info,
    supports_node,
    alloc,
    free_buffer,
    buffer_host_ptr,
    copy_to_host,
    copy_from_host,
    compile,
    release_executable,
    run,
    nullptr,
};

}  // namespace
}  // namespace loom::neon

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {"neon", "0.1.0", "neon device: hand-written aarch64 NEON kernels for the hot ops"},
      loom::neon::kDeviceApi);
}
