// The opencl device plugin: the entry point and the loom_device_api_t functions. Every ABI
// entry runs inside loom::sdk::guard (or catches everything itself when it returns no status).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <loom/device_plugin.hpp>
#include <loom/plugin.hpp>

#include "device.hpp"
#include "discovery.hpp"
#include "executable.hpp"
#include "ops.hpp"
#include "transfers.hpp"

namespace loom::opencl {
namespace {

void copy_text(char* dst, size_t capacity, const std::string& text) {
  std::snprintf(dst, capacity, "%s", text.c_str());
}

void fill_info(const std::string& name, const std::string& description, const std::string& reason,
               loom_device_info_t* out) {
  size_t size = out->struct_size ? std::min(out->struct_size, sizeof(loom_device_info_t))
                                 : sizeof(loom_device_info_t);
  loom_device_info_t info{};
  info.struct_size = size;
  copy_text(info.name, sizeof info.name, name);
  copy_text(info.description, sizeof info.description, description);
  info.available = reason.empty();
  copy_text(info.unavailable_reason, sizeof info.unavailable_reason, reason);
  info.flags = 0;  // device memory: the core copies at subgraph boundaries
  std::memcpy(out, &info, size);
}

void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
  try {
    Discovery found = discover_devices();
    loom_device_info_t info{};
    info.struct_size = sizeof info;
    if (found.devices.empty()) {
      fill_info("opencl", "OpenCL device", found.error, &info);
      fn(fn_user, &info);
      return;
    }
    for (size_t i = 0; i < found.devices.size(); ++i) {
      const DeviceEntry& e = found.devices[i];
      fill_info("opencl:" + std::to_string(i), e.describe(), e.unusable_reason(), &info);
      fn(fn_user, &info);
    }
  } catch (...) {
    // enumerate must not fail; a broken driver simply lists nothing.
  }
}

loom_status_t* create(void*, const loom_device_create_args_t* args, loom_device_t** out) {
  return sdk::guard([&] {
    if (!args || !out) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl: create without args or out");
    DeviceOptions options = parse_device_options(args->options);
    Discovery found = discover_devices();
    if (found.devices.empty()) sdk::fail(LOOM_ERROR_UNAVAILABLE, found.error);
    int index = args->instance;
    if (index < 0) {
      index = best_device(found.devices);
      if (index < 0) {
        std::string reasons;
        for (size_t i = 0; i < found.devices.size(); ++i)
          reasons +=
              (i ? "; " : "") + found.devices[i].name + ": " + found.devices[i].unusable_reason();
        sdk::fail(LOOM_ERROR_UNAVAILABLE, "no usable OpenCL device (" + reasons + ")");
      }
    } else if (static_cast<size_t>(index) >= found.devices.size()) {
      sdk::fail(LOOM_ERROR_NOT_FOUND,
                "opencl:" + std::to_string(index) + " does not exist (there are " +
                    std::to_string(found.devices.size()) + ": see infer-run --list-devices)");
    }
    const DeviceEntry& entry = found.devices[static_cast<size_t>(index)];
    std::string reason = entry.unusable_reason();
    if (!reason.empty())
      sdk::fail(LOOM_ERROR_UNAVAILABLE,
                "opencl:" + std::to_string(index) + " (" + entry.name + "): " + reason);
    auto device = std::make_unique<loom_device_t>();
    device->impl = std::make_unique<Device>(entry, "opencl:" + std::to_string(index), options);
    *out = device.release();
  });
}

void destroy(loom_device_t* device) {
  delete device;
}

void get_info(loom_device_t* device, loom_device_info_t* out) {
  if (!device || !out) return;
  try {
    fill_info(device->impl->name(), device->impl->description(), "", out);
  } catch (...) {
  }
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

loom_status_t* alloc(loom_device_t* device, size_t size, loom_buffer_t** out) {
  return sdk::guard([&] {
    if (!device || !out) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl alloc: no device or out");
    auto buffer = std::make_unique<loom_buffer_t>();
    buffer->mem = device->impl->allocate(size, "a buffer");
    buffer->size = size;
    *out = buffer.release();
  });
}

void free_buffer(loom_device_t*, loom_buffer_t* buffer) {
  delete buffer;
}

void* buffer_host_ptr(loom_device_t*, loom_buffer_t*) {
  return nullptr;
}

void check_range(const loom_buffer_t* buffer, size_t offset, size_t size, const char* what) {
  if (!buffer) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, std::string(what) + ": buffer is NULL");
  if (offset > buffer->size || size > buffer->size - offset)
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, std::string(what) + ": range [" +
                                               std::to_string(offset) + ", +" +
                                               std::to_string(size) + ") exceeds the buffer of " +
                                               std::to_string(buffer->size) + " bytes");
}

loom_status_t* copy_to_host(loom_device_t* device, loom_buffer_t* src, size_t offset, void* dst,
                            size_t size) {
  return sdk::guard([&] {
    check_range(src, offset, size, "opencl copy_to_host");
    if (!size) return;
    if (!dst) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl copy_to_host: dst is NULL");
    if (!device) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl copy_to_host: device is NULL");
    download(*device->impl, *src, offset, dst, size);
  });
}

loom_status_t* copy_from_host(loom_device_t* device, const void* src, loom_buffer_t* dst,
                              size_t offset, size_t size) {
  return sdk::guard([&] {
    check_range(dst, offset, size, "opencl copy_from_host");
    if (!size) return;
    if (!src) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl copy_from_host: src is NULL");
    if (!device) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl copy_from_host: device is NULL");
    upload(*device->impl, *dst, offset, src, size);
  });
}

loom_status_t* compile(loom_device_t* device, const loom_compile_args_t* args,
                       loom_executable_t** out) {
  return sdk::guard([&] {
    if (!device || !args || !args->graph || !out)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl compile: missing device, args, graph or out");
    auto exe = std::make_unique<loom_executable_t>();
    exe->impl = std::make_unique<Executable>(*device->impl, *args->graph, args->arena_size);
    // Weights live on in the device's constants buffer: the core may free its bytes.
    if (LOOM_HAS_MEMBER(args, loom_compile_args_t, host_user) && args->constant_copied)
      for (int id : exe->impl->release_uploaded_constants())
        args->constant_copied(args->host_user, id);
    *out = exe.release();
  });
}

void release_executable(loom_device_t*, loom_executable_t* exe) {
  delete exe;
}

loom_status_t* run(loom_device_t* device, loom_executable_t* exe, const loom_run_args_t* args) {
  return sdk::guard([&] {
    if (!device || !exe || !args)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "opencl run: missing device, executable or args");
    exe->impl->run(*args);
  });
}

const loom_device_api_t kDeviceApi = {
    sizeof(loom_device_api_t),
    "opencl",
    "GPU (or any OpenCL 1.2 device) through the OpenCL ICD loader",
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
}  // namespace loom::opencl

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {"opencl", "0.1.0", "OpenCL device: GPUs (and any OpenCL 1.2 device) through the ICD loader",
       LOOM_ABI_VERSION, [] { loom::opencl::release_shared_contexts(); }},
      loom::opencl::kDeviceApi);
}
