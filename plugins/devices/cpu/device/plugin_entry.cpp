// The cpu device plugin: the entry point and the loom_device_api_t functions. Every ABI entry
// runs inside loom::sdk::guard (or catches everything itself when it returns no status), so no
// exception crosses the boundary.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <loom/device_plugin.hpp>
#include <loom/host_memory.hpp>
#include <loom/plugin.hpp>
#include <thread>

#include "cpu_device.hpp"

// Test-only variants (tests/scheduler builds them through loom_cpu_test_variant()): the same
// kernels under another device name, limited to an op subset, optionally with "remote" memory
// that the core must copy through copy_to_host/copy_from_host. The real plugin defines none.
#ifndef LOOM_CPU_DEVICE_NAME
#define LOOM_CPU_DEVICE_NAME "cpu"
#endif
#ifndef LOOM_CPU_ONLY_OPS
#define LOOM_CPU_ONLY_OPS ""  // comma-separated; "" = every op
#endif
#ifndef LOOM_CPU_EXCLUDED_OPS
#define LOOM_CPU_EXCLUDED_OPS ""
#endif
#ifdef LOOM_CPU_REMOTE_MEMORY
constexpr bool kRemoteMemory = true;
#else
constexpr bool kRemoteMemory = false;
#endif

namespace loom::cpu {
namespace {

bool in_list(const char* list, const std::string& op) {
  std::string text = std::string(",") + list + ",";
  return text.find("," + op + ",") != std::string::npos;
}

// Empty when the variant's op filter lets the op through.
std::string filtered_out(const std::string& op) {
  if (LOOM_CPU_ONLY_OPS[0] != '\0' && !in_list(LOOM_CPU_ONLY_OPS, op))
    return std::string("test device " LOOM_CPU_DEVICE_NAME " runs only ") + LOOM_CPU_ONLY_OPS;
  if (in_list(LOOM_CPU_EXCLUDED_OPS, op))
    return "test device " LOOM_CPU_DEVICE_NAME " leaves " + op + " to others";
  return "";
}

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
  info.flags = kRemoteMemory ? 0 : LOOM_DEVICE_HOST_MEMORY;
  std::memcpy(out, &info, size);
}

// Reads the cpu device's options (see sdk::device_options for the convention): threads=N, and
// precision, which the reference device accepts and ignores: it always computes in the model's
// own types.
int threads_from_options(const char* options, int threads) {
  for (const sdk::DeviceOption& o : sdk::device_options(options, LOOM_CPU_DEVICE_NAME)) {
    if (o.key == "precision") {
      if (o.value != "f32" && o.value != "bf16" && o.value != "f16")
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             LOOM_CPU_DEVICE_NAME " device: precision='" + o.value + "' (use f32, bf16 or f16)");
      continue;
    }
    if (o.key != "threads")
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           sdk::unknown_option_message(LOOM_CPU_DEVICE_NAME, o.key,
                                       "threads=N, precision=f32|bf16|f16"));
    char* stop = nullptr;
    long n = std::strtol(o.value.c_str(), &stop, 10);
    if (o.value.empty() || *stop != '\0' || n < 0 || n > 4096)
      fail(LOOM_ERROR_INVALID_ARGUMENT, LOOM_CPU_DEVICE_NAME " device: option threads='" + o.value +
                                            "' is not a thread count 0..4096");
    threads = static_cast<int>(n);
  }
  return threads;
}

// ---- device functions ---------------------------------------------------------------------

void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
  try {
    loom_device_info_t info{};
    info.struct_size = sizeof info;
    fill_info(LOOM_CPU_DEVICE_NAME, describe_host_cpu(), &info);
    fn(fn_user, &info);
  } catch (...) {
    // enumerate must not fail; nothing sensible to report without the description.
  }
}

loom_status_t* create(void*, const loom_device_create_args_t* args, loom_device_t** out) {
  return sdk::guard([&] {
    if (!args || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "cpu device: create without args or out");
    if (args->instance > 0)
      fail(LOOM_ERROR_NOT_FOUND, "cpu device: instance " + std::to_string(args->instance) +
                                     " does not exist (there is one: 0)");
    if (args->threads < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "cpu device: negative thread count " + std::to_string(args->threads));
    int threads = threads_from_options(args->options, args->threads);
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto device = std::make_unique<loom_device_t>();
    device->name = LOOM_CPU_DEVICE_NAME;
    device->host = args->host;
    device->description = describe_host_cpu() + ", " + std::to_string(threads) + " threads";
    device->pool = std::make_unique<ThreadPool>(threads);
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
    reason = (device && graph && node) ? why_unsupported(device->host, *graph, *node)
                                       : "supports_node called without a device, graph or node";
    if (reason.empty() && node && node->op_type) reason = filtered_out(node->op_type);
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
  if (kRemoteMemory) return nullptr;
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
      fail(LOOM_ERROR_INVALID_ARGUMENT, "cpu compile: missing device, args, graph or out");
    // The core's arena plan is not used: kernels like Identity or Reshape alias their input,
    // which a liveness plan made outside the device cannot see, so every value gets its own
    // reference-counted allocation instead (see docs/cpu-device.md).
    auto exe = std::make_unique<loom_executable_t>();
    exe->impl = std::make_unique<Executable>(device->host, *device->pool, *args->graph);
    *out = exe.release();
  });
}

