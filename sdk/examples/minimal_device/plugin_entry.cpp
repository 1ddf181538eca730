// The minimal device plugin: the entry point and the loom_device_api_t functions.
//
// Every function the core calls either runs inside loom::sdk::guard (those returning a
// status) or catches everything itself: no C++ exception may cross the C ABI.
#include <cstdio>
#include <cstring>
#include <loom/plugin.hpp>

#include "device.hpp"

namespace minimal {

using loom::sdk::fail;

std::unique_ptr<loom_buffer_t> allocate(size_t size) {
  auto buffer = std::make_unique<loom_buffer_t>();
  size_t rounded = (size + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
  buffer->data = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!buffer->data)
    fail(LOOM_ERROR_OUT_OF_MEMORY,
         "minimal: out of memory allocating " + std::to_string(size) + " bytes");
  buffer->size = size;
  return buffer;
}

namespace {

constexpr const char* kName = "minimal";
constexpr const char* kDescription = "SDK example: float32 Relu and same-shape Add in host memory";

void fill_info(loom_device_info_t* out) {
  // Write only what the caller's struct has room for (it may come from an older host).
  loom_device_info_t info{};
  info.struct_size =
      out->struct_size && out->struct_size < sizeof info ? out->struct_size : sizeof info;
  std::snprintf(info.name, sizeof info.name, "%s", kName);
  std::snprintf(info.description, sizeof info.description, "%s", kDescription);
  info.available = true;
  info.flags = LOOM_DEVICE_HOST_MEMORY;
  std::memcpy(out, &info, info.struct_size);
}

void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
  loom_device_info_t info{};
  info.struct_size = sizeof info;
  fill_info(&info);
  fn(fn_user, &info);
}

loom_status_t* create(void*, const loom_device_create_args_t* args, loom_device_t** out) {
  return loom::sdk::guard([&] {
    if (!args || !out) fail(LOOM_ERROR_INVALID_ARGUMENT, "minimal: create without args or out");
    if (args->instance > 0)
      fail(LOOM_ERROR_NOT_FOUND, "minimal: instance " + std::to_string(args->instance) +
                                     " does not exist (there is one: 0)");
    // The options reach every device of the session: accept the common keys (threads and
    // precision), reject any other, naming the keys this device knows.
    for (const loom::sdk::DeviceOption& option : loom::sdk::device_options(args->options, kName)) {
      if (option.key == "threads") continue;  // single-threaded: accepted and ignored
      if (option.key != "precision")
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             loom::sdk::unknown_option_message(kName, option.key,
                                               "threads=N, precision=f32|bf16|f16"));
      if (option.value != "f32" && option.value != "bf16" && option.value != "f16")
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "minimal device: precision='" + option.value + "' (use f32, bf16 or f16)");
      if (option.value != "f32")  // what a device cannot do in the asked precision runs in f32
        loom::sdk::log(LOOM_LOG_WARNING, kName,
                       "precision=" + option.value + " is not supported; computing in f32");
    }
    auto device = std::make_unique<loom_device_t>();
    device->host = args->host;
    *out = device.release();
  });
}

void destroy(loom_device_t* device) {
  delete device;
}

void get_info(loom_device_t*, loom_device_info_t* out) {
  if (out) fill_info(out);
}

void supports_node(loom_device_t*, const loom_graph_t* graph, const loom_node_t* node,
                   loom_support_t* out) {
  if (!out) return;
  std::string reason;
  try {
    reason = graph && node ? why_unsupported(*graph, *node) : "called without a graph or node";
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "internal error while checking the node";
  }
  out->supported = reason.empty();
  std::snprintf(out->reason, sizeof out->reason, "%s", reason.c_str());
}

loom_status_t* alloc(loom_device_t*, size_t size, loom_buffer_t** out) {
  return loom::sdk::guard([&] {
    if (!out) fail(LOOM_ERROR_INVALID_ARGUMENT, "minimal: alloc without out");
    *out = allocate(size).release();
  });
}

void free_buffer(loom_device_t*, loom_buffer_t* buffer) {
  delete buffer;
}

void* buffer_host_ptr(loom_device_t*, loom_buffer_t* buffer) {
  return buffer ? buffer->data : nullptr;
}

void check_range(const loom_buffer_t* buffer, size_t offset, size_t size, const char* what) {
  if (!buffer)
    fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("minimal: ") + what + " without a buffer");
  if (offset > buffer->size || size > buffer->size - offset)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         std::string("minimal: ") + what + " of " + std::to_string(size) + " bytes at offset " +
             std::to_string(offset) + " exceeds the buffer of " + std::to_string(buffer->size));
}

loom_status_t* copy_to_host(loom_device_t*, loom_buffer_t* src, size_t offset, void* dst,
                            size_t size) {
  return loom::sdk::guard([&] {
    check_range(src, offset, size, "copy_to_host");
    if (size) std::memcpy(dst, static_cast<const char*>(src->data) + offset, size);
  });
}

loom_status_t* copy_from_host(loom_device_t*, const void* src, loom_buffer_t* dst, size_t offset,
                              size_t size) {
  return loom::sdk::guard([&] {
    check_range(dst, offset, size, "copy_from_host");
    if (size) std::memcpy(static_cast<char*>(dst->data) + offset, src, size);
  });
}

loom_status_t* compile(loom_device_t*, const loom_compile_args_t* args, loom_executable_t** out) {
  return loom::sdk::guard([&] {
    if (!args || !args->graph || !out)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "minimal: compile without a graph or out");
    // The core's arena plan (arena_offset/arena_size) is ignored: every value gets its own
    // allocation, which the ABI allows.
    auto exe = std::make_unique<loom_executable_t>();
    exe->impl = std::make_unique<Executable>(*args->graph);
    *out = exe.release();
  });
}

void release_executable(loom_device_t*, loom_executable_t* exe) {
  delete exe;
}

loom_status_t* run(loom_device_t*, loom_executable_t* exe, const loom_run_args_t* args) {
  return loom::sdk::guard([&] {
    if (!exe || !args)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "minimal: run without an executable or args");
    if (args->num_outputs != exe->impl->num_outputs())
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "minimal: the subgraph has " + std::to_string(exe->impl->num_outputs()) + " outputs, " +
               std::to_string(args->num_outputs) + " requested");
    exe->impl->run(args->inputs, args->num_inputs, args->outputs);
  });
}

const loom_device_api_t kDeviceApi = {
    sizeof(loom_device_api_t),
    kName,
    kDescription,
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
}  // namespace minimal

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  if (!host) return nullptr;  // no way to create a status without the host
  loom::sdk::set_host(host);
  info->abi_version = LOOM_ABI_VERSION;
  info->name = "minimal";
  info->version = "1.0.0";
  info->description = "SDK example: a minimal host-memory device";
  return loom::sdk::guard([&] {
    if (LOOM_ABI_MAJOR(host->abi_version) != LOOM_ABI_VERSION_MAJOR)
      loom::sdk::fail(LOOM_ERROR_INCOMPATIBLE,
                      "minimal needs plugin ABI major " + std::to_string(LOOM_ABI_VERSION_MAJOR) +
                          ", the host speaks " + std::to_string(LOOM_ABI_MAJOR(host->abi_version)));
    loom::sdk::check(host->register_device(registrar, &minimal::kDeviceApi));
  });
}
