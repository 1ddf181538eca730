// Plugin ABI 1.5 profiling at a device's C ABI: the test loads the device plugin the way the core
// does (a private copy of the .so, so that this process's other tests, which load the same
// plugin through the core, keep their own host), hands it a fake host, compiles hand-built
// graphs and runs them with a loom_run_control_t whose `profile` callback records the steps.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <loom/plugin.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "abi_harness.hpp"
#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

std::vector<float> ramp(size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>((i * 7919) % 23) - 11) + shift;
  return v;
}

// Conv -> Relu -> 1x1 Conv -> Add (residual) -> Relu -> GlobalAveragePool -> Flatten -> MatMul ->
// Add (bias): what devices fuse (Conv + Relu, a residual or bias Add into its producer) and what
// they may run as views (Flatten).
struct Network {
  Graph g;
  size_t conv, relu;
  std::vector<float> x = ramp(1 * 4 * 8 * 8, 0.05f, 0.1f);
  Network() {
    int32_t x_id = g.value("x", LOOM_DTYPE_FLOAT32, {1, 4, 8, 8}, LOOM_VALUE_GRAPH_INPUT);
    int32_t w0 = g.constant("w0", LOOM_DTYPE_FLOAT32, {8, 4, 3, 3}, ramp(8 * 4 * 9, 0.02f, 0));
    int32_t b0 = g.constant("b0", LOOM_DTYPE_FLOAT32, {8}, ramp(8, 0.01f, 0));
    int32_t w1 = g.constant("w1", LOOM_DTYPE_FLOAT32, {8, 8, 1, 1}, ramp(8 * 8, 0.03f, 0));
    int32_t fc = g.constant("fc", LOOM_DTYPE_FLOAT32, {8, 10}, ramp(8 * 10, 0.04f, 0));
    int32_t fcb = g.constant("fcb", LOOM_DTYPE_FLOAT32, {10}, ramp(10, 0.05f, 0));
    auto f = [&](const char* name, std::vector<int64_t> shape) {
      return g.value(name, LOOM_DTYPE_FLOAT32, std::move(shape));
    };
    int32_t c0 = f("c0", {1, 8, 8, 8}), r0 = f("r0", {1, 8, 8, 8}), c1 = f("c1", {1, 8, 8, 8}),
            s = f("s", {1, 8, 8, 8}), r1 = f("r1", {1, 8, 8, 8}), gp = f("gp", {1, 8, 1, 1}),
            fl = f("fl", {1, 8}), m = f("m", {1, 10});
    int32_t y = g.value("y", LOOM_DTYPE_FLOAT32, {1, 10}, LOOM_VALUE_GRAPH_OUTPUT);
    conv = g.node("conv0", "Conv", {x_id, w0, b0}, {c0});
    g.ints(conv, "pads", {1, 1, 1, 1});
    g.ints(conv, "kernel_shape", {3, 3});
    relu = g.node("relu0", "Relu", {c0}, {r0});
    size_t conv1 = g.node("conv1", "Conv", {r0, w1}, {c1});
    g.ints(conv1, "kernel_shape", {1, 1});
    g.node("residual", "Add", {c1, r0}, {s});
    g.node("relu1", "Relu", {s}, {r1});
    g.node("pool", "GlobalAveragePool", {r1}, {gp});
    size_t flatten = g.node("flatten", "Flatten", {gp}, {fl});
    g.integer(flatten, "axis", 1);
    g.node("fc", "MatMul", {fl, fc}, {m});
    g.node("bias", "Add", {m, fcb}, {y});
    g.finish("profiled network");
  }
};

