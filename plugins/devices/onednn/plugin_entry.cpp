// The onednn device plugin: the entry point and the device family on the SDK's device kit, which
// implements the loom_device_api_t functions (guards, argument and range checks, run's input
// checks and output rollback, device info). Buffers are plain host memory
// (LOOM_DEVICE_HOST_MEMORY) held in HostBlocks, so the core hands tensors between this device and
// the cpu device without copies.
#include <omp.h>

#if __has_include(<malloc.h>)
#endif

#include <algorithm>
#include <fstream>
#include <loom/device_kit.hpp>
#include <loom/device_plugin.hpp>
#include <loom/heap_trim.hpp>
#include <loom/host_memory.hpp>
#include <thread>

#include "builder.hpp"

namespace loom::onednn {
namespace {

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

namespace kit = sdk::kit;

// A buffer of host memory: an aligned HostBlock (kit::Buffer::data is its first byte).
class Buffer final : public kit::Buffer {
 public:
  explicit Buffer(size_t bytes) : block(allocate_host(bytes)) {
    data = block.data();
    size = bytes;
  }
  HostBlock block;
};

class Executable final : public kit::Executable {
 public:
  explicit Executable(std::unique_ptr<Program> program) : program_(std::move(program)) {}

  // The kit has checked the counts, dtypes and buffer ranges; the compiled shapes are fixed,
  // so each input must hold at least the bytes its primitives read.
  void run(const loom_run_args_t& args) override {
    Program& p = *program_;
    if (args.num_inputs != p.input_slots.size() || args.num_outputs != p.outputs.size())
      sdk::fail(LOOM_ERROR_INTERNAL, "onednn run: the program takes " +
                                         std::to_string(p.input_slots.size()) + " inputs and " +
                                         std::to_string(p.outputs.size()) + " outputs");
    const sdk::RunControl control(&args);
    take_free_extents(args);
    std::vector<void*> inputs(args.num_inputs);
    for (size_t i = 0; i < args.num_inputs; ++i) {
      const loom_tensor_t& t = args.inputs[i];
      inputs[i] = t.data;
      const bool free = std::any_of(p.free_axes.begin(), p.free_axes.end(),
                                    [i](const FreeAxis& f) { return f.input == i; });
      const size_t needed =
          free ? static_cast<size_t>(elements(t.dims, t.rank)) * sdk::dtype_size(t.dtype)
               : (p.input_slots[i] >= 0 ? p.slots[p.input_slots[i]].md.get_size() : 0);
      if (t.byte_size < needed)
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn run: input " + std::to_string(i) +
                                                   " holds " + std::to_string(t.byte_size) +
                                                   " bytes, its shape needs " +
                                                   std::to_string(needed));
    }
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<HostBlock> blocks;
    std::vector<std::vector<int64_t>> dims;
    for (const OutputBinding& o : p.outputs) {
      dims.push_back(o.dims);
      size_t bytes = o.bytes;
      if (o.grows_with >= 0) {
        // Free extents are at most what a fed input holds, so this cannot overflow.
        const size_t k = static_cast<size_t>(o.grows_with);
        dims.back()[static_cast<size_t>(o.grow_dim)] +=
            (*p.run_extents)[k] - p.free_axes[k].dims[static_cast<size_t>(p.free_axes[k].axis)];
        bytes = static_cast<size_t>(
                    elements(dims.back().data(), static_cast<int32_t>(dims.back().size()))) *
                sdk::dtype_size(o.dtype);
        control.check_tensor_bytes(bytes, "onednn: output " + std::to_string(buffers.size()));
      }
      buffers.push_back(std::make_unique<Buffer>(bytes));
      blocks.push_back(buffers.back()->block);
    }
    p.run(inputs, blocks, control);
    for (size_t i = 0; i < buffers.size(); ++i)
      kit::hand_over(std::move(buffers[i]), p.outputs[i].dtype, dims[i], args.outputs[i], true);
  }

