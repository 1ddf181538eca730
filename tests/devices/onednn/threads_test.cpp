// Programs compiled on one thread and run on others. oneDNN 2.6 (built as Debian builds it)
// gives a primitive that needs scratch memory the scratchpad of the thread that created it;
// ResNet-50's Winograd convolutions then crashed when `infer-run --concurrency 2` ran its
// sessions from worker threads (SIGSEGV on a Zen 4). The device makes such primitives with a
// scratchpad of the program's own (builder_scratchpad.cpp, with_own_scratchpad).
#include <gtest/gtest.h>

#include <algorithm>
#include <loom/loom.hpp>
#include <string>
#include <thread>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

// Wide 3x3 stride-1 convolutions (oneDNN's jit_wino_4x3 with AVX-512, whose scratchpad is what
// crashed: this test failed with SIGSEGV before the fix), a strided one, a matrix product and a
// layer normalization: primitives that take scratch memory.
ModelBuilder scratch_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 128, 28, 28});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {128, 128, 3, 3}, 2, -0.05, 0.05));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {128, 128, 3, 3}, 3, -0.05, 0.05));
  m.initializer("w3", random_tensor(LOOM_DTYPE_FLOAT32, {32, 128, 3, 3}, 4, -0.05, 0.05));
  m.initializer("fc", random_tensor(LOOM_DTYPE_FLOAT32, {196, 16}, 5, -0.05, 0.05));
  m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, {16}, 6, 0.5, 1.5));
  m.node("Conv", {"x", "w1"}, {"c1"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("Conv", {"r1", "w2"}, {"c2"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c2"}, {"r2"});
  m.node("Conv", {"r2", "w3"}, {"c3"}).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  m.node("Reshape", {"c3", "shape"}, {"flat"});
  m.initializer("shape", int64_tensor({2}, {32, 196}));
  m.node("MatMul", {"flat", "fc"}, {"h"});
  m.node("LayerNormalization", {"h", "g"}, {"y"});
  m.output("y");
  return m;
}

// Two sessions of one model, each made and run on a thread of its own, at once (as `infer-run
// --concurrency 2` runs them): oneDNN's primitive cache hands the second session the primitives
// the first one made, on the other thread.
TEST(OnednnThreads, SessionsOnTheirOwnThreadsShareNoScratchpad) {
  const auto path = scratch_model().save();
  const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  const Inputs inputs{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 128, 28, 28}, 7)}};
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  const std::vector<Tensor> want = reference.run(inputs);
  std::vector<Tensor> got[2];
  std::string failed[2];
  auto drive = [&](int k) {
    try {
      TestSession session = open_session(runtime.get(), model.get(), "onednn,cpu");
      for (int run = 0; run < 20; ++run) got[k] = session.run(inputs);
    } catch (const std::exception& e) {
      failed[k] = e.what();
    }
  };
  std::thread a(drive, 0), b(drive, 1);
  a.join();
  b.join();
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(failed[k], "");
    expect_outputs_match(got[k], want);
  }
  // A session made here and run only on another thread.
  TestSession here = open_session(runtime.get(), model.get(), "onednn,cpu");
  std::thread c([&] {
    try {
      for (int run = 0; run < 5; ++run) got[0] = here.run(inputs);
    } catch (const std::exception& e) {
      failed[0] = e.what();
    }
  });
  c.join();
  EXPECT_EQ(failed[0], "");
  expect_outputs_match(got[0], want);
  std::filesystem::remove(path);
}

