// The device conformance suite at the plugin ABI: the same cases for every device family
// (cpu, onednn, opencl, vulkan, neon), each loaded as the core loads it (abi_harness.hpp). What a
// device must do whatever it computes: list its instances, honour struct_size, refuse bad
// create arguments and options with the right status, keep copies inside their buffers, refuse
// a run whose inputs do not match the compiled subgraph, leave no output behind when a run fails
// or is cancelled, and run different executables from several threads at once.
//
// A family whose plugin is not built in this configuration (vulkan in the asan preset, neon on
// x86) is skipped; the CI presets together build every family.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "abi_harness.hpp"
#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

// The status's code and message, freeing it.
struct Outcome {
  loom_status_code_t code = LOOM_OK;
  std::string message;
};
Outcome outcome(loom_status_t* s) {
  Outcome o{code_of(s), ""};
  o.message = take(s);
  return o;
}

// y = Relu(x) on float32 [2, 3]: every device runs it.
struct ReluGraph {
  Graph g;
  ReluGraph() {
    int32_t x = g.value("x", LOOM_DTYPE_FLOAT32, {2, 3}, LOOM_VALUE_GRAPH_INPUT);
    int32_t y = g.value("y", LOOM_DTYPE_FLOAT32, {2, 3}, LOOM_VALUE_GRAPH_OUTPUT);
    g.node("relu", "Relu", {x}, {y});
    g.finish("relu");
  }
};

class DeviceAbi : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string family = GetParam();
    if (!std::filesystem::exists(std::filesystem::path(plugin_dir()) / ("loom_" + family + ".so")))
      GTEST_SKIP() << "the " << family << " plugin is not built in this configuration";
    std::string why;
    api_ = load_device(family, why);
    ASSERT_NE(api_, nullptr) << why;
    const std::string absent = unavailable(api_);
    if (!absent.empty()) GTEST_SKIP() << family << " is not available here: " << absent;
    device_ = create("", &status_);
    ASSERT_NE(device_, nullptr) << status_.message;
  }
  void TearDown() override {
    for (loom_executable_t* e : executables_) api_->release_executable(device_, e);
    if (device_) api_->destroy(device_);
  }

  loom_device_t* create(const std::string& options, Outcome* result, int32_t threads = 2,
                        int32_t instance = -1) {
    loom_device_create_args_t args{};
    args.struct_size = sizeof args;
    args.instance = instance;
    args.threads = threads;
    args.options = options.c_str();
    loom_device_t* made = nullptr;
    *result = outcome(api_->create(api_->user, &args, &made));
    return made;
  }

  loom_executable_t* compile(const loom_graph_t* graph) {
    loom_compile_args_t args{};
    args.struct_size = sizeof args;
    args.graph = graph;
    loom_executable_t* exe = nullptr;
    Outcome o = outcome(api_->compile(device_, &args, &exe));
    EXPECT_EQ(o.code, LOOM_OK) << o.message;
    if (exe) executables_.push_back(exe);
    return exe;
  }

  // A tensor of `values` in the device's own memory, as the core hands inputs over.
  loom_tensor_t upload(const std::vector<float>& values, std::vector<int64_t> dims) {
    loom_tensor_t t{};
    t.struct_size = sizeof t;
    t.dtype = LOOM_DTYPE_FLOAT32;
    t.rank = static_cast<int32_t>(dims.size());
    std::copy(dims.begin(), dims.end(), t.dims);
    t.byte_size = values.size() * sizeof(float);
    Outcome o = outcome(api_->alloc(device_, t.byte_size, &t.buffer));
    EXPECT_EQ(o.code, LOOM_OK) << o.message;
    o = outcome(api_->copy_from_host(device_, values.data(), t.buffer, 0, t.byte_size));
    EXPECT_EQ(o.code, LOOM_OK) << o.message;
    t.data = api_->buffer_host_ptr(device_, t.buffer);
    return t;
  }

  std::vector<float> download(const loom_tensor_t& t) {
    std::vector<float> values(t.byte_size / sizeof(float));
    Outcome o =
        outcome(api_->copy_to_host(device_, t.buffer, t.offset, values.data(), t.byte_size));
    EXPECT_EQ(o.code, LOOM_OK) << o.message;
    return values;
  }

  Outcome run(loom_executable_t* exe, std::vector<loom_tensor_t>& inputs,
              std::vector<loom_tensor_t>& outputs, const loom_run_control_t* control = nullptr) {
    loom_run_args_t args{};
    args.struct_size = sizeof args;
    args.num_inputs = inputs.size();
    args.inputs = inputs.data();
    args.num_outputs = outputs.size();
    args.outputs = outputs.data();
    args.control = control;
    return outcome(api_->run(device_, exe, &args));
  }

  const loom_device_api_t* api_ = nullptr;
  loom_device_t* device_ = nullptr;
  Outcome status_;
  std::vector<loom_executable_t*> executables_;
};