void release_executable(loom_device_t*, loom_executable_t* exe) {
  delete exe;
}

// Hands a result over as a loom_buffer_t. Memory the interpreter owns is shared, not copied;
// borrowed memory (a graph input or constant passed through) is copied.
void hand_over(const Tensor& t, loom_tensor_t& out) {
  auto buffer = std::make_unique<loom_buffer_t>();
  size_t bytes = t.view.byte_size;
  if (t.owner) {
    buffer->owner = t.owner;
    buffer->strings = t.strings;
    buffer->data = t.view.data;
  } else if (t.view.dtype == LOOM_DTYPE_STRING) {
    size_t count = static_cast<size_t>(sdk::element_count(t.view));
    auto strings = std::make_shared<std::vector<std::string>>();
    const auto* src = static_cast<const loom_string_t*>(t.view.data);
    for (size_t i = 0; i < count; ++i)
      strings->emplace_back(src[i].data ? std::string(src[i].data, src[i].size) : "");
    auto* views = new loom_string_t[count ? count : 1]();
    for (size_t i = 0; i < count; ++i) views[i] = {(*strings)[i].data(), (*strings)[i].size()};
    buffer->owner =
        std::shared_ptr<void>(views, [](void* p) { delete[] static_cast<loom_string_t*>(p); });
    buffer->strings = strings;
    buffer->data = views;
    bytes = count * sizeof(loom_string_t);
  } else {
    buffer->owner = sdk::allocate_host_block(bytes, "copying an output");
    buffer->data = buffer->owner.get();
    if (bytes) std::memcpy(buffer->data, t.view.data, bytes);
  }
  buffer->size = bytes;
  out.dtype = t.view.dtype;
  out.rank = t.view.rank;
  std::memcpy(out.dims, t.view.dims, sizeof out.dims);
  out.data = buffer->data;
  out.offset = 0;
  out.byte_size = bytes;
  out.buffer = buffer.release();
}

loom_status_t* run(loom_device_t* device, loom_executable_t* exe, const loom_run_args_t* args) {
  return sdk::guard([&] {
    if (!device || !exe || !args)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "cpu run: missing device, executable or args");
    const loom_graph_t& graph = exe->impl->graph();
    if (args->num_outputs != graph.num_outputs)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "cpu run: the subgraph has " +
                                            std::to_string(graph.num_outputs) + " outputs, " +
                                            std::to_string(args->num_outputs) + " requested");
    std::vector<loom_tensor_t> inputs(args->inputs, args->inputs + args->num_inputs);
    if (kRemoteMemory)  // the core hands "device" tensors over by buffer only
      for (loom_tensor_t& t : inputs)
        if (!t.data && t.buffer) t.data = static_cast<char*>(t.buffer->data) + t.offset;
    const sdk::RunControl control(args);
    std::vector<Tensor> results =
        exe->impl->run(std::span<const loom_tensor_t>(inputs), control.raw());
    size_t done = 0;
    try {
      for (; done < results.size(); ++done) {
        loom_tensor_t& out = args->outputs[done];
        out = sdk::empty_tensor();
        hand_over(results[done], out);
        if (kRemoteMemory) out.data = nullptr;
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
    LOOM_CPU_DEVICE_NAME,
    "portable reference CPU device: every supported ONNX op, plainly implemented",
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

std::string describe_host_cpu() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    // x86 says "model name", many ARM kernels "Hardware" or "Processor".
    if (line.rfind("model name", 0) == 0 || line.rfind("Processor", 0) == 0 ||
        line.rfind("Hardware", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(" \t"));
        if (!model.empty()) break;
      }
    }
  }
  if (model.empty()) model = "host CPU";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return model + " (" + std::to_string(cores) + " hardware threads)";
}

}  // namespace loom::cpu

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {LOOM_CPU_DEVICE_NAME, "0.1.0",
       "reference cpu device: portable, dependency-free kernels for the ONNX operator set"},
      loom::cpu::kDeviceApi);
}
