// The cpu device through its C ABI, as the core sees it: the test loads the built plugin
// (loom_cpu.so) with dlopen, hands it a fake host, and compiles and runs hand-built graphs.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <loom/plugin.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "abi_harness.hpp"

namespace {

// ---- a fake host ----------------------------------------------------------------------------

}  // namespace

struct loom_status_t {
  loom_status_code_t code;
  std::string message;
};

namespace {

loom_status_t* status_new(loom_status_code_t code, const char* message) {
  return new loom_status_t{code, message ? message : ""};
}
loom_status_code_t status_code(const loom_status_t* s) {
  return s ? s->code : LOOM_OK;
}
const char* status_message(const loom_status_t* s) {
  return s ? s->message.c_str() : "";
}
void status_free(loom_status_t* s) {
  delete s;
}
void log_message(loom_log_level_t, const char*, const char*) {}

const loom_device_api_t* g_device = nullptr;
loom_status_t* register_device(loom_registrar_t*, const loom_device_api_t* api) {
  g_device = api;
  return nullptr;
}

// A kernel "plugin" kernel for com.test::Double (y = 2x, float), found through find_kernel.
loom_status_t* double_compute(void*, const loom_node_t*, const loom_kernel_context_api_t* api,
                              loom_kernel_context_t* ctx) {
  const loom_tensor_t* x = api->input(ctx, 0);
  if (!x) return status_new(LOOM_ERROR_INVALID_ARGUMENT, "Double: missing input");
  loom_tensor_t* y = nullptr;
  if (loom_status_t* s = api->allocate_output(ctx, 0, x->dtype, x->rank, x->dims, &y)) return s;
  size_t n = x->byte_size / sizeof(float);
  struct Job {
    const float* in;
    float* out;
  } job{static_cast<const float*>(x->data), static_cast<float*>(y->data)};
  api->parallel_for(
      ctx, n,
      [](void* user, size_t b, size_t e) {
        auto* j = static_cast<Job*>(user);
        for (size_t i = b; i < e; ++i) j->out[i] = 2 * j->in[i];
      },
      &job);
  return nullptr;
}
const loom_kernel_t kDoubleKernel = {
    sizeof(loom_kernel_t), "cpu",   "com.test", "Double", 1, nullptr,
    double_compute,        nullptr, nullptr};
const loom_kernel_t* find_kernel(loom_host_t*, const char* device, const char* domain,
                                 const char* op, int64_t) {
  if (std::string(device) == "cpu" && std::string(domain) == "com.test" &&
      std::string(op) == "Double")
    return &kDoubleKernel;
  return nullptr;
}

loom_host_api_t make_host(uint32_t abi) {
  loom_host_api_t h{};
  h.struct_size = sizeof h;
  h.abi_version = abi;
  h.status_new = status_new;
  h.status_code = status_code;
  h.status_message = status_message;
  h.status_free = status_free;
  h.log = log_message;
  h.register_device = register_device;
  h.find_kernel = find_kernel;
  return h;
}

std::string plugin_path() {
  if (const char* env = std::getenv("LOOM_CPU_PLUGIN")) return env;
  // The test binary lives in <build>/bin, plugins in <build>/plugins.
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  return (exe.parent_path().parent_path() / "plugins" / "loom_cpu.so").string();
}

loom_plugin_entry_fn load_entry() {
  static void* handle = dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return nullptr;
  return reinterpret_cast<loom_plugin_entry_fn>(dlsym(handle, LOOM_PLUGIN_ENTRY_SYMBOL));
}

// Hand-built graphs: device_testing::Graph (tests/devices/common/abi_harness.hpp, header-only
// for this part), as the device ABI suite builds them.
using loom::device_testing::Graph;

using loom::device_testing::host_tensor;

class CpuDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loom_plugin_entry_fn entry = load_entry();
    ASSERT_NE(entry, nullptr) << "cannot load " << plugin_path() << ": " << dlerror()
                              << " (build the loom_plugin_cpu target first)";
    host_ = make_host(LOOM_ABI_VERSION);
    loom_plugin_info_t info{};
    info.struct_size = sizeof info;
    loom_status_t* s = entry(&host_, nullptr, &info);
    ASSERT_EQ(s, nullptr) << status_message(s);
    ASSERT_NE(g_device, nullptr);
    EXPECT_STREQ(info.name, "cpu");
    EXPECT_EQ(info.abi_version, LOOM_ABI_VERSION);
    loom_device_create_args_t args{};
    args.struct_size = sizeof args;
    args.host = reinterpret_cast<loom_host_t*>(this);  // opaque to the plugin
    args.instance = -1;
    args.threads = 4;
    args.options = "";
    s = g_device->create(g_device->user, &args, &device_);
    ASSERT_EQ(s, nullptr) << status_message(s);
  }
  void TearDown() override {
    if (device_) g_device->destroy(device_);
  }

  // Compiles and runs; returns the error message ("" on success).
  std::string compile_and_run(const loom_graph_t* graph, std::vector<loom_tensor_t> inputs,
                              std::vector<loom_tensor_t>& outputs) {
    loom_compile_args_t ca{};
    ca.struct_size = sizeof ca;
    ca.graph = graph;
    loom_executable_t* exe = nullptr;
    if (loom_status_t* s = g_device->compile(device_, &ca, &exe)) {
      std::string m = s->message;
      status_free(s);
      return "compile: " + m;
    }
    outputs.assign(graph->num_outputs, loom_tensor_t{});
    loom_run_args_t ra{};
    ra.struct_size = sizeof ra;
    ra.num_inputs = inputs.size();
    ra.inputs = inputs.data();
    ra.num_outputs = outputs.size();
    ra.outputs = outputs.data();
    loom_status_t* s = g_device->run(device_, exe, &ra);
    g_device->release_executable(device_, exe);
    if (s) {
      std::string m = s->message;
      status_free(s);
      return "run: " + m;
    }
    return "";
  }

  std::vector<float> read_floats(const loom_tensor_t& t) {
    std::vector<float> v(t.byte_size / sizeof(float));
    EXPECT_EQ(g_device->copy_to_host(device_, t.buffer, t.offset, v.data(), t.byte_size), nullptr);
    return v;
  }

  loom_host_api_t host_{};
  loom_device_t* device_ = nullptr;
};