// x -> Add(x, 1) -> Loop (3 iterations of v + v) -> Relu: a control-flow node whose body has
// nodes of its own (indices 0 and 1 of the body, which must never be reported as the top-level
// graph's nodes 0 and 1).
struct LoopModel {
  Graph body, g;
  std::vector<float> x = {-3.f, 0.5f};
  LoopModel() {
    body.value("iter", LOOM_DTYPE_INT64, {}, LOOM_VALUE_GRAPH_INPUT);
    int32_t cond_in = body.value("cond_in", LOOM_DTYPE_BOOL, {}, LOOM_VALUE_GRAPH_INPUT);
    int32_t v = body.value("v", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_INPUT);
    int32_t cond_out = body.value("cond_out", LOOM_DTYPE_BOOL, {}, LOOM_VALUE_GRAPH_OUTPUT);
    int32_t v_out = body.value("v_out", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_OUTPUT);
    body.node("keep_going", "Identity", {cond_in}, {cond_out});
    body.node("double", "Add", {v, v}, {v_out});
    int32_t x_id = g.value("x", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_INPUT);
    int32_t one = g.constant("one", LOOM_DTYPE_FLOAT32, {}, std::vector<float>{1.f});
    int32_t trips = g.constant("trips", LOOM_DTYPE_INT64, {}, std::vector<int64_t>{3});
    int32_t go = g.constant("go", LOOM_DTYPE_BOOL, {}, std::vector<uint8_t>{1});
    int32_t a = g.value("a", LOOM_DTYPE_FLOAT32, {2});
    int32_t l = g.value("l", LOOM_DTYPE_FLOAT32, {2});
    int32_t y = g.value("y", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_GRAPH_OUTPUT);
    g.node("plus_one", "Add", {x_id, one}, {a});
    size_t loop = g.node("loop", "Loop", {trips, go, a}, {l});
    g.node("relu", "Relu", {l}, {y});
    const loom_graph_t* top = g.finish("profiled loop");
    g.subgraph(loop, "body", body.finish("body", top));
    g.finish("profiled loop");
  }
};

// ---- running through the ABI ------------------------------------------------------------------

struct Step {
  std::string name, detail;
  bool has_detail = false;
  std::vector<int32_t> nodes;
  uint64_t start_ns, end_ns;
};

struct Recorder {
  std::mutex mutex;
  std::vector<Step> steps;
  static void record(void* user, const loom_profile_step_t* s) {
    auto* self = static_cast<Recorder*>(user);
    Step step;
    step.name = s->name ? s->name : "(null)";
    step.has_detail = s->detail != nullptr;
    step.detail = s->detail ? s->detail : "";
    step.nodes.assign(s->nodes, s->nodes + s->num_nodes);
    step.start_ns = s->start_ns;
    step.end_ns = s->end_ns;
    std::lock_guard<std::mutex> lock(self->mutex);
    self->steps.push_back(std::move(step));
  }
  static loom_status_t* poll(void*) { return nullptr; }
};

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

class DeviceUnderTest {
 public:
  DeviceUnderTest(const loom_device_api_t* api, const std::string& options) : api_(api) {
    loom_device_create_args_t args{};
    args.struct_size = sizeof args;
    args.host = reinterpret_cast<loom_host_t*>(this);  // opaque to the plugin
    args.instance = -1;
    args.threads = 2;
    args.options = options.c_str();
    error_ = take(api_->create(api_->user, &args, &device_));
  }
  ~DeviceUnderTest() {
    if (exe_) api_->release_executable(device_, exe_);
    if (device_) api_->destroy(device_);
  }
  const std::string& error() const { return error_; }

  std::string compile(const loom_graph_t* graph) {
    graph_ = graph;
    for (size_t n = 0; n < graph->num_nodes; ++n) {
      loom_support_t support{};
      support.struct_size = sizeof support;
      api_->supports_node(device_, graph, graph->nodes[n], &support);
      if (!support.supported)
        return std::string("node '") + graph->nodes[n]->name + "': " + support.reason;
    }
    loom_compile_args_t args{};
    args.struct_size = sizeof args;
    args.graph = graph;
    return take(api_->compile(device_, &args, &exe_));
  }

