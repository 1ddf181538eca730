// The onednn device plugin: the entry point and the loom_device_api_t functions. Buffers are
// plain host memory (LOOM_DEVICE_HOST_MEMORY), so the core hands tensors between this device
// and the cpu device without copies. Every ABI entry runs inside loom::sdk::guard.
#include <omp.h>

#if __has_include(<malloc.h>)
#include <malloc.h>  // malloc_trim (glibc)
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <loom/device_plugin.hpp>
#include <loom/host_memory.hpp>
#include <thread>

#include "builder.hpp"

struct loom_device_t {
  loom_host_t* host = nullptr;
  std::string description;
  loom::onednn::DeviceOptions options;
  dnnl::engine engine;
};

struct loom_buffer_t {
  loom::onednn::HostBlock block;
  size_t size = 0;
};

struct loom_executable_t {
  std::unique_ptr<loom::onednn::Program> program;
  std::vector<std::vector<int64_t>> output_dims;
  std::vector<std::string> labels;
};

namespace loom::onednn {
namespace {

void copy_text(char* dst, size_t capacity, const std::string& text) {
  std::snprintf(dst, capacity, "%s", text.c_str());
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "host CPU";
}

std::string isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx:
      return "AVX-512 + AMX";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "AVX-512 BF16";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "AVX-512 VNNI";
    case dnnl::cpu_isa::avx512_core:
      return "AVX-512";
    case dnnl::cpu_isa::avx2_vnni:
    case dnnl::cpu_isa::avx2:
      return "AVX2";
    case dnnl::cpu_isa::avx:
      return "AVX";
    case dnnl::cpu_isa::sse41:
      return "SSE4.1";
    default:
      return "generic";
  }
}

bool has_bf16() {
  auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

void fill_info(const std::string& description, loom_device_info_t* out) {
  size_t size = out->struct_size ? std::min(out->struct_size, sizeof(loom_device_info_t))
                                 : sizeof(loom_device_info_t);
  loom_device_info_t info{};
  info.struct_size = size;
  copy_text(info.name, sizeof info.name, "onednn");
  copy_text(info.description, sizeof info.description, description);
  info.available = true;
  info.flags = LOOM_DEVICE_HOST_MEMORY;
  std::memcpy(out, &info, size);
}

// threads=N, precision=f32|bf16|f16, winograd=auto|tune|off, dw_fusion=auto|off,
// depthwise=loom|onednn, conv_layout=auto|blocked|any, huge_pages=auto|off, verbose=1 (see
// sdk::device_options: "onednn.KEY=VALUE" addresses this device only).
DeviceOptions parse_options(const char* options, int threads) {
  DeviceOptions o;
  o.threads = threads;
  for (const sdk::DeviceOption& option : sdk::device_options(options, "onednn")) {
    const std::string& key = option.key;
    const std::string& value = option.value;
    if (key == "threads") {
      char* stop = nullptr;
      long n = std::strtol(value.c_str(), &stop, 10);
      if (value.empty() || *stop != '\0' || n < 0 || n > 4096)
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: option threads='" + value + "' is not a thread count 0..4096");
      o.threads = static_cast<int>(n);
    } else if (key == "precision") {
      if (value != "f32" && value != "bf16" && value != "f16")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: precision='" + value + "' (use f32, bf16 or f16)");
      // The common convention: what a device cannot do in the asked precision runs in f32,
      // and the user is told once.
      if (value == "f16") {
        sdk::log(LOOM_LOG_WARNING, "onednn",
                 "precision=f16 is not supported by the onednn device; computing in f32");
      } else if (value == "bf16" && !has_bf16()) {
        sdk::log(LOOM_LOG_WARNING, "onednn",
                 "precision=bf16 needs a CPU with AVX-512 BF16 (this one has " + isa_name() +
                     "); computing in f32");
      } else {
        o.bf16 = value == "bf16";
      }
    } else if (key == "winograd") {
      if (value != "auto" && value != "off" && value != "tune")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: winograd='" + value + "' (use auto, tune or off)");
      o.winograd = value == "auto"   ? DeviceOptions::Winograd::kAuto
                   : value == "tune" ? DeviceOptions::Winograd::kTune
                                     : DeviceOptions::Winograd::kOff;
    } else if (key == "dw_fusion") {
      if (value != "auto" && value != "off")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: dw_fusion='" + value + "' (use auto or off)");
      o.dw_fusion = value == "auto";
    } else if (key == "depthwise") {
      if (value != "loom" && value != "onednn")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: depthwise='" + value + "' (use loom or onednn)");
      o.loom_depthwise = value == "loom";
    } else if (key == "conv_layout") {
      if (value != "auto" && value != "blocked" && value != "any")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: conv_layout='" + value + "' (use auto, blocked or any)");
      o.conv_layout = value == "auto"      ? DeviceOptions::ConvLayout::kAuto
                      : value == "blocked" ? DeviceOptions::ConvLayout::kBlocked
                                           : DeviceOptions::ConvLayout::kAny;
    } else if (key == "huge_pages") {
      if (value != "auto" && value != "off")
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn device: huge_pages='" + value + "' (use auto or off)");
      o.huge_pages = value == "auto";
    } else if (key == "verbose") {
      o.verbose = value == "1";
    } else {
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                sdk::unknown_option_message(
                    "onednn", key,
                    "threads=N, precision=f32|bf16|f16, winograd=auto|tune|off, "
                    "dw_fusion=auto|off, depthwise=loom|onednn, conv_layout=auto|blocked|any, "
                    "huge_pages=auto|off, verbose=1"));
    }
  }
  if (o.threads == 0)
    o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* fn_user) {
  try {
    loom_device_info_t info{};
    info.struct_size = sizeof info;
    fill_info("oneDNN " + std::to_string(dnnl_version()->major) + "." +
                  std::to_string(dnnl_version()->minor) + " on " + cpu_model() + " (" + isa_name() +
                  ")",
              &info);
    fn(fn_user, &info);
  } catch (...) {
    // enumerate must not fail.
  }
}

