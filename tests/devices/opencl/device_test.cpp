// The device itself: listing, instance selection, options, errors, and values crossing
// between the opencl and cpu devices.
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

struct Listed {
  std::string name, description, reason;
  bool available;
};

std::vector<Listed> list_opencl() {
  loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  std::vector<Listed> found;
  loom_runtime_list_devices(
      runtime.get(),
      [](void* user, const char* family, const loom_device_info_t* info) {
        if (std::string(family) == "opencl")
          static_cast<std::vector<Listed>*>(user)->push_back(
              {info->name, info->description, info->unavailable_reason, info->available});
      },
      &found);
  return found;
}

ModelBuilder tiny_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  return m;
}

TEST(OpenclDevice, ListsEveryInstanceOrOneUnavailableEntry) {
  std::vector<Listed> found = list_opencl();
  ASSERT_FALSE(found.empty()) << "the opencl plugin lists nothing";
  if (found.size() == 1 && found[0].name == "opencl") {
    // No OpenCL platform: one entry saying why, never a crash.
    EXPECT_FALSE(found[0].available);
    EXPECT_FALSE(found[0].reason.empty());
    return;
  }
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].name, "opencl:" + std::to_string(i));
    EXPECT_NE(found[i].description.find("fp16"), std::string::npos) << found[i].description;
    EXPECT_NE(found[i].description.find("driver"), std::string::npos) << found[i].description;
    if (!found[i].available) {
      EXPECT_FALSE(found[i].reason.empty());
    }
  }
}

TEST(OpenclDevice, NamedInstanceAndBestChoiceBothRun) {
  LOOM_REQUIRE_OPENCL();
  RunOptions first = on_opencl();
  first.devices = "opencl:0";
  expect_matches_cpu(tiny_model(), {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)}}, first);
  expect_matches_cpu(tiny_model(), {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)}},
                     on_opencl());
}

TEST(OpenclDevice, MissingInstanceIsAClearError) {
  LOOM_REQUIRE_OPENCL();
  RunOptions options = on_opencl();
  options.devices = "opencl:99";
  auto path = tiny_model().save();
  try {
    run_model(path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)}}, options);
    ADD_FAILURE() << "opencl:99 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("opencl:99 does not exist"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(OpenclDevice, UnknownOptionIsRejectedAndPrecisionAccepted) {
  LOOM_REQUIRE_OPENCL();
  auto path = tiny_model().save();
  RunOptions bad = on_opencl();
  bad.device_options = "tile=7";
  try {
    run_model(path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)}}, bad);
    ADD_FAILURE() << "an unknown option was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'tile'"), std::string::npos) << e.what();
  }
  RunOptions f16 = on_opencl();
  f16.device_options = "precision=f16";
  // precision=f16 is accepted (fp16 storage; its results are checked in fp16_test.cpp).
  EXPECT_NO_THROW(run_model(path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3}, 1)}}, f16));
  std::filesystem::remove(path);
}

TEST(OpenclDevice, ValuesCrossBetweenOpenclAndCpu) {
  LOOM_REQUIRE_OPENCL();
  // TopK is not an opencl op: the graph alternates opencl -> cpu -> opencl, so values are
  // copied out of and back into device buffers, and the unsupported node goes to cpu.
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {3, 8});
  m.initializer("k", int64_tensor({1}, {4}));
  m.node("Relu", {"x"}, {"r"});
  m.node("TopK", {"r", "k"}, {"top", "idx"});
  m.node("Exp", {"top"}, {"e"});
  m.node("Cast", {"idx"}, {"fi"}).i("to", LOOM_DTYPE_FLOAT32);
  m.node("Add", {"e", "fi"}, {"y"});
  m.output("y");
  m.output("r");
  RunOptions options;
  options.devices = "opencl,cpu";
  expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 8}, 1)}}, options);
}

TEST(OpenclDevice, EmptyTensorsPassThrough) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {0, 4});
  m.input("z", LOOM_DTYPE_FLOAT32, {2, 4});
  m.node("Relu", {"x"}, {"r"});
  m.node("Concat", {"r", "z"}, {"y"}).i("axis", 0);
  m.output("r");
  m.output("y");
  expect_matches_cpu(m,
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {0, 4}, 1)},
                      {"z", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4}, 2)}},
                     on_opencl());
}

}  // namespace
}  // namespace loom::device_testing