TEST_F(CpuDeviceTest, AddReluReduceSumThroughTheAbi) {
  Graph b;
  int32_t x = b.value("x", LOOM_DTYPE_FLOAT32, {2, 3}, LOOM_VALUE_GRAPH_INPUT);
  int32_t c = b.constant("bias", LOOM_DTYPE_FLOAT32, {3}, std::vector<float>{1.0f, -10.0f, 0.5f});
  int32_t ax = b.constant("axes", LOOM_DTYPE_INT64, {1}, std::vector<int64_t>{1});
  int32_t s = b.value("s", LOOM_DTYPE_FLOAT32, {2, 3});
  int32_t r = b.value("r", LOOM_DTYPE_FLOAT32, {2, 3});
  int32_t y = b.value("y", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_OUTPUT);
  b.node("add0", "Add", {x, c}, {s}, 18);
  b.node("relu0", "Relu", {s}, {r}, 18);
  size_t sum = b.node("sum0", "ReduceSum", {r, ax}, {y}, 18);
  b.integer(sum, "keepdims", 0);
  const loom_graph_t* g = b.finish("test");

  float in[6] = {1, 2, 3, -4, 5, -6};
  std::vector<loom_tensor_t> outputs;
  ASSERT_EQ(compile_and_run(g, {host_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, in, sizeof in)}, outputs),
            "");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].dtype, LOOM_DTYPE_FLOAT32);
  ASSERT_EQ(outputs[0].rank, 1);
  EXPECT_EQ(outputs[0].dims[0], 2);
  ASSERT_NE(outputs[0].buffer, nullptr);
  EXPECT_EQ(g_device->buffer_host_ptr(device_, outputs[0].buffer), outputs[0].data);
  // Row 0: relu(2, -8, 3.5) = 2 + 0 + 3.5; row 1: relu(-3, -5, -5.5) = 0.
  EXPECT_EQ(read_floats(outputs[0]), (std::vector<float>{5.5f, 0.0f}));
  g_device->free_buffer(device_, outputs[0].buffer);
}