const std::vector<float> kX = {-1.5f, 0.f, 2.f, -0.25f, 3.5f, 1.f};
const std::vector<float> kRelu = {0.f, 0.f, 2.f, 0.f, 3.5f, 1.f};

TEST_P(DeviceAbi, ListsInstancesAndHonoursStructSize) {
  int listed = 0;
  api_->enumerate(
      api_->user,
      [](void* user, const loom_device_info_t* info) {
        ++*static_cast<int*>(user);
        EXPECT_GT(std::strlen(info->name), 0u);
        if (!info->available) {
          EXPECT_GT(std::strlen(info->unavailable_reason), 0u);
        }
      },
      &listed);
  EXPECT_GE(listed, 1);

  loom_device_info_t full{};
  full.struct_size = sizeof full;
  api_->get_info(device_, &full);
  EXPECT_TRUE(full.available);
  EXPECT_GT(std::strlen(full.name), 0u);
  EXPECT_EQ(std::string(full.name).rfind(GetParam(), 0), 0u) << full.name;

  // An older host's smaller struct: nothing past its struct_size is written.
  std::vector<unsigned char> bytes(sizeof(loom_device_info_t), 0xAB);
  auto* small = reinterpret_cast<loom_device_info_t*>(bytes.data());
  const size_t size = offsetof(loom_device_info_t, available);
  small->struct_size = size;
  api_->get_info(device_, small);
  EXPECT_STREQ(small->name, full.name);
  for (size_t i = size; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], 0xAB) << "byte " << i;
}

TEST_P(DeviceAbi, RefusesBadCreateArguments) {
  loom_device_t* made = nullptr;
  Outcome o = outcome(api_->create(api_->user, nullptr, &made));
  EXPECT_EQ(o.code, LOOM_ERROR_INVALID_ARGUMENT) << o.message;
  EXPECT_EQ(made, nullptr);

  EXPECT_EQ(create("", &o, /*threads=*/-3), nullptr);
  EXPECT_EQ(o.code, LOOM_ERROR_INVALID_ARGUMENT) << o.message;

  EXPECT_EQ(create("", &o, 2, /*instance=*/4096), nullptr);
  EXPECT_EQ(o.code, LOOM_ERROR_NOT_FOUND) << o.message;

  EXPECT_EQ(create("no_such_option=1", &o), nullptr);
  EXPECT_EQ(o.code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("no_such_option"), std::string::npos) << o.message;

  EXPECT_EQ(create("precision=f8", &o), nullptr);
  EXPECT_EQ(o.code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("precision"), std::string::npos) << o.message;

  EXPECT_EQ(create("threads=lots", &o), nullptr);
  EXPECT_EQ(o.code, LOOM_ERROR_INVALID_ARGUMENT) << o.message;

  // Options every device accepts, and another device's options, which it leaves alone.
  loom_device_t* accepted = create("threads=1;precision=f32;otherdevice.colour=red", &o);
  EXPECT_NE(accepted, nullptr) << o.message;
  if (accepted) api_->destroy(accepted);
}

TEST_P(DeviceAbi, CopiesStayInsideTheirBuffer) {
  loom_buffer_t* buffer = nullptr;
  Outcome o = outcome(api_->alloc(device_, 64, &buffer));
  ASSERT_EQ(o.code, LOOM_OK) << o.message;
  std::vector<uint8_t> in(64), out(64, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 3 + 1);
  EXPECT_EQ(outcome(api_->copy_from_host(device_, in.data(), buffer, 0, 64)).code, LOOM_OK);
  EXPECT_EQ(outcome(api_->copy_to_host(device_, buffer, 16, out.data(), 48)).code, LOOM_OK);
  EXPECT_TRUE(std::equal(in.begin() + 16, in.end(), out.begin()));

  // Past the end, an offset past the end, a size that wraps around, no buffer.
  EXPECT_EQ(outcome(api_->copy_to_host(device_, buffer, 32, out.data(), 33)).code,
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(api_->copy_from_host(device_, in.data(), buffer, 65, 0)).code,
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(api_->copy_from_host(device_, in.data(), buffer, 8, SIZE_MAX)).code,
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(api_->copy_to_host(device_, nullptr, 0, out.data(), 4)).code,
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outcome(api_->copy_to_host(device_, buffer, 0, nullptr, 4)).code,
            LOOM_ERROR_INVALID_ARGUMENT);
  // Nothing to copy at the very end is fine.
  EXPECT_EQ(outcome(api_->copy_to_host(device_, buffer, 64, out.data(), 0)).code, LOOM_OK);
  api_->free_buffer(device_, buffer);

  loom_buffer_t* empty = nullptr;
  EXPECT_EQ(outcome(api_->alloc(device_, 0, &empty)).code, LOOM_OK);
  api_->free_buffer(device_, empty);
}

