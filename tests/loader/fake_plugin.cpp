// A configurable fake plugin for the loader and session tests. Compile definitions choose what
// it is: FAKE_NAME (plugin name), FAKE_ABI (version it claims), FAKE_INIT_FAIL (entry fails),
// FAKE_DEVICE (register the fake devices), FAKE_FORMAT (register the fake format), FAKE_EXIT
// (the entry calls exit() with that status), FAKE_CRASH (the entry dies of SIGSEGV), FAKE_HANG
// (the entry never returns).
//
// The fake format reads text files "FAKEMODEL <op> <op> ...": a chain x -> op -> ... -> y on a
// float32 vector of dynamic length N, opset 13. A first token "const=a,b,c" starts the chain at
// an initializer "w" holding those floats instead of at x (x stays an input, unused). Device
// "fakehost" (host memory) runs Relu and Neg; device "fakeremote" runs Neg only and keeps its
// memory "remote" (not host-visible), so the core must copy through copy_to_host/copy_from_host.
#include <loom/plugin.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#ifndef FAKE_NAME
#define FAKE_NAME "fake"
#endif
#ifndef FAKE_ABI
#define FAKE_ABI LOOM_ABI_VERSION
#endif

namespace {

using loom::sdk::fail;
using loom::sdk::guard;

#ifdef FAKE_FORMAT
// ---- format -------------------------------------------------------------------------------

int32_t probe(void*, const uint8_t* head, size_t size, const char*) {
  return size >= 9 && std::memcmp(head, "FAKEMODEL", 9) == 0 ? 100 : 0;
}

loom_status_t* load(void*, const loom_load_args_t* args, const loom_builder_api_t* api,
                    loom_graph_builder_t* b) {
  return guard([&] {
    std::string text(reinterpret_cast<const char*>(args->data), args->size);
    std::istringstream in(text);
    std::string magic, op;
    in >> magic;
    std::vector<std::string> ops;
    while (in >> op) ops.push_back(op);
    loom::sdk::check(api->set_opset(b, "", 13));
    loom::sdk::check(api->set_metadata(b, "producer_name", "fake"));
    int64_t dim = -1;
    const char* param = "N";
    loom::sdk::check(api->add_input(b, "x", LOOM_DTYPE_FLOAT32, 1, &dim, &param));
    std::string prev = "x";
    if (!ops.empty() && ops[0].rfind("const=", 0) == 0) {
      std::vector<float> w;
      std::istringstream values(ops[0].substr(6));
      for (std::string v; std::getline(values, v, ',');) w.push_back(std::stof(v));
      int64_t n = static_cast<int64_t>(w.size());
      loom::sdk::check(api->add_initializer(b, "w", LOOM_DTYPE_FLOAT32, 1, &n, w.data(),
                                            w.size() * sizeof(float)));
      prev = "w";
      ops.erase(ops.begin());
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      std::string out = i + 1 == ops.size() ? "y" : "t" + std::to_string(i);
      const char* ins[] = {prev.c_str()};
      const char* outs[] = {out.c_str()};
      loom_node_builder_t* nb = nullptr;
      loom::sdk::check(api->add_node(b, ("n" + std::to_string(i)).c_str(), ops[i].c_str(), "", 1, ins, 1, outs, &nb));
      prev = out;
    }
    loom::sdk::check(api->add_output(b, prev.c_str(), LOOM_DTYPE_FLOAT32, 1, &dim, &param));
  });
}

#endif  // FAKE_FORMAT

#ifdef FAKE_DEVICE
// ---- devices ------------------------------------------------------------------------------

struct FakeDevice {
  bool remote;
};
struct FakeBuffer {
  std::vector<float> bytes;  // float-aligned storage
  size_t size;
};
struct FakeExe {
  std::vector<std::string> ops;
  // A chain fed by a constant (the "const=" model): its data, borrowed from the view as a real
  // device's weights are, and read at every run.
  const float* constant = nullptr;
  size_t constant_count = 0;
};

FakeDevice* dev(loom_device_t* d) { return reinterpret_cast<FakeDevice*>(d); }
FakeBuffer* buf(loom_buffer_t* b) { return reinterpret_cast<FakeBuffer*>(b); }

template <bool Remote>
void enumerate(void*, void (*fn)(void*, const loom_device_info_t*), void* user) {
  loom_device_info_t info{};
  info.struct_size = sizeof info;
  std::strcpy(info.name, Remote ? "fakeremote" : "fakehost");
  std::strcpy(info.description, "fake test device");
  info.available = true;
  info.flags = Remote ? 0 : LOOM_DEVICE_HOST_MEMORY;
  fn(user, &info);
}

template <bool Remote>
loom_status_t* create(void*, const loom_device_create_args_t*, loom_device_t** out) {
  *out = reinterpret_cast<loom_device_t*>(new FakeDevice{Remote});
  return nullptr;
}
void destroy(loom_device_t* d) { delete dev(d); }
void get_info(loom_device_t* d, loom_device_info_t* out) {
  bool remote = dev(d)->remote;
  std::memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  std::strcpy(out->name, remote ? "fakeremote" : "fakehost");
  out->available = true;
  out->flags = remote ? 0 : LOOM_DEVICE_HOST_MEMORY;
}
void supports(loom_device_t* d, const loom_graph_t* graph, const loom_node_t* node, loom_support_t* out) {
  std::string op = node->op_type;
  // Like a real device, decide by dtype: intermediate values must arrive typed. (Nodes without
  // a first input, e.g. Constant in a real model, are not the fake's either.)
  if (node->num_inputs == 0 || node->inputs[0] < 0 ||
      graph->values[node->inputs[0]]->dtype != LOOM_DTYPE_FLOAT32) {
    out->supported = false;
    std::snprintf(out->reason, sizeof out->reason, "fake device needs a float32 input");
    return;
  }
  out->supported = op == "Neg" || (!dev(d)->remote && op == "Relu");
  if (!out->supported) std::snprintf(out->reason, sizeof out->reason, "fake device has no %s", node->op_type);
}
loom_status_t* alloc(loom_device_t*, size_t size, loom_buffer_t** out) {
  auto* b = new FakeBuffer{std::vector<float>((size + 3) / 4), size};
  *out = reinterpret_cast<loom_buffer_t*>(b);
  return nullptr;
}
void free_buffer(loom_device_t*, loom_buffer_t* b) { delete buf(b); }
void* host_ptr(loom_device_t* d, loom_buffer_t* b) {
  return dev(d)->remote ? nullptr : buf(b)->bytes.data();
}
loom_status_t* to_host(loom_device_t*, loom_buffer_t* src, size_t offset, void* dst, size_t size) {
  std::memcpy(dst, reinterpret_cast<char*>(buf(src)->bytes.data()) + offset, size);
  return nullptr;
}
loom_status_t* from_host(loom_device_t*, const void* src, loom_buffer_t* dst, size_t offset, size_t size) {
  std::memcpy(reinterpret_cast<char*>(buf(dst)->bytes.data()) + offset, src, size);
  return nullptr;
}
loom_status_t* compile(loom_device_t*, const loom_compile_args_t* args, loom_executable_t** out) {
  return guard([&] {
    auto* exe = new FakeExe;
    for (size_t i = 0; i < args->graph->num_nodes; ++i) exe->ops.push_back(args->graph->nodes[i]->op_type);
    if (args->graph->num_inputs == 0 && args->graph->num_nodes > 0 &&
        args->graph->nodes[0]->num_inputs == 1 && args->graph->nodes[0]->inputs[0] >= 0) {
      const loom_value_info_t* w = args->graph->values[args->graph->nodes[0]->inputs[0]];
      if ((w->flags & LOOM_VALUE_CONSTANT) && w->data && w->dtype == LOOM_DTYPE_FLOAT32) {
        exe->constant = static_cast<const float*>(w->data);
        exe->constant_count = w->data_size / sizeof(float);
      }
    }
    if ((args->graph->num_inputs != 1 && !exe->constant) || args->graph->num_outputs != 1) {
      delete exe;
      fail(LOOM_ERROR_UNSUPPORTED, "fake devices compile single-input single-output chains only");
    }
    *out = reinterpret_cast<loom_executable_t*>(exe);
  });
}
void release(loom_device_t*, loom_executable_t* e) { delete reinterpret_cast<FakeExe*>(e); }
loom_status_t* run(loom_device_t* d, loom_executable_t* e, const loom_run_args_t* args) {
  return guard([&] {
    const FakeExe* exe = reinterpret_cast<FakeExe*>(e);
    bool remote = dev(d)->remote;
    size_t n = exe->constant_count;
    const float* src = exe->constant;
    if (!src) {
      const loom_tensor_t& in = args->inputs[0];
      // A remote device must never be handed host pointers it did not allocate.
      if (remote && (in.buffer == nullptr || in.data != nullptr))
        fail(LOOM_ERROR_INTERNAL, "fakeremote got a tensor that is not in its memory");
      n = static_cast<size_t>(in.dims[0]);
      src = remote ? reinterpret_cast<const float*>(
                         reinterpret_cast<const char*>(buf(in.buffer)->bytes.data()) + in.offset)
                   : static_cast<const float*>(in.data);
    }
    std::vector<float> v(src, src + n);
    // fakehost reports each op as a step (plugin ABI 1.5 profiling); fakeremote reports none,
    // like a device built for an older ABI, so the core must time its calls as a whole.
    const loom::sdk::RunControl control(args);
    const auto& ops = reinterpret_cast<FakeExe*>(e)->ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      const uint64_t start = control.profiling() ? loom::sdk::RunControl::now_ns() : 0;
      for (float& x : v) x = ops[k] == "Neg" ? -x : (x > 0 ? x : 0);
      if (!remote && control.profiling()) {
        const int32_t node = static_cast<int32_t>(k);
        control.profile("", "fake loop", {&node, 1}, start, loom::sdk::RunControl::now_ns());
      }
    }
    loom_buffer_t* out = nullptr;
    alloc(d, n * 4, &out);
    std::memcpy(buf(out)->bytes.data(), v.data(), n * 4);
    loom_tensor_t& t = args->outputs[0];
    t.dtype = LOOM_DTYPE_FLOAT32;
    t.rank = 1;
    t.dims[0] = static_cast<int64_t>(n);
    t.buffer = out;
    t.offset = 0;
    t.data = remote ? nullptr : buf(out)->bytes.data();
    t.byte_size = n * 4;
  });
}