loom_status_t* create(void*, const loom_device_create_args_t* args, loom_device_t** out) {
  return sdk::guard([&] {
    if (!args || !out) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn device: create without args");
    if (args->instance > 0)
      sdk::fail(LOOM_ERROR_NOT_FOUND, "onednn device: instance " + std::to_string(args->instance) +
                                          " does not exist (there is one: 0)");
    if (args->threads < 0)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn device: negative thread count");
    auto device = std::make_unique<loom_device_t>();
    device->host = args->host;
    device->options = parse_options(args->options, args->threads);
    device->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    device->description = "oneDNN on " + cpu_model() + " (" + isa_name() + "), " +
                          std::to_string(device->options.threads) + " threads, " +
                          (device->options.bf16 ? "bf16" : "f32");
    *out = device.release();
  });
}

void destroy(loom_device_t* device) {
  delete device;
}

void get_info(loom_device_t* device, loom_device_info_t* out) {
  if (device && out) fill_info(device->description, out);
}

void supports_node(loom_device_t* device, const loom_graph_t* graph, const loom_node_t* node,
                   loom_support_t* out) {
  if (!out) return;
  std::string reason;
  try {
    reason =
        device && graph && node ? why_unsupported(*graph, *node) : "missing device, graph or node";
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
    if (!out) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "alloc: out is NULL");
    auto buffer = std::make_unique<loom_buffer_t>();
    buffer->block = allocate_host(size);
    buffer->size = size;
    *out = buffer.release();
  });
}

void free_buffer(loom_device_t*, loom_buffer_t* buffer) {
  delete buffer;
}

void* buffer_host_ptr(loom_device_t*, loom_buffer_t* buffer) {
  return buffer ? buffer->block.data() : nullptr;
}

loom_status_t* copy_to_host(loom_device_t*, loom_buffer_t* src, size_t offset, void* dst,
                            size_t size) {
  return sdk::copy_host_to_user(src ? src->block.data() : nullptr, src ? src->size : 0, offset, dst,
                                size);
}

loom_status_t* copy_from_host(loom_device_t*, const void* src, loom_buffer_t* dst, size_t offset,
                              size_t size) {
  return sdk::copy_user_to_host(src, dst ? dst->block.data() : nullptr, dst ? dst->size : 0, offset,
                                size);
}

