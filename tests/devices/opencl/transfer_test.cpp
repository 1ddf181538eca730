// Uploads overlapping kernels: copy_from_host returns once the data is captured and the write
// runs on the transfer queue, while kernels wait for it through events. These tests check the
// ordering that has to hold: back-to-back runs of one session with different inputs, several
// inputs per run, values crossing between devices every run, and sessions in several threads
// sharing the device's queues, each against the cpu reference device.
#include <loom/loom.hpp>
#include <string>
#include <thread>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

// A model with three inputs of different sizes (three uploads per run) and enough kernels
// that uploads of the next run's inputs can meet the previous run's work in the queues.
ModelBuilder three_input_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 24, 24});
  m.input("bias", LOOM_DTYPE_FLOAT32, {1, 16, 1, 1});
  m.input("scale", LOOM_DTYPE_FLOAT32, {16});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {16, 8, 3, 3}, 5));
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Add", {"c", "bias"}, {"a"});
  m.node("Relu", {"a"}, {"r"});
  m.node("GlobalAveragePool", {"r"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  m.node("Mul", {"f", "scale"}, {"y"});
  m.output("y");
  m.output("r");
  return m;
}

std::vector<std::pair<std::string, Tensor>> inputs_for(uint32_t seed) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 24, 24}, seed)},
          {"bias", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 1, 1}, seed + 1)},
          {"scale", random_tensor(LOOM_DTYPE_FLOAT32, {16}, seed + 2, 0.5, 2.0)}};
}

Tensor to_tensor(loom::HostTensor& out) {
  Tensor t;
  t.dtype = out.dtype();
  t.shape = out.shape();
  const auto* bytes = out.data<uint8_t>();
  t.bytes.assign(bytes, bytes + out.byte_size());
  return t;
}

class SessionOn {
 public:
  // `placements` pins nodes ("PATTERN=DEVICE;..."): the scheduler would keep small models on
  // cpu when it may.
  SessionOn(const loom::Runtime& runtime, const std::filesystem::path& path,
            const std::string& devices, const std::string& device_options,
            const std::string& placements = "")
      : model_(runtime, path.string()),
        options_(device_options),
        devices_(devices),
        placements_(placements) {
    loom_session_options_t o{};
    o.struct_size = sizeof o;
    o.devices = devices_.c_str();
    o.no_fallback = devices_ == "opencl";
    o.device_options = options_.c_str();
    o.placements = placements_.c_str();
    session_ = std::make_unique<loom::Session>(runtime, model_, o);
  }
  std::string explain() { return session_->explain(); }
  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& inputs) {
    std::vector<std::pair<std::string, loom_host_tensor_t>> views;
    for (const auto& [name, t] : inputs) views.emplace_back(name, t.view());
    std::vector<loom::HostTensor> outs = session_->run(views);
    std::vector<Tensor> result;
    for (auto& o : outs) result.push_back(to_tensor(o));
    return result;
  }

 private:
  loom::Model model_;
  std::string options_, devices_, placements_;
  std::unique_ptr<loom::Session> session_;
};

// "" when every output matches, else the first problem.
std::string mismatch(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                     const Tolerance& tolerance) {
  if (actual.size() != expected.size()) return "output count differs";
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::string p = compare(actual[i], expected[i], tolerance); !p.empty())
      return "output " + std::to_string(i) + ": " + p;
  return "";
}

class OpenclTransfers : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenclTransfers, BackToBackRunsWithDifferentInputs) {
  LOOM_REQUIRE_OPENCL();
  const std::string precision = GetParam();
  const Tolerance tol = precision == "f16" ? reduced_precision_tolerance(LOOM_DTYPE_FLOAT16)
                                           : default_tolerance(LOOM_DTYPE_FLOAT32);
  std::filesystem::path path = three_input_model().save();
  loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  SessionOn device(runtime, path, "opencl", "precision=" + precision);
  SessionOn cpu(runtime, path, "cpu", "");
  for (uint32_t run = 0; run < 8; ++run) {
    auto inputs = inputs_for(100 + 10 * run);
    EXPECT_EQ(mismatch(device.run(inputs), cpu.run(inputs), tol), "") << "run " << run;
  }
  std::filesystem::remove(path);
}