  // The extents of this run's free axes (plugin ABI 1.8), each input checked to differ from
  // its compiled shape on those axes alone.
  void take_free_extents(const loom_run_args_t& args) {
    Program& p = *program_;
    for (size_t k = 0; k < p.free_axes.size(); ++k) {
      const FreeAxis& f = p.free_axes[k];
      const loom_tensor_t& t = args.inputs[f.input];
      bool same = t.rank == static_cast<int32_t>(f.dims.size());
      std::string expected;
      for (size_t d = 0; d < f.dims.size(); ++d) {
        const bool free =
            std::any_of(p.free_axes.begin(), p.free_axes.end(), [&](const FreeAxis& o) {
              return o.input == f.input && static_cast<size_t>(o.axis) == d;
            });
        expected += (d ? "x" : "") + (free ? std::string("*") : std::to_string(f.dims[d]));
        if (same && !free && t.dims[d] != f.dims[d]) same = false;
      }
      if (!same)
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onednn run: input " + std::to_string(f.input) +
                                                   " does not have the compiled shape " + expected);
      (*p.run_extents)[k] = t.dims[f.axis];
    }
  }

  static int64_t elements(const int64_t* dims, int32_t rank) {
    int64_t n = 1;
    for (int32_t d = 0; d < rank; ++d) n *= dims[d];
    return n;
  }

 private:
  std::unique_ptr<Program> program_;
};

class Device final : public kit::Device {
 public:
  Device(kit::InstanceInfo info, const DeviceOptions& options)
      : kit::Device(std::move(info)), options_(options), engine_(dnnl::engine::kind::cpu, 0) {}

  std::string why_unsupported(const loom_graph_t& graph, const loom_node_t& node) override {
    return onednn::why_unsupported(graph, node);
  }

  // The core's arena plan is ignored: layouts chosen here change tensor sizes (blocked
  // formats pad channels), so the device plans its own memory over the primitives' liveness.
  std::unique_ptr<kit::Executable> compile(const kit::CompileRequest& request) override {
    std::unique_ptr<Program> program;
    // The IR's folded and converted weights are freed at the end of this scope (30 MiB of
    // ResNet-50's resident memory until the process ended): handed back if that much.
    {
      sdk::HeapTrim trim;
      IrGraph ir = build_ir(request.graph());
      rewrite_quantized(ir);
      rewrite_patterns(ir);
      omp_set_num_threads(options_.threads);
      Builder builder(ir, options_, engine_);
      // Weights live on as reordered copies: the core may free its bytes as compiling goes
      // (ABI 1.3; an older host has no callback, and the builder then tracks nothing).
      const loom_compile_args_t& args = request.raw();
      if (LOOM_HAS_MEMBER(&args, loom_compile_args_t, host_user) && args.constant_copied) {
        const size_t view_values = request.graph().num_values;
        builder.on_constant_copied([&request, view_values](int value) {
          if (value >= 0 && static_cast<size_t>(value) < view_values)
            request.constant_copied(value);
        });
      }
      if (LOOM_HAS_MEMBER(&args, loom_compile_args_t, free_axis) && args.free_axis)
        builder.on_free_axis([&request](size_t input, int axis) {
          request.free_axis(static_cast<int32_t>(input), axis);
        });
      program = builder.build();
    }
    return std::make_unique<Executable>(std::move(program));
  }

  std::unique_ptr<kit::Buffer> allocate(size_t size) override {
    return std::make_unique<Buffer>(size);
  }

 private:
  DeviceOptions options_;
  dnnl::engine engine_;
};

// The scheduler's cost hints (ABI 1.9): JIT-compiled primitives in host memory, ten times the
// reference cpu device; a launch costs a little more (the program's steps and reorders).
constexpr kit::CostHints kCost{200, 0, 0, 2};

class Family final : public kit::Family {
 public:
  Family() : kit::Family("onednn") {}

  std::vector<kit::InstanceInfo> enumerate() override {
    return {{"onednn",
             "oneDNN " + std::to_string(dnnl_version()->major) + "." +
                 std::to_string(dnnl_version()->minor) + " on " + cpu_model() + " (" + isa_name() +
                 ")",
             "", LOOM_DEVICE_HOST_MEMORY, kCost}};
  }