TEST_F(CpuDeviceTest, KernelPluginKernelRunsThroughTheContextAdapter) {
  Graph b;
  int32_t x = b.value("x", LOOM_DTYPE_FLOAT32, {100000}, LOOM_VALUE_GRAPH_INPUT);
  int32_t y = b.value("y", LOOM_DTYPE_FLOAT32, {100000}, LOOM_VALUE_GRAPH_OUTPUT);
  b.node("dbl", "Double", {x}, {y}, 18, "com.test");
  const loom_graph_t* g = b.finish("test");

  loom_support_t support{};
  support.struct_size = sizeof support;
  g_device->supports_node(device_, g, g->nodes[0], &support);
  EXPECT_TRUE(support.supported) << support.reason;

  std::vector<float> in(100000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  std::vector<loom_tensor_t> outputs;
  ASSERT_EQ(compile_and_run(
                g, {host_tensor(LOOM_DTYPE_FLOAT32, {100000}, in.data(), in.size() * 4)}, outputs),
            "");
  std::vector<float> out = read_floats(outputs[0]);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); i += 997) EXPECT_EQ(out[i], 2.0f * in[i]) << i;
  EXPECT_EQ(out.back(), 2.0f * in.back());
  g_device->free_buffer(device_, outputs[0].buffer);
}

TEST_F(CpuDeviceTest, UnknownOpIsUnsupportedWithAReason) {
  Graph b;
  int32_t x = b.value("x", LOOM_DTYPE_FLOAT32, {1}, LOOM_VALUE_GRAPH_INPUT);
  int32_t y = b.value("y", LOOM_DTYPE_FLOAT32, {1}, LOOM_VALUE_GRAPH_OUTPUT);
  b.node("bar0", "Bar", {x}, {y}, 1, "com.foo");
  const loom_graph_t* g = b.finish("test");
  loom_support_t support{};
  support.struct_size = sizeof support;
  g_device->supports_node(device_, g, g->nodes[0], &support);
  EXPECT_FALSE(support.supported);
  EXPECT_STREQ(support.reason, "no cpu kernel for com.foo::Bar (opset 1)");
  std::vector<loom_tensor_t> outputs;
  float in = 1;
  std::string error = compile_and_run(g, {host_tensor(LOOM_DTYPE_FLOAT32, {1}, &in, 4)}, outputs);
  EXPECT_NE(error.find("Bar node 'bar0'"), std::string::npos) << error;
}

TEST_F(CpuDeviceTest, RunErrorsNameTheNode) {
  Graph b;
  int32_t x = b.value("x", LOOM_DTYPE_FLOAT32, {2, 3}, LOOM_VALUE_GRAPH_INPUT);
  int32_t z = b.value("z", LOOM_DTYPE_FLOAT32, {4}, LOOM_VALUE_GRAPH_INPUT);
  int32_t y = b.value("y", LOOM_DTYPE_FLOAT32, {}, LOOM_VALUE_GRAPH_OUTPUT);
  b.values[static_cast<size_t>(y)].rank = -1;
  b.node("fc1", "Add", {x, z}, {y}, 18);
  const loom_graph_t* g = b.finish("test");
  float a[6] = {}, c[4] = {};
  std::vector<loom_tensor_t> outputs;
  std::string error = compile_and_run(g,
                                      {host_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, a, sizeof a),
                                       host_tensor(LOOM_DTYPE_FLOAT32, {4}, c, sizeof c)},
                                      outputs);
  EXPECT_NE(error.find("Add node 'fc1': shapes [2,3] and [4] cannot be broadcast"),
            std::string::npos)
      << error;
}

TEST_F(CpuDeviceTest, WrongInputTypeIsRefused) {
  Graph b;
  int32_t x = b.value("x", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_INPUT);
  int32_t y = b.value("y", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_OUTPUT);
  b.node("r", "Relu", {x}, {y}, 18);
  const loom_graph_t* g = b.finish("test");
  int32_t in[2] = {1, 2};
  std::vector<loom_tensor_t> outputs;
  std::string error =
      compile_and_run(g, {host_tensor(LOOM_DTYPE_INT32, {2}, in, sizeof in)}, outputs);
  // The device kit checks every input's dtype against the compiled subgraph before the run.
  EXPECT_NE(error.find("cpu run: input 0 is int32, the subgraph takes float32"), std::string::npos)
      << error;
}