TEST_P(OpenclTransfers, ValuesCrossBetweenDevicesEveryRun) {
  LOOM_REQUIRE_OPENCL();
  // TopK runs on cpu: each run uploads the cpu result back into opencl buffers mid-graph. The
  // inputs are distinct multiples of 1/32 (exact in fp16), so TopK sees no ties under f16.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {6, 40});
  m.initializer("k", int64_tensor({1}, {8}));
  m.node("Neg", {"x"}, {"s"});
  m.node("TopK", {"s", "k"}, {"top", "idx"});
  m.node("Exp", {"top"}, {"e"});
  m.node("Cast", {"idx"}, {"fi"}).i("to", LOOM_DTYPE_FLOAT32);
  m.node("Add", {"e", "fi"}, {"y"});
  m.output("y");
  const std::string precision = GetParam();
  const Tolerance tol = precision == "f16" ? reduced_precision_tolerance(LOOM_DTYPE_FLOAT16)
                                           : default_tolerance(LOOM_DTYPE_FLOAT32);
  std::filesystem::path path = m.save();
  loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  SessionOn device(runtime, path, "opencl,cpu", "precision=" + precision, "*=opencl;TopK=cpu");
  // Two opencl subgraphs around the cpu TopK: two uploads into opencl buffers per run.
  ASSERT_NE(device.explain().find("subgraph 2 on opencl"), std::string::npos) << device.explain();
  SessionOn cpu(runtime, path, "cpu", "");
  for (uint32_t run = 0; run < 6; ++run) {
    // i -> i * step mod 240 is a permutation for a step coprime with 240.
    const size_t steps[] = {7, 11, 13, 17, 19, 23};
    std::vector<float> values(240);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>((i * steps[run] + 13 * run) % 240) / 32.0f - 3.75f;
    std::vector<std::pair<std::string, Tensor>> inputs = {{"x", float_tensor({6, 40}, values)}};
    EXPECT_EQ(mismatch(device.run(inputs), cpu.run(inputs), tol), "") << "run " << run;
  }
  std::filesystem::remove(path);
}

TEST_P(OpenclTransfers, ConcurrentSessionsInThreads) {
  LOOM_REQUIRE_OPENCL();
  // Four sessions share the device's queues and program; each thread uploads its own inputs
  // while the others' kernels run, and must get exactly its own results.
  const std::string precision = GetParam();
  const Tolerance tol = precision == "f16" ? reduced_precision_tolerance(LOOM_DTYPE_FLOAT16)
                                           : default_tolerance(LOOM_DTYPE_FLOAT32);
  constexpr int kThreads = 4, kRuns = 5;
  std::filesystem::path path = three_input_model().save();
  loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  std::vector<std::vector<std::vector<Tensor>>> expected(kThreads);
  {
    SessionOn cpu(runtime, path, "cpu", "");
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < kRuns; ++r)
        expected[t].push_back(cpu.run(inputs_for(1000 + 37 * t + 5 * r)));
  }
  std::vector<std::unique_ptr<SessionOn>> sessions;
  for (int t = 0; t < kThreads; ++t)
    sessions.push_back(
        std::make_unique<SessionOn>(runtime, path, "opencl", "precision=" + precision));
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRuns && problems[t].empty(); ++r) {
          std::string p =
              mismatch(sessions[t]->run(inputs_for(1000 + 37 * t + 5 * r)), expected[t][r], tol);
          if (!p.empty()) problems[t] = "run " + std::to_string(r) + ": " + p;
        }
      } catch (const std::exception& e) {
        problems[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  sessions.clear();
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Precisions, OpenclTransfers, ::testing::Values("f32", "f16"));

}  // namespace
}  // namespace loom::device_testing