  // One float32 input and output. `control` may be null. Returns "" or the run's error.
  std::string run(const std::vector<float>& input, const loom_run_control_t* control,
                  std::vector<float>& output) {
    const loom_value_info_t& in_info = *graph_->values[graph_->inputs[0]];
    loom_tensor_t in{};
    in.struct_size = sizeof in;
    in.dtype = LOOM_DTYPE_FLOAT32;
    in.rank = in_info.rank;
    std::copy(in_info.dims, in_info.dims + in_info.rank, in.dims);
    in.byte_size = input.size() * sizeof(float);
    // In the device's own memory, as the core hands tensors over.
    std::string error = take(api_->alloc(device_, in.byte_size, &in.buffer));
    if (!error.empty()) return error;
    error = take(api_->copy_from_host(device_, input.data(), in.buffer, 0, in.byte_size));
    in.data = api_->buffer_host_ptr(device_, in.buffer);
    loom_tensor_t out{};
    out.struct_size = sizeof out;
    if (error.empty()) {
      loom_run_args_t args{};
      args.struct_size = sizeof args;
      args.num_inputs = 1;
      args.inputs = &in;
      args.num_outputs = 1;
      args.outputs = &out;
      args.control = control;
      error = take(api_->run(device_, exe_, &args));
    }
    if (error.empty()) {
      output.assign(out.byte_size / sizeof(float), 0.f);
      if (out.data)
        std::memcpy(output.data(), out.data, out.byte_size);
      else
        error =
            take(api_->copy_to_host(device_, out.buffer, out.offset, output.data(), out.byte_size));
    }
    if (out.buffer) api_->free_buffer(device_, out.buffer);
    api_->free_buffer(device_, in.buffer);
    return error;
  }

 private:
  const loom_device_api_t* api_;
  loom_device_t* device_ = nullptr;
  loom_executable_t* exe_ = nullptr;
  const loom_graph_t* graph_ = nullptr;
  std::string error_;
};

std::string describe(const std::vector<Step>& steps) {
  std::string text;
  for (const Step& s : steps) {
    text += "  '" + s.name + "' [" + s.detail + "] nodes";
    for (int32_t n : s.nodes) text += " " + std::to_string(n);
    text += " " + std::to_string(s.end_ns - s.start_ns) + " ns\n";
  }
  return text;
}

// Runs `graph` profiled twice, then with a control whose profile is NULL and with no control at
// all, and checks the reported steps against the graph. Returns the steps of the first run.
std::vector<Step> check_profiled_runs(const std::string& family, const std::string& options,
                                      const loom_graph_t* graph, const std::vector<float>& input) {
  std::string why;
  const loom_device_api_t* api = load_device(family, why);
  if (!api) {
    ADD_FAILURE() << "cannot load the " << family << " plugin: " << why;
    return {};
  }
  if (std::string reason = unavailable(api); !reason.empty()) {
    // GTEST_SKIP's own `return;` does not fit a function with a result.
    const std::string message = "no usable " + family + " device here: " + reason;
    GTEST_MESSAGE_(message.c_str(), ::testing::TestPartResult::kSkip);
    return {};
  }
  DeviceUnderTest device(api, options);
  if (!device.error().empty()) {
    ADD_FAILURE() << family << ": create: " << device.error();
    return {};
  }
  if (std::string error = device.compile(graph); !error.empty()) {
    ADD_FAILURE() << family << ": compile: " << error;
    return {};
  }
  std::vector<std::vector<float>> outputs(4);
  std::vector<Step> first;
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(family + " run " + std::to_string(run));
    Recorder recorder;
    loom_run_control_t control{};
    control.struct_size = sizeof control;
    control.poll = Recorder::poll;
    control.user = &recorder;
    if (run < 2) control.profile = Recorder::record;
    const uint64_t before = now_ns();
    std::string error = device.run(input, run < 3 ? &control : nullptr, outputs[run]);
    const uint64_t after = now_ns();
    EXPECT_EQ(error, "");
    if (!error.empty()) return {};
    if (run >= 2) {
      EXPECT_TRUE(recorder.steps.empty()) << "steps reported without a profile callback";
      continue;
    }
    const std::vector<Step>& steps = recorder.steps;
    const std::string listing = describe(steps);
    std::vector<int> covered(graph->num_nodes, 0);
    uint64_t previous_end = before;
    for (const Step& s : steps) {
      EXPECT_LE(s.start_ns, s.end_ns) << s.name << "\n" << listing;
      EXPECT_GE(s.start_ns, before) << s.name << " starts before the run call\n" << listing;
      EXPECT_LE(s.end_ns, after) << s.name << " ends after the run call\n" << listing;
      // Every device runs its steps one after the other when profiled (the GPU devices wait
      // for each), so the reports come in time order without overlap.
      EXPECT_GE(s.start_ns, previous_end) << s.name << " overlaps the step before\n" << listing;
      previous_end = std::max(previous_end, s.end_ns);
      EXPECT_TRUE(s.has_detail && !s.detail.empty()) << s.name << ": how the step ran is missing\n"
                                                     << listing;
      bool in_range = true;
      for (int32_t n : s.nodes) {
        in_range = in_range && n >= 0 && static_cast<size_t>(n) < graph->num_nodes;
        EXPECT_TRUE(n >= 0 && static_cast<size_t>(n) < graph->num_nodes)
            << s.name << " reports node " << n << " of " << graph->num_nodes << "\n"
            << listing;
        if (in_range) ++covered[static_cast<size_t>(n)];
      }
      // A node's step carries the node's name; a fused step its first node's.
      if (!s.nodes.empty() && in_range) {
        EXPECT_EQ(s.name, graph->nodes[s.nodes[0]]->name) << listing;
      }
    }
    for (size_t n = 0; n < graph->num_nodes; ++n)
      EXPECT_GE(covered[n], 1) << "node " << n << " ('" << graph->nodes[n]->name
                               << "') is in no step\n"
                               << listing;
    if (run == 0) first = steps;
  }
  // Profiling changes no result.
  for (int run = 1; run < 4; ++run) {
    EXPECT_EQ(outputs[run].size(), outputs[0].size());
    for (size_t i = 0; i < std::min(outputs[0].size(), outputs[run].size()); ++i)
      EXPECT_NEAR(outputs[run][i], outputs[0][i], 1e-5f * (1.f + std::fabs(outputs[0][i])))
          << "run " << run << ", element " << i;
  }
  return first;
}

}  // namespace