template <bool Remote>
loom_device_api_t device_api(const char* name) {
  loom_device_api_t api{};
  api.struct_size = sizeof api;
  api.name = name;
  api.description = "fake device for tests";
  api.enumerate = enumerate<Remote>;
  api.create = create<Remote>;
  api.destroy = destroy;
  api.get_info = get_info;
  api.supports_node = supports;
  api.alloc = alloc;
  api.free_buffer = free_buffer;
  api.buffer_host_ptr = host_ptr;
  api.copy_to_host = to_host;
  api.copy_from_host = from_host;
  api.compile = compile;
  api.release_executable = release;
  api.run = run;
  return api;
}
#endif  // FAKE_DEVICE

}  // namespace

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
#ifdef FAKE_EXIT
  std::exit(FAKE_EXIT);
#endif
#ifdef FAKE_CRASH
  std::raise(SIGSEGV);
#endif
#ifdef FAKE_HANG
  for (;;) ::pause();
#endif
  loom::sdk::set_host(host);
  info->abi_version = FAKE_ABI;
  info->name = FAKE_NAME;
  info->version = "1.2.3";
  info->description = "fake plugin for tests";
  (void)registrar;
#ifdef FAKE_INIT_FAIL
  return host->status_new(LOOM_ERROR_UNAVAILABLE, "the fake plugin refuses to start");
#else
#ifdef FAKE_FORMAT
  loom_format_t format{};
  format.struct_size = sizeof format;
  format.name = "fake";
  format.description = "fake text models";
  format.extensions = ".fake";
  format.probe = probe;
  format.load = load;
  if (loom_status_t* s = host->register_format(registrar, &format)) return s;
#endif
#ifdef FAKE_DEVICE
  static const loom_device_api_t host_dev = device_api<false>("fakehost");
  static const loom_device_api_t remote_dev = device_api<true>("fakeremote");
  if (loom_status_t* s = host->register_device(registrar, &host_dev)) return s;
  if (loom_status_t* s = host->register_device(registrar, &remote_dev)) return s;
#endif
  return nullptr;
#endif
}