// Convolutions, matmuls and inner products of at most 256 kFLOP are made for one thread and run
// inline (builder.cpp, kSerialFlops; the verbose log marks them "[one thread]"), larger ones keep
// the OpenMP team; both match the cpu device with 2 threads, also run from another thread than
// the one that compiled them.
TEST(OnednnThreads, SmallComputationsRunOnOneThread) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 6, 6});
  m.initializer("w_small", random_tensor(LOOM_DTYPE_FLOAT32, {8, 8, 3, 3}, 2, -0.2, 0.2));
  m.initializer("w_up", random_tensor(LOOM_DTYPE_FLOAT32, {256, 8, 1, 1}, 3, -0.2, 0.2));
  m.initializer("w_big", random_tensor(LOOM_DTYPE_FLOAT32, {256, 256, 3, 3}, 4, -0.05, 0.05));
  m.initializer("fc", random_tensor(LOOM_DTYPE_FLOAT32, {36, 5}, 5, -0.2, 0.2));
  m.node("Conv", {"x", "w_small"}, {"small"}).ints("pads", {1, 1, 1, 1});  // 41 kFLOP
  m.node("Conv", {"small", "w_up"}, {"up"});                               // 147 kFLOP
  m.node("Conv", {"up", "w_big"}, {"big"}).ints("pads", {1, 1, 1, 1});     // 42 MFLOP
  m.initializer("shape", int64_tensor({2}, {256, 36}));
  m.node("Reshape", {"big", "shape"}, {"flat"});
  m.node("MatMul", {"flat", "fc"}, {"y"});  // 92 kFLOP
  m.output("y");
  const Inputs in{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 6, 6}, 1)}};
  const std::vector<Tensor> want = expect_matches_cpu(m, in, onednn_only("threads=2"));
  std::vector<std::string> one, team;
  for (const std::string& step : compiled_steps(m, in, "threads=2")) {
    if (step.rfind("Conv", 0) != 0 && step.rfind("MatMul", 0) != 0) continue;
    (step.find("[one thread]") != std::string::npos ? one : team).push_back(step);
  }
  ASSERT_EQ(one.size(), 3u) << ::testing::PrintToString(one) << ::testing::PrintToString(team);
  ASSERT_EQ(team.size(), 1u) << ::testing::PrintToString(team);
  EXPECT_EQ(team[0].rfind("Conv", 0), 0u) << team[0];  // the 42 MFLOP one
  EXPECT_EQ(std::count_if(one.begin(), one.end(),
                          [](const std::string& s) { return s.rfind("MatMul", 0) == 0; }),
            1);
  // A session made here and run on another thread.
  const auto path = m.save();
  const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession here = open_session(runtime.get(), model.get(), "onednn,cpu", "", "threads=2");
  std::vector<Tensor> got;
  std::string failed;
  std::thread([&] {
    try {
      for (int run = 0; run < 3; ++run) got = here.run(in);
    } catch (const std::exception& e) {
      failed = e.what();
    }
  }).join();
  EXPECT_EQ(failed, "");
  expect_outputs_match(got, want);
  std::filesystem::remove(path);
}

// The Silero-style VAD's 1-D convolutions (tests/bench/dynamic_shapes.py): a first version made
// small primitives again for one thread after their weights had been reordered, and oneDNN's
// brgemm convolution then chose other blocks, so the model's outputs were wrong (max difference
// 0.18). Small nodes are now emitted for one thread from the start (Builder::emit). Several
// chunk lengths, with their bias and Relu post-ops.
TEST(OnednnThreads, OneThreadPrimitivesKeepTheLayoutsOfTheirArguments) {
  for (int64_t length : {1, 4, 9}) {
    SCOPED_TRACE(length);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 64, length});
    m.initializer("w0", random_tensor(LOOM_DTYPE_FLOAT32, {128, 64, 3}, 2, -0.2, 0.2));
    m.initializer("b0", random_tensor(LOOM_DTYPE_FLOAT32, {128}, 3));
    m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {64, 128, 3}, 4, -0.2, 0.2));
    m.initializer("b1", random_tensor(LOOM_DTYPE_FLOAT32, {64}, 5));
    m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {64, 64, 1}, 6, -0.2, 0.2));
    m.initializer("b2", random_tensor(LOOM_DTYPE_FLOAT32, {64}, 7));
    m.node("Conv", {"x", "w0", "b0"}, {"c0"}).ints("pads", {1, 1});
    m.node("Relu", {"c0"}, {"r0"});
    m.node("Conv", {"r0", "w1", "b1"}, {"c1"}).ints("pads", {1, 1});
    m.node("Relu", {"c1"}, {"r1"});
    m.node("Conv", {"r1", "w2", "b2"}, {"c2"});
    m.node("Relu", {"c2"}, {"y"});
    m.output("y");
    const Inputs in{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 64, length}, 1)}};
    expect_matches_cpu(m, in, onednn_only("threads=2"));
    // 2 x outputs x (input channels x kernel) of each convolution; those of at most 256 kFLOP
    // (all three at lengths 1 and 4, the last one at 9) run on one thread.
    size_t small = 0;
    for (double flops :
         {2.0 * 128 * length * 64 * 3, 2.0 * 64 * length * 128 * 3, 2.0 * 64 * length * 64})
      small += flops <= 256e3;
    size_t one = 0;
    for (const std::string& step : compiled_steps(m, in, "threads=2"))
      one += step.rfind("Conv", 0) == 0 && step.find("[one thread]") != std::string::npos;
    EXPECT_EQ(one, small);
  }
}

}  // namespace
}  // namespace loom::onednn_testing