void expect_steps_profiled(const std::string& family, bool fuses_conv_relu,
                           const std::string& device_options) {
  Network net;
  std::vector<Step> steps = check_profiled_runs(family, device_options, &net.g.graph, net.x);
  if (steps.empty() || ::testing::Test::IsSkipped()) return;
  const std::string listing = describe(steps);
  const auto conv = static_cast<int32_t>(net.conv), relu = static_cast<int32_t>(net.relu);
  bool fused = false;
  for (const Step& s : steps) {
    if (s.nodes.empty()) continue;
    if (std::count(s.nodes.begin(), s.nodes.end(), conv) &&
        std::count(s.nodes.begin(), s.nodes.end(), relu))
      fused = true;
    if (!fuses_conv_relu) {
      EXPECT_EQ(s.nodes.size(), 1u) << family << " fuses nothing, yet:\n" << listing;
    }
  }
  if (fuses_conv_relu) {
    EXPECT_TRUE(fused) << family << " runs Conv + Relu as one step, reported with both nodes:\n"
                       << listing;
    // The fused Relu runs inside the Conv's step(s) (a device may launch several kernels for
    // one Conv, im2col and GEMM on opencl): no step of its own.
    for (const Step& s : steps) EXPECT_FALSE(s.nodes.size() == 1 && s.nodes[0] == relu) << listing;
  }
}

void expect_control_flow_profiled(const std::string& family) {
  LoopModel model;
  std::vector<Step> steps = check_profiled_runs(family, "", &model.g.graph, model.x);
  if (steps.empty() || ::testing::Test::IsSkipped()) return;
  // One step per top-level node: the Loop's, spanning its three iterations; its body's nodes
  // (indices of the body graph) are not reported as the top-level nodes 0 and 1.
  const std::string listing = describe(steps);
  std::vector<int> count(model.g.graph.num_nodes, 0);
  for (const Step& s : steps)
    for (int32_t n : s.nodes)
      if (n >= 0 && static_cast<size_t>(n) < count.size()) ++count[static_cast<size_t>(n)];
  for (size_t n = 0; n < count.size(); ++n)
    EXPECT_EQ(count[n], 1) << "node " << n << "\n" << listing;
}

}  // namespace loom::device_testing
