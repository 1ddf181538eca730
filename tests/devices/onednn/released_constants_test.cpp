// Weights the onednn device copies at compile (reordered for its kernels) are handed back to the
// core (plugin ABI 1.3's constant_copied), which frees its own bytes of them: a session then
// holds each weight once. Only constants no other reader needs go (a cpu node reading the same
// constant keeps it), only in sessions that never compile again (static input shapes), and
// never the application's model: a second session from the same model handle must still work.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <loom/loom.hpp>
#include <memory>
#include <string>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

const loom::Runtime& test_runtime() {
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  return runtime;
}

// Two convolutions on onednn, and a constant `shared` that an onednn Add and a cpu Add (pinned
// there) both read.
ModelBuilder conv_model(std::vector<int64_t> x_dims) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, x_dims);
  m.input("z", LOOM_DTYPE_FLOAT32, {1, 8, 1, 1});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {8, 4, 3, 3}, 1, -0.3, 0.6));
  m.initializer("b1", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {8, 8, 1, 1}, 3, -0.3, 0.6));
  m.initializer("shared", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 1, 1}, 4));
  m.node("Conv", {"x", "w1", "b1"}, {"c1"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"c2"});
  m.node("Add", {"c2", "shared"}, {"y"});
  m.node("Add", {"z", "shared"}, {"y2"}, "cpu_add");
  m.output("y");
  m.output("y2");
  return m;
}

Inputs conv_inputs(int64_t batch) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {batch, 4, 12, 12}, 5)},
          {"z", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 1, 1}, 6)}};
}

// The session compiles at creation (static shapes) and drops its reference to the weights
// onednn copied; once the application frees its model handle they are freed: under
// AddressSanitizer, any later read of them by the device while running is an error.
TEST(OnednnReleasedConstants, CopiedWeightsAreFreedOnceAndAnswersStay) {
  const auto path = conv_model({1, 4, 12, 12}).save();
  const loom::Runtime& runtime = test_runtime();
  const Inputs inputs = conv_inputs(1);
  std::vector<Tensor> want;
  {
    ModelHandle model = load_model(runtime.get(), path);
    TestSession reference = open_session(runtime.get(), model.get(), "cpu");
    want = reference.run(inputs);
    EXPECT_EQ(reference.plan_number("constants_released"), 0);
  }
  ModelHandle model = load_model(runtime.get(), path);
  TestSession fast = open_session(runtime.get(), model.get(), "onednn,cpu", "cpu_add=cpu");
  model.reset();
  for (int run = 0; run < 3; ++run) expect_outputs_match(fast.run(inputs), want);
  // w1, b1 and w2; `shared` stays for the cpu Add.
  EXPECT_EQ(fast.plan_number("constants_released"), 3);
  EXPECT_EQ(fast.plan_number("constant_bytes_released"), (8 * 4 * 9 + 8 + 8 * 8) * 4);
  std::filesystem::remove(path);
}

TEST(OnednnReleasedConstants, TheApplicationsModelStaysWhole) {
  const auto path = conv_model({1, 4, 12, 12}).save();
  const loom::Runtime& runtime = test_runtime();
  const Inputs inputs = conv_inputs(1);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  const std::vector<Tensor> want = reference.run(inputs);
  TestSession first = open_session(runtime.get(), model.get(), "onednn,cpu", "cpu_add=cpu");
  expect_outputs_match(first.run(inputs), want);
  EXPECT_EQ(first.plan_number("constants_released"), 3);
  // Another session compiles from the same model after the first released its weights.
  TestSession second = open_session(runtime.get(), model.get(), "onednn,cpu", "cpu_add=cpu");
  expect_outputs_match(second.run(inputs), want);
  expect_outputs_match(first.run(inputs), want);
  std::filesystem::remove(path);
}

TEST(OnednnReleasedConstants, SymbolicSessionsKeepTheModelsWeightsForLaterShapes) {
  // A symbolic batch: each new batch size gets a plan of its own, which releases the copies
  // it made in its own graph, while the session keeps the model's weights for the next one.
  const auto path = conv_model({-1, 4, 12, 12}).save();
  const loom::Runtime& runtime = test_runtime();
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  TestSession fast = open_session(runtime.get(), model.get(), "onednn,cpu", "cpu_add=cpu");
  model.reset();
  for (int64_t batch : {1, 3, 1, 2}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    expect_outputs_match(fast.run(conv_inputs(batch)), reference.run(conv_inputs(batch)));
  }
  EXPECT_EQ(fast.plan_number("constants_released"), 3);  // the last plan's (batch 2)
  EXPECT_EQ(fast.cache_stats().entries, 3u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::onednn_testing
