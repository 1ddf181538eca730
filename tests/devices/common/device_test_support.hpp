// Shared support for device tests: build a small ONNX model in memory, run it through the
// public API on a device set and on the cpu reference device, and compare the outputs with the
// tolerances written down here, once, for every device.
//
//   ModelBuilder m;
//   m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 5, 5});
//   m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {4, 8, 3, 3}, 1));
//   m.node("Conv", {"x", "w"}, {"y"}).ints("pads", {1, 1, 1, 1});
//   m.output("y");
//   expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 5, 5}, 2)}},
//                      {.devices = "onednn", .no_fallback = true});
#pragma once

#include <loom/loom.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace loom::device_testing {

// A host tensor that owns its bytes (dense, row-major).
struct Tensor {
  loom_dtype_t dtype = LOOM_DTYPE_FLOAT32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t elements() const;
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  // A borrowed view for loom_session_run.
  loom_host_tensor_t view() const;
};

// Uniform values in [low, high) from a fixed seed; integer dtypes are rounded, bool is 0/1.
// FLOAT16/BFLOAT16 are stored as their 16-bit encodings.
Tensor random_tensor(loom_dtype_t dtype, std::vector<int64_t> shape, uint32_t seed,
                     double low = -1.0, double high = 1.0);
Tensor float_tensor(std::vector<int64_t> shape, std::vector<float> values);
Tensor int64_tensor(std::vector<int64_t> shape, std::vector<int64_t> values);

// A node under construction; attribute setters chain.
class NodeRef {
 public:
  explicit NodeRef(::onnx::NodeProto* node) : node_(node) {}
  NodeRef& i(const std::string& name, int64_t value);
  NodeRef& f(const std::string& name, float value);
  NodeRef& s(const std::string& name, const std::string& value);
  NodeRef& ints(const std::string& name, std::vector<int64_t> values);
  NodeRef& floats(const std::string& name, std::vector<float> values);
  NodeRef& domain(const std::string& domain);
  ::onnx::NodeProto& proto() { return *node_; }

 private:
  ::onnx::NodeProto* node_;
};

// A single-graph ONNX model (ir_version 8, default opset 17 unless set).
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17);
  // dims: an extent, or -1 for a symbolic dimension (named d0, d1...).
  ModelBuilder& input(const std::string& name, loom_dtype_t dtype, std::vector<int64_t> dims);
  // Outputs carry no type: the core infers them.
  ModelBuilder& output(const std::string& name);
  ModelBuilder& initializer(const std::string& name, const Tensor& value);
  NodeRef node(const std::string& op, std::vector<std::string> inputs,
               std::vector<std::string> outputs, const std::string& name = "");
  ModelBuilder& opset(const std::string& domain, int64_t version);
  ::onnx::ModelProto& proto() { return model_; }
  // Writes the model into a fresh file under the test temp directory and returns its path.
  std::filesystem::path save() const;

 private:
  ::onnx::ModelProto model_;
  int symbolic_ = 0;
};

// One Gemm, y = alpha * A' B' + beta * C: A' is the graph input "a" ([M, K], or [K, M]
// transposed), B' the constant "b" ([K, N], or [N, K] transposed), C the constant "c" of
// shape `c` (no C when empty). Every device's Gemm tests build it with gemm_model.
struct GemmShape {
  int64_t m = 1, k = 1, n = 1;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  std::vector<int64_t> c;
};
// The model of `g`, its constants drawn from the seeds; gemm_input_shape is the shape of "a".
ModelBuilder gemm_model(const GemmShape& g, uint32_t b_seed = 2, uint32_t c_seed = 3);
std::vector<int64_t> gemm_input_shape(const GemmShape& g);

struct RunOptions {
  std::string devices = "cpu";
  bool no_fallback = false;
  int threads = 0;
  std::string device_options;  // "key=value;..."
};

// Runs the model with the given inputs; throws std::runtime_error with loom's message on error.
std::vector<Tensor> run_model(const std::filesystem::path& model,
                              const std::vector<std::pair<std::string, Tensor>>& inputs,
                              const RunOptions& options);
// The same on a runtime of the caller's (e.g. one whose log callback a test reads).
std::vector<Tensor> run_model(loom_runtime_t* runtime, const std::filesystem::path& model,
                              const std::vector<std::pair<std::string, Tensor>>& inputs,
                              const RunOptions& options);

// One run of a session the caller made, with `num_outputs` outputs.
std::vector<Tensor> run_session(loom_session_t* session, size_t num_outputs,
                                const std::vector<std::pair<std::string, Tensor>>& inputs);

// A model handle and a session of the caller's runtime, for tests that run a session more than
// once or read its plan.
using ModelHandle = std::unique_ptr<loom_model_t, void (*)(loom_model_t*)>;
ModelHandle load_model(loom_runtime_t* runtime, const std::filesystem::path& path);
struct TestSession {
  std::unique_ptr<loom_session_t, void (*)(loom_session_t*)> handle{nullptr, loom_session_destroy};
  size_t num_outputs = 0;

  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& inputs);
  // A number field of the plan JSON ("constants_released", ...); a test failure and -1 when
  // the plan has no such field.
  long long plan_number(const std::string& field);
  std::string plan_json();
  loom_plan_cache_stats_t cache_stats();
};
// `placements` as loom_session_options_t::placements ("node=device;..."), `device_options` as
// RunOptions::device_options.
TestSession open_session(loom_runtime_t* runtime, loom_model_t* model, const char* devices,
                         const char* placements = "", const char* device_options = "");
