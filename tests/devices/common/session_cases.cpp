// Session-level cases every device's tests share (device_test_support.hpp): weights a device
// copies are released, a model with symbolic dimensions is planned per input shape, and the
// plans and sessions of one model share the weights a device copied.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <loom/loom.hpp>

#include "device_test_support.hpp"

namespace loom::device_testing {

namespace {

ModelBuilder released_weights_model(int64_t batch, int64_t height = 10, int64_t width = 10) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {batch, 4, height, width});
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {8, 4, 3, 3}, 1, -0.3, 0.6));
  m.initializer("b1", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 2));
  m.initializer("w2", random_tensor(LOOM_DTYPE_FLOAT32, {6, 8, 1, 1}, 3, -0.3, 0.6));
  m.initializer("k", random_tensor(LOOM_DTYPE_FLOAT32, {3}, 4));
  m.node("Conv", {"x", "w1", "b1"}, {"c1"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"y"});
  m.output("y");
  m.output("k");
  return m;
}

std::vector<std::pair<std::string, Tensor>> released_weights_inputs(int64_t batch) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {batch, 4, 10, 10}, 5)}};
}

const loom::Runtime& released_weights_runtime() {
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  return runtime;
}

}  // namespace

void expect_copied_weights_released(const std::string& devices) {
  const auto path = released_weights_model(1).save();
  const loom::Runtime& runtime = released_weights_runtime();
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  const std::vector<Tensor> want = reference.run(released_weights_inputs(1));
  TestSession first = open_session(runtime.get(), model.get(), devices.c_str());
  TestSession second = open_session(runtime.get(), model.get(), devices.c_str());
  model.reset();
  for (int run = 0; run < 3; ++run)
    expect_outputs_match(first.run(released_weights_inputs(1)), want);
  // w1, b1 and w2; not `k`, a graph output.
  EXPECT_EQ(first.plan_number("constants_released"), 3);
  EXPECT_EQ(first.plan_number("constant_bytes_released"), (8 * 4 * 9 + 8 + 6 * 8) * 4);
  expect_outputs_match(second.run(released_weights_inputs(1)), want);
  std::filesystem::remove(path);
}

void expect_symbolic_model_runs_on(const std::string& devices) {
  const auto path = released_weights_model(-1, -1, -1).save();
  const loom::Runtime& runtime = released_weights_runtime();
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = devices.c_str();
  o.no_fallback = true;  // every node of every shape's plan on `devices`
  TestSession session = open_session(runtime.get(), model.get(), o);
  // The session keeps the model's weights for the shapes still to come.
  model.reset();
  EXPECT_EQ(session.cache_stats().entries, 0u) << "a symbolic model cannot compile at creation";
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 4, 10, 10}, {2, 4, 7, 9}, {1, 4, 16, 12}, {1, 4, 10, 10}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE("shape " + std::to_string(shape[0]) + "x4x" + std::to_string(shape[2]) + "x" +
                 std::to_string(shape[3]));
    std::vector<std::pair<std::string, Tensor>> inputs = {
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 5)}};
    expect_outputs_match(session.run(inputs), reference.run(inputs));
  }
  const loom_plan_cache_stats_t stats = session.cache_stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.evictions, 0u);
  const std::string plan = session.plan_json();
  EXPECT_NE(plan.find("\"signature\":\"x=1x4x10x10\""), std::string::npos) << plan;
  EXPECT_EQ(plan.find("\"device\":\"cpu\""), std::string::npos) << plan;
  std::filesystem::remove(path);
}

namespace {

constexpr int64_t kChannels = 256;
constexpr size_t kWeightBytes = kChannels * kChannels * 3 * 3 * sizeof(float);  // 2.25 MiB

// Two 3x3 convolutions of 256 channels, with a symbolic image size.
std::filesystem::path conv_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, kChannels, -1, -1});
  m.initializer("w1",
                random_tensor(LOOM_DTYPE_FLOAT32, {kChannels, kChannels, 3, 3}, 1, -.05, .05));
  m.initializer("w2",
                random_tensor(LOOM_DTYPE_FLOAT32, {kChannels, kChannels, 3, 3}, 2, -.05, .05));
  m.node("Conv", {"x", "w1"}, {"h"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"h"}, {"r"});
  m.node("Conv", {"r", "w2"}, {"y"}).ints("pads", {1, 1, 1, 1});
  m.output("y");
  return m.save();
}

std::vector<std::pair<std::string, Tensor>> image(int64_t size) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, kChannels, size, size}, 3)}};
}

}  // namespace

void expect_plans_share_weights(const loom_session_options_t& options) {
  const auto path = conv_model();
  const loom::Runtime& runtime = released_weights_runtime();
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  TestSession first = open_session(runtime.get(), model.get(), options);
  expect_outputs_match(first.run(image(6)), reference.run(image(6)));

  // A second input shape: a new program, whose convolutions take the weights in the same
  // blocked layout (it depends on the channels, not the image size).
  size_t before = heap_in_use();
  expect_outputs_match(first.run(image(9)), reference.run(image(9)));
  size_t grown = heap_in_use() - std::min(heap_in_use(), before);
  EXPECT_LT(grown, kWeightBytes) << "the plan of a second shape copied the weights again (" << grown
                                 << " bytes more)";

  // A second session of the model, and its plans: the same.
  before = heap_in_use();
  TestSession second = open_session(runtime.get(), model.get(), options);
  expect_outputs_match(second.run(image(6)), reference.run(image(6)));
  expect_outputs_match(second.run(image(9)), reference.run(image(9)));
  grown = heap_in_use() - std::min(heap_in_use(), before);
  EXPECT_LT(grown, kWeightBytes) << "a second session copied the weights again (" << grown
                                 << " bytes more)";

  // Once every program that uses them is gone, the shared weights go too: a third session
  // made after both are closed reorders them afresh and gives the same answers.
  first = TestSession{};
  second = TestSession{};
  TestSession third = open_session(runtime.get(), model.get(), options);
  expect_outputs_match(third.run(image(7)), reference.run(image(7)));
  std::filesystem::remove(path);
}

}  // namespace loom::device_testing
