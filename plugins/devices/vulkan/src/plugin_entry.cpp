// The Vulkan device plugin: entry point and the loom_device_api_t functions. Every ABI entry
// runs inside loom::sdk::guard (or catches everything itself when it returns no status).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <loom/device_plugin.hpp>
#include <loom/plugin.hpp>
#include <mutex>

#include "executable.hpp"
#include "handles.hpp"
#include "instance.hpp"
#include "ops/ops.hpp"

namespace loom::vulkan {
namespace {

void copy_text(char* dst, size_t capacity, const std::string& text) {
  std::snprintf(dst, capacity, "%s", text.c_str());
}

void emit(void (*fn)(void*, const loom_device_info_t*), void* fn_user, const std::string& name,
          const std::string& description, const std::string& unavailable) {
  loom_device_info_t info{};
  info.struct_size = sizeof info;
  copy_text(info.name, sizeof info.name, name);
  copy_text(info.description, sizeof info.description, description);
  info.available = unavailable.empty();
  copy_text(info.unavailable_reason, sizeof info.unavailable_reason, unavailable);
  info.flags = 0;  // device memory: the core copies through copy_to_host / copy_from_host
  fn(fn_user, &info);
}

void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
  try {
    std::unique_ptr<Instance> instance;
    try {
      instance = std::make_unique<Instance>(false);
    } catch (const std::exception& e) {
      emit(fn, fn_user, "vulkan:0", "Vulkan compute device", e.what());
      return;
    }
    if (instance->devices().empty()) {
      emit(fn, fn_user, "vulkan:0", "Vulkan compute device",
           "no Vulkan physical device (install a GPU driver or mesa-vulkan-drivers)");
      return;
    }
    for (size_t i = 0; i < instance->devices().size(); ++i) {
      const PhysicalDevice& d = instance->devices()[i];
      emit(fn, fn_user, "vulkan:" + std::to_string(i), d.describe(), d.unavailable);
    }
  } catch (...) {
    // enumerate must not fail.
  }
}

loom_status_t* create(void*, const loom_device_create_args_t* args, loom_device_t** out) {
  return sdk::guard([&] {
    if (!args || !out) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan: create without args or out");
    Options options = parse_options(args->options);
    auto instance = std::make_shared<Instance>(options.validation);
    const auto& devices = instance->devices();
    if (devices.empty())
      sdk::fail(LOOM_ERROR_UNAVAILABLE,
                "vulkan: no Vulkan physical device (install a GPU driver or mesa-vulkan-drivers)");
    size_t index = 0;
    if (args->instance >= 0) {
      index = static_cast<size_t>(args->instance);
      if (index >= devices.size())
        sdk::fail(LOOM_ERROR_NOT_FOUND, "vulkan: instance " + std::to_string(args->instance) +
                                            " does not exist (there are " +
                                            std::to_string(devices.size()) + ")");
    } else {
      // Best = first usable in preference order.
      while (index < devices.size() && !devices[index].unavailable.empty()) ++index;
      if (index == devices.size())
        sdk::fail(LOOM_ERROR_UNAVAILABLE, "vulkan: no usable device: " + devices[0].unavailable);
    }
    auto device = std::make_unique<loom_device_t>();
    device->host = args->host;
    device->context = std::make_unique<Context>(instance, index, options);
    *out = device.release();
  });
}

void destroy(loom_device_t* device) {
  delete device;
}

void get_info(loom_device_t* device, loom_device_info_t* out) {
  if (!device || !out) return;
  size_t size = out->struct_size ? std::min(out->struct_size, sizeof(loom_device_info_t))
                                 : sizeof(loom_device_info_t);
  loom_device_info_t info{};
  info.struct_size = size;
  try {
    copy_text(info.name, sizeof info.name, device->context->name());
    copy_text(info.description, sizeof info.description, device->context->description());
  } catch (...) {
  }
  info.available = true;
  std::memcpy(out, &info, size);
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
    if (!device || !out) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan alloc: no device or out");
    auto buffer = std::make_unique<loom_buffer_t>();
    buffer->allocation = device->context->memory().allocate(size);
    buffer->size = size;
    *out = buffer.release();
  });
}

void free_buffer(loom_device_t* device, loom_buffer_t* buffer) {
  if (!buffer) return;
  if (device) device->context->memory().release(buffer->allocation);
  delete buffer;
}

void* buffer_host_ptr(loom_device_t*, loom_buffer_t*) {
  return nullptr;  // device memory: the core uses copy_to_host / copy_from_host
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
    check_range(src, offset, size, "vulkan copy_to_host");
    if (size && !dst) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan copy_to_host: dst is NULL");
    device->context->download(src->allocation, offset, dst, size);
  });
}

loom_status_t* copy_from_host(loom_device_t* device, const void* src, loom_buffer_t* dst,
                              size_t offset, size_t size) {
  return sdk::guard([&] {
    check_range(dst, offset, size, "vulkan copy_from_host");
    if (size && !src) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan copy_from_host: src is NULL");
    device->context->upload(src, dst->allocation, offset, size);
  });
}

loom_status_t* compile(loom_device_t* device, const loom_compile_args_t* args,
                       loom_executable_t** out) {
  return sdk::guard([&] {
    if (!device || !args || !args->graph || !out)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan compile: missing device, args, graph or out");
    PipelineStore& pipelines = device->context->pipelines();
    size_t created = pipelines.created();
    double ms = pipelines.creation_ms();
    auto exe = std::make_unique<loom_executable_t>();
    exe->impl = std::make_unique<Executable>(*device->context, *args->graph, args->arena_size);
    // Weights live on in the device's constants buffer: the core may free its bytes.
    if (LOOM_HAS_MEMBER(args, loom_compile_args_t, host_user) && args->constant_copied)
      for (int id : exe->impl->uploaded_constants()) args->constant_copied(args->host_user, id);
    size_t new_pipelines = pipelines.created() - created;
    if (new_pipelines) {
      pipelines.save();
      char text[160];
      std::snprintf(text, sizeof text, "%zu pipelines created in %.1f ms (disk cache %s)",
                    new_pipelines, pipelines.creation_ms() - ms,
                    pipelines.cache_loaded() ? "loaded" : "empty");
      sdk::log(LOOM_LOG_INFO, "vulkan", text);
    }
    *out = exe.release();
  });
}

void release_executable(loom_device_t*, loom_executable_t* exe) {
  delete exe;
}

loom_status_t* run(loom_device_t* device, loom_executable_t* exe, const loom_run_args_t* args) {
  return sdk::guard([&] {
    if (!device || !exe || !args)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan run: missing device, executable or args");
    exe->impl->run(std::span<const loom_tensor_t>(args->inputs, args->num_inputs),
                   std::span<loom_tensor_t>(args->outputs, args->num_outputs),
                   sdk::RunControl(args));
  });
}

const loom_device_api_t kDeviceApi = {
    sizeof(loom_device_api_t),
    "vulkan",
    "Vulkan compute device: GLSL compute shaders on any Vulkan 1.1 GPU (or lavapipe)",
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
}  // namespace loom::vulkan

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info,
      {"vulkan", "0.1.0", "Vulkan compute device (GLSL compute shaders, SPIR-V embedded)",
       LOOM_MAKE_ABI_VERSION(1, 0)},
      loom::vulkan::kDeviceApi);
}