  // threads=N, precision=f32|bf16|f16, winograd=auto|tune|off, dw_fusion=auto|off,
  // depthwise=loom|onednn, conv_layout=auto|blocked|any, huge_pages=auto|off, verbose=0|1,
  // bf16_f32=none|norm,softmax,residual,final (what bf16 keeps in f32, precision.hpp; see
  // sdk::device_options: "onednn.KEY=VALUE" addresses this device only).
  std::unique_ptr<kit::Device> create(const kit::CreateArgs& args) override {
    kit::pick_instance(enumerate(), args.instance, name());
    DeviceOptions o;
    o.threads = args.threads;
    std::string precision = "f32", winograd = "auto", dw_fusion = "auto", depthwise = "loom",
                conv_layout = "auto", huge_pages = "auto";
    // The default is Bf16Keep's (precision.hpp says why `residual` is not in it).
    std::vector<std::string> bf16_f32 = bf16_keep_names(Bf16Keep{});
    kit::OptionReader(name())
        .threads(&o.threads)
        .precision(&precision)
        .choice("winograd", {"auto", "tune", "off"}, &winograd)
        .choice("dw_fusion", {"auto", "off"}, &dw_fusion)
        .choice("depthwise", {"loom", "onednn"}, &depthwise)
        .choice("conv_layout", {"auto", "blocked", "any"}, &conv_layout)
        .choice("huge_pages", {"auto", "off"}, &huge_pages)
        .flag("verbose", &o.verbose)
        .subset("bf16_f32", {"norm", "softmax", "residual", "final"}, &bf16_f32)
        .read(args.options);
    // The common convention: what a device cannot do in the asked precision runs in f32, and
    // the user is told once.
    if (precision == "f16") {
      sdk::log(LOOM_LOG_WARNING, "onednn",
               "precision=f16 is not supported by the onednn device; computing in f32");
    } else if (precision == "bf16" && !has_bf16()) {
      sdk::log(LOOM_LOG_WARNING, "onednn",
               "precision=bf16 needs a CPU with AVX-512 BF16 (this one has " + isa_name() +
                   "); computing in f32");
    } else {
      o.bf16 = precision == "bf16";
    }
    o.winograd = winograd == "auto"   ? DeviceOptions::Winograd::kAuto
                 : winograd == "tune" ? DeviceOptions::Winograd::kTune
                                      : DeviceOptions::Winograd::kOff;
    o.dw_fusion = dw_fusion == "auto";
    o.loom_depthwise = depthwise == "loom";
    o.conv_layout = conv_layout == "auto"      ? DeviceOptions::ConvLayout::kAuto
                    : conv_layout == "blocked" ? DeviceOptions::ConvLayout::kBlocked
                                               : DeviceOptions::ConvLayout::kAny;
    o.huge_pages = huge_pages == "auto";
    o.bf16_keep = bf16_keep_from(bf16_f32);
    o.threads = kit::resolve_threads(o.threads);
    kit::InstanceInfo info{"onednn",
                           "oneDNN on " + cpu_model() + " (" + isa_name() + "), " +
                               std::to_string(o.threads) + " threads, " + (o.bf16 ? "bf16" : "f32"),
                           "", LOOM_DEVICE_HOST_MEMORY, kCost};
    return std::make_unique<Device>(std::move(info), o);
  }
};

Family family;
const loom_device_api_t kDeviceApi = kit::device_api(
    family,
    "oneDNN cpu device: convolutions, matmuls and normalizations through oneDNN primitives with "
    "layout propagation and post-op fusion");

}  // namespace
}  // namespace loom::onednn

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  return loom::sdk::device_plugin_entry(
      host, registrar, info, {"onednn", "0.1.0", "oneDNN cpu device", LOOM_MAKE_ABI_VERSION(1, 0)},
      loom::onednn::kDeviceApi);
}