TEST_P(DeviceAbi, SupportsNodeWithoutAGraphSaysWhy) {
  loom_support_t support{};
  support.struct_size = sizeof support;
  support.supported = true;
  api_->supports_node(device_, nullptr, nullptr, &support);
  EXPECT_FALSE(support.supported);
  EXPECT_GT(std::strlen(support.reason), 0u);
  api_->supports_node(device_, nullptr, nullptr, nullptr);  // no crash

  ReluGraph relu;
  api_->supports_node(device_, &relu.g.graph, relu.g.graph.nodes[0], &support);
  EXPECT_TRUE(support.supported) << support.reason;
}

TEST_P(DeviceAbi, RunsAndRefusesInputsThatDoNotMatch) {
  ReluGraph relu;
  loom_executable_t* exe = compile(&relu.g.graph);
  ASSERT_NE(exe, nullptr);
  std::vector<loom_tensor_t> inputs = {upload(kX, {2, 3})};
  std::vector<loom_tensor_t> outputs(1);

  Outcome o = run(exe, inputs, outputs);
  ASSERT_EQ(o.code, LOOM_OK) << o.message;
  ASSERT_NE(outputs[0].buffer, nullptr);
  EXPECT_EQ(outputs[0].dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(outputs[0].rank, 2);
  EXPECT_EQ(download(outputs[0]), kRelu);
  api_->free_buffer(device_, outputs[0].buffer);

  // Too many inputs, too few outputs.
  std::vector<loom_tensor_t> two = {inputs[0], inputs[0]};
  std::vector<loom_tensor_t> none;
  outputs.assign(1, loom_tensor_t{});
  EXPECT_EQ(run(exe, two, outputs).code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outputs[0].buffer, nullptr);
  EXPECT_EQ(run(exe, inputs, none).code, LOOM_ERROR_INVALID_ARGUMENT);

  // Another dtype than the subgraph was compiled for.
  std::vector<loom_tensor_t> wrong = inputs;
  wrong[0].dtype = LOOM_DTYPE_INT32;
  EXPECT_EQ(run(exe, wrong, outputs).code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outputs[0].buffer, nullptr);

  // Bytes past the end of the input's buffer.
  wrong = inputs;
  wrong[0].offset = 8;
  wrong[0].data = wrong[0].data ? static_cast<char*>(wrong[0].data) + 8 : nullptr;
  EXPECT_EQ(run(exe, wrong, outputs).code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outputs[0].buffer, nullptr);

  api_->free_buffer(device_, inputs[0].buffer);
}

TEST_P(DeviceAbi, ACancelledRunLeavesNoOutputs) {
  ReluGraph relu;
  loom_executable_t* exe = compile(&relu.g.graph);
  ASSERT_NE(exe, nullptr);
  std::vector<loom_tensor_t> inputs = {upload(kX, {2, 3})};
  std::vector<loom_tensor_t> outputs(1);
  loom_run_control_t control{};
  control.struct_size = sizeof control;
  control.poll = [](void*) { return make_status(LOOM_ERROR_CANCELLED, "cancelled by the test"); };
  Outcome o = run(exe, inputs, outputs, &control);
  EXPECT_EQ(o.code, LOOM_ERROR_CANCELLED) << o.message;
  EXPECT_EQ(outputs[0].buffer, nullptr);
  EXPECT_EQ(outputs[0].byte_size, 0u);

  // The executable is still good afterwards.
  control.poll = [](void*) -> loom_status_t* { return nullptr; };
  o = run(exe, inputs, outputs, &control);
  ASSERT_EQ(o.code, LOOM_OK) << o.message;
  EXPECT_EQ(download(outputs[0]), kRelu);
  api_->free_buffer(device_, outputs[0].buffer);
  api_->free_buffer(device_, inputs[0].buffer);
}

TEST_P(DeviceAbi, RunsDifferentExecutablesFromSeveralThreads) {
  ReluGraph a, b;
  loom_executable_t* exes[2] = {compile(&a.g.graph), compile(&b.g.graph)};
  ASSERT_NE(exes[0], nullptr);
  ASSERT_NE(exes[1], nullptr);
  std::vector<std::string> failures(2);
  auto work = [&](int k) {
    for (int i = 0; i < 20 && failures[k].empty(); ++i) {
      std::vector<float> x = kX;
      for (float& v : x) v *= static_cast<float>(i + k);
      std::vector<loom_tensor_t> inputs = {upload(x, {2, 3})};
      std::vector<loom_tensor_t> outputs(1);
      Outcome o = run(exes[k], inputs, outputs);
      if (o.code != LOOM_OK) {
        failures[k] = o.message;
      } else {
        std::vector<float> y = download(outputs[0]);
        for (size_t j = 0; j < x.size(); ++j)
          if (y[j] != std::max(x[j], 0.f)) failures[k] = "wrong value at " + std::to_string(j);
        api_->free_buffer(device_, outputs[0].buffer);
      }
      api_->free_buffer(device_, inputs[0].buffer);
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

INSTANTIATE_TEST_SUITE_P(Families, DeviceAbi,
                         ::testing::Values("cpu", "onednn", "opencl", "vulkan", "neon"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace loom::device_testing