TestSession open_session(loom_runtime_t* runtime, loom_model_t* model,
                         const loom_session_options_t& options);

// For devices that copy their weights at compile (plugin ABI 1.3's constant_copied): a Conv ->
// Relu -> Conv model, with a constant also handed out as a graph output, runs on `devices`
// three times matching cpu; the session reports its three weights released (the output
// constant stays), and a second session from the same model handle still runs.
void expect_copied_weights_released(const std::string& devices);
// The same model (without the constant output) with symbolic batch, height and width, on
// `devices` with fallback off: each input-shape signature gets a plan of its own whose every
// node runs there (plans by the shapes of the run), every run matches cpu, a repeated shape
// reuses its plan, and runs after the application freed its model handle still have the
// weights.
void expect_symbolic_model_runs_on(const std::string& devices);
// Bytes the process has allocated through malloc now (small blocks and mmapped ones).
size_t heap_in_use();
// Two 3x3 convolutions of 256 channels (2.25 MiB of weights each) with a symbolic image size,
// in sessions made with `options`: the plan of a second shape and a second session hold no
// second copy of the weights (the heap grows by less than one weight's bytes), every run
// matches cpu, and once every plan that held them is gone a new session makes them afresh.
void expect_plans_share_weights(const loom_session_options_t& options);

// Models hostile only at run time (docs/limits.md) on `devices` (fallback allowed): a Reshape to
// a shape whose element count wraps int64, an endless Loop (stopped by the loop limit, by a
// deadline, and by loom_session_cancel from another thread), scan outputs piling up, Resize and
// ConstantOfShape to sizes from the data. Each ends in its one-line error naming the node and
// the limit; sane inputs to the same sessions still run.
void expect_hostile_runtime_models_fail_cleanly(const std::string& devices);
// Absurd session options (threads = 100000, negative limits) are refused at creation, named.
void expect_absurd_session_options_refused(const std::string& devices);

// A model that `devices` runs as one subgraph of 64 steps, cancelled at a tenth of its run time:
// the run must end with LOOM_ERROR_CANCELLED well before the subgraph's end (for devices that
// poll loom_run_control_t between their steps).
void expect_long_subgraph_cancelled(const std::string& devices);

// Plugin ABI 1.5 profiling at the device's C ABI (profile_cases.cpp): a small network (Conv ->
// Relu -> 1x1 Conv -> residual Add -> Relu -> GlobalAveragePool -> Flatten -> MatMul -> bias
// Add) compiled by the device plugin `family` (loaded from a private copy with a fake host) and
// run with a loom_run_control_t whose profile callback records the steps. Every node is in some
// step, every index in range, each step named after its first node, with a detail, its times
// ordered, without overlap and inside the run call; a run without `profile` (and one without a
// control) reports nothing and gives the same outputs. `fuses_conv_relu`: some step computes
// both the Conv and its Relu (else every step computes at most one node). Skips when the
// device has no usable instance here.
void expect_steps_profiled(const std::string& family, bool fuses_conv_relu,
                           const std::string& device_options = "");
// The same checks on Add -> Loop (3 iterations of a two-node body) -> Relu, for devices that run
// Loop themselves; also that each top-level node is reported exactly once (the body's nodes
// never appear under the top-level graph's indices).
void expect_control_flow_profiled(const std::string& family);

// Runs the model once (the core compiles at the first run) on a runtime of its own whose debug
// log is captured, and returns the messages whose source is `source` (a device's name), for
// tests that read what a device planned from its log.
std::vector<std::string> run_model_capturing_log(
    const ModelBuilder& model, const std::vector<std::pair<std::string, Tensor>>& inputs,
    const RunOptions& options, const std::string& source);
// The same over several runs of one session (each a set of inputs: new shapes plan anew).
std::vector<std::string> run_model_capturing_log(
    const ModelBuilder& model, const std::vector<std::vector<std::pair<std::string, Tensor>>>& runs,
    const RunOptions& options, const std::string& source);

// The comparison tolerances of device outputs against the cpu reference device, per dtype:
// |a - b| <= atol + rtol * |b|. Integer, bool and string outputs must be equal.
struct Tolerance {
  double rtol;
  double atol;
};
Tolerance default_tolerance(loom_dtype_t dtype);
// For float32 models run with a reduced storage precision (the precision=f16 / bf16 device
// option): inputs, weights and every intermediate are rounded to `storage` (FLOAT16 or
// BFLOAT16) while sums run in f32, so errors grow with the reduction length and the depth.
Tolerance reduced_precision_tolerance(loom_dtype_t storage);

// Compares element by element; returns "" when equal within tolerance, else a description of
// the first mismatches (index, both values) for the test failure message.
std::string compare(const Tensor& actual, const Tensor& expected, Tolerance tolerance);
std::string compare(const Tensor& actual, const Tensor& expected);  // default_tolerance

// EXPECTs each of `got` to match the same output of `want` (default tolerances).
void expect_outputs_match(const std::vector<Tensor>& got, const std::vector<Tensor>& want);

// Runs `model` on options.devices and on cpu and EXPECTs every output to match (gtest).
// Returns the device's outputs for further checks.
std::vector<Tensor> expect_matches_cpu(const ModelBuilder& model,
                                       const std::vector<std::pair<std::string, Tensor>>& inputs,
                                       const RunOptions& options,
                                       const Tolerance* tolerance = nullptr);

// The plugin directory of the build tree (LOOM_TEST_PLUGIN_DIR, set by the CMake target).
std::string plugin_dir();

}  // namespace loom::device_testing