loom_status_t* compile(loom_device_t* device, const loom_compile_args_t* args,
                       loom_executable_t** out) {
  return sdk::guard([&] {
    if (!device || !args || !args->graph || !out)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn compile: missing device, args, graph or out");
    // The core's arena plan is ignored: layouts chosen here change tensor sizes (blocked
    // formats pad channels), so the device plans its own memory over the primitives' liveness.
    auto exe = std::make_unique<loom_executable_t>();
    {
      IrGraph ir = build_ir(*args->graph);
      rewrite_quantized(ir);
      rewrite_patterns(ir);
      omp_set_num_threads(device->options.threads);
      Builder builder(ir, device->options, device->engine);
      // Weights live on as reordered copies: the core may free its bytes as compiling goes.
      if (LOOM_HAS_MEMBER(args, loom_compile_args_t, host_user) && args->constant_copied) {
        const size_t view_values = args->graph->num_values;
        builder.on_constant_copied([args, view_values](int value) {
          if (value >= 0 && static_cast<size_t>(value) < view_values)
            args->constant_copied(args->host_user, value);
        });
      }
      exe->program = builder.build();
    }
#ifdef __GLIBC__
    // The IR's folded and converted weights are freed now, but glibc keeps such large chunks
    // in the heap once its mmap threshold has grown: 30 MiB of ResNet-50's resident memory
    // until the process ends. Hand them back.
    malloc_trim(0);
#endif
    for (const OutputBinding& o : exe->program->outputs) exe->output_dims.push_back(o.dims);
    *out = exe.release();
  });
}

void release_executable(loom_device_t*, loom_executable_t* exe) {
  delete exe;
}

loom_status_t* run(loom_device_t* device, loom_executable_t* exe, const loom_run_args_t* args) {
  return sdk::guard([&] {
    if (!device || !exe || !args)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn run: missing arguments");
    Program& p = *exe->program;
    if (args->num_outputs != p.outputs.size())
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn run: " + std::to_string(p.outputs.size()) +
                                                 " outputs, " + std::to_string(args->num_outputs) +
                                                 " requested");
    if (args->num_inputs != p.input_slots.size())
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn run: " + std::to_string(p.input_slots.size()) +
                                                 " inputs expected, " +
                                                 std::to_string(args->num_inputs) + " given");
    std::vector<void*> inputs(args->num_inputs);
    for (size_t i = 0; i < args->num_inputs; ++i) {
      const loom_tensor_t& t = args->inputs[i];
      inputs[i] = t.data;
      if (p.input_slots[i] >= 0 && t.byte_size < p.slots[p.input_slots[i]].md.get_size())
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "onednn run: input " + std::to_string(i) + " holds " +
                      std::to_string(t.byte_size) + " bytes, the compiled shape needs " +
                      std::to_string(p.slots[p.input_slots[i]].md.get_size()));
    }
    std::vector<std::unique_ptr<loom_buffer_t>> buffers;
    std::vector<HostBlock> blocks;
    for (const OutputBinding& o : p.outputs) {
      auto buffer = std::make_unique<loom_buffer_t>();
      buffer->size = o.bytes;
      buffer->block = allocate_host(buffer->size);
      blocks.push_back(buffer->block);
      buffers.push_back(std::move(buffer));
    }
    p.run(inputs, blocks, sdk::RunControl(args));
    for (size_t i = 0; i < buffers.size(); ++i) {
      loom_tensor_t& t = args->outputs[i];
      t = sdk::empty_tensor();
      t.dtype = p.outputs[i].dtype;
      t.rank = static_cast<int32_t>(p.outputs[i].dims.size());
      std::copy(p.outputs[i].dims.begin(), p.outputs[i].dims.end(), t.dims);
      t.data = buffers[i]->block.data();
      t.byte_size = buffers[i]->size;
      t.buffer = buffers[i].release();
    }
  });
}

const loom_device_api_t kDeviceApi = {
    sizeof(loom_device_api_t),
    "onednn",
    "oneDNN cpu device: convolutions, matmuls and normalizations through oneDNN primitives with "
    "layout propagation and post-op fusion",
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
}  // namespace loom::onednn

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info, {"onednn", "0.1.0", "oneDNN cpu device", LOOM_MAKE_ABI_VERSION(1, 0)},
      loom::onednn::kDeviceApi);
}