TEST_F(CpuDeviceTest, PassThroughOfAnInputIsCopiedIntoADeviceBuffer) {
  Graph b;
  int32_t x = b.value("x", LOOM_DTYPE_FLOAT32, {3}, LOOM_VALUE_GRAPH_INPUT);
  int32_t y = b.value("y", LOOM_DTYPE_FLOAT32, {3}, LOOM_VALUE_GRAPH_OUTPUT);
  b.node("id", "Identity", {x}, {y}, 18);
  const loom_graph_t* g = b.finish("test");
  float in[3] = {1, 2, 3};
  std::vector<loom_tensor_t> outputs;
  ASSERT_EQ(compile_and_run(g, {host_tensor(LOOM_DTYPE_FLOAT32, {3}, in, sizeof in)}, outputs), "");
  EXPECT_NE(outputs[0].data,
            static_cast<void*>(in));  // the caller's input memory is not handed back
  in[0] = 42;
  EXPECT_EQ(read_floats(outputs[0]), (std::vector<float>{1, 2, 3}));
  g_device->free_buffer(device_, outputs[0].buffer);
}

TEST_F(CpuDeviceTest, BuffersCopyAndCheckTheirBounds) {
  loom_buffer_t* buf = nullptr;
  ASSERT_EQ(g_device->alloc(device_, 16, &buf), nullptr);
  ASSERT_NE(g_device->buffer_host_ptr(device_, buf), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g_device->buffer_host_ptr(device_, buf)) % 64, 0u);
  const char src[8] = "abcdefg";
  EXPECT_EQ(g_device->copy_from_host(device_, src, buf, 8, 8), nullptr);
  char dst[8] = {};
  EXPECT_EQ(g_device->copy_to_host(device_, buf, 8, dst, 8), nullptr);
  EXPECT_STREQ(dst, "abcdefg");
  loom_status_t* s = g_device->copy_to_host(device_, buf, 12, dst, 8);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->code, LOOM_ERROR_INVALID_ARGUMENT);
  status_free(s);
  g_device->free_buffer(device_, buf);
}

TEST_F(CpuDeviceTest, EnumerateAndInfoDescribeTheCpu) {
  int count = 0;
  g_device->enumerate(
      g_device->user,
      [](void* user, const loom_device_info_t* info) {
        ++*static_cast<int*>(user);
        EXPECT_STREQ(info->name, "cpu");
        EXPECT_TRUE(info->available);
        EXPECT_EQ(info->flags & LOOM_DEVICE_HOST_MEMORY, LOOM_DEVICE_HOST_MEMORY);
        EXPECT_NE(std::string(info->description).find("hardware threads"), std::string::npos);
      },
      &count);
  EXPECT_EQ(count, 1);
  loom_device_info_t info{};
  info.struct_size = sizeof info;
  g_device->get_info(device_, &info);
  EXPECT_NE(std::string(info.description).find("4 threads"), std::string::npos) << info.description;
}

TEST(CpuPluginEntry, RefusesAnotherMajorNamingBothVersions) {
  loom_plugin_entry_fn entry = load_entry();
  ASSERT_NE(entry, nullptr) << "cannot load " << plugin_path();
  static loom_host_api_t host = make_host(LOOM_MAKE_ABI_VERSION(2, 3));  // the plugin keeps it
  loom_plugin_info_t info{};
  info.struct_size = sizeof info;
  loom_status_t* s = entry(&host, nullptr, &info);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->code, LOOM_ERROR_INCOMPATIBLE);
  const std::string ours =
      std::to_string(LOOM_ABI_VERSION_MAJOR) + "." + std::to_string(LOOM_ABI_VERSION_MINOR);
  EXPECT_NE(s->message.find(ours), std::string::npos) << s->message;
  EXPECT_NE(s->message.find("2.3"), std::string::npos) << s->message;
  status_free(s);
}

}  // namespace
