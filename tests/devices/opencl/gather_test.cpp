// Gather's out-of-range indices on the opencl device: like every other device, the run fails
// with the error ONNX mandates, worded as the cpu device words it. Indices from the run's
// inputs are checked by the kernel (an error flag the host reads after the run); constant
// indices are checked when the subgraph compiles (the core already refuses those outside a
// known extent). A failed run leaves the session usable.
#include <gtest/gtest.h>

#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "opencl_test_support.hpp"

namespace loom::device_testing {
namespace {

using opencl_testing::on_opencl;

// Runs `m` on opencl alone and returns the error message ("" if the run succeeded), checking
// that a failure is an invalid argument (the data, not the model, is wrong).
std::string run_error(const ModelBuilder& m,
                      const std::vector<std::pair<std::string, Tensor>>& in) {
  const auto path = m.save();
  try {
    run_model(path, in, on_opencl());
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "";
}

ModelBuilder gather_model(loom_dtype_t index_dtype, std::vector<int64_t> data,
                          std::vector<int64_t> indices, int64_t axis) {
  ModelBuilder m;
  m.input("data", LOOM_DTYPE_FLOAT32, std::move(data));
  m.input("ids", index_dtype, std::move(indices));
  m.node("Gather", {"data", "ids"}, {"y"}, "g").i("axis", axis);
  m.output("y");
  return m;
}

TEST(OpenclGather, OutOfRangeInt64IndexFailsTheRun) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m = gather_model(LOOM_DTYPE_INT64, {5, 3}, {4}, 0);
  Tensor data = random_tensor(LOOM_DTYPE_FLOAT32, {5, 3}, 1);
  std::string e = run_error(m, {{"data", data}, {"ids", int64_tensor({4}, {0, 7, 1, 2})}});
  EXPECT_NE(e.find("Gather node 'g': index 7 is out of range for axis 0 of size 5"),
            std::string::npos)
      << e;
  // Below -size is out of range too; -size itself is the first element.
  e = run_error(m, {{"data", data}, {"ids", int64_tensor({4}, {0, -6, 1, 2})}});
  EXPECT_NE(e.find("index -6 is out of range for axis 0 of size 5"), std::string::npos) << e;
  EXPECT_EQ(run_error(m, {{"data", data}, {"ids", int64_tensor({4}, {-5, 4, 0, -1})}}), "");
}

TEST(OpenclGather, OutOfRangeInt32IndexOnAnInnerAxis) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m = gather_model(LOOM_DTYPE_INT32, {4, 5}, {3}, 1);
  Tensor data = random_tensor(LOOM_DTYPE_FLOAT32, {4, 5}, 2);
  Tensor ids = random_tensor(LOOM_DTYPE_INT32, {3}, 3, 0, 4);
  ids.data<int32_t>()[2] = 5;
  std::string e = run_error(m, {{"data", data}, {"ids", ids}});
  EXPECT_NE(e.find("Gather node 'g': index 5 is out of range for axis 1 of size 5"),
            std::string::npos)
      << e;
}

// The flags belong to one run: a good run after a failed one answers as the cpu device does.
TEST(OpenclGather, SessionStaysUsableAfterAFailedRun) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m = gather_model(LOOM_DTYPE_INT64, {6, 2}, {3}, 0);
  const auto path = m.save();
  loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = "opencl";
  o.no_fallback = true;
  TestSession session = open_session(runtime.get(), model.get(), o);
  Tensor data = random_tensor(LOOM_DTYPE_FLOAT32, {6, 2}, 4);
  EXPECT_THROW(session.run({{"data", data}, {"ids", int64_tensor({3}, {1, 6, 2})}}), loom::Error);
  std::vector<Tensor> got = session.run({{"data", data}, {"ids", int64_tensor({3}, {5, -6, 2})}});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].elements(), 6);
  const float* d = data.data<float>();
  const float want[] = {d[10], d[11], d[0], d[1], d[4], d[5]};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[0].data<float>()[i], want[i]) << i;
  EXPECT_THROW(session.run({{"data", data}, {"ids", int64_tensor({3}, {0, 0, -7})}}), loom::Error);
}

// Constant indices (checked when the subgraph compiles, no error buffer) beside input indices
// (checked by the kernel) in one subgraph: the failure names the node whose index was bad.
TEST(OpenclGather, ConstantAndInputIndicesInOneSubgraph) {
  LOOM_REQUIRE_OPENCL();
  ModelBuilder m;
  m.input("table", LOOM_DTYPE_FLOAT32, {6, 4});
  m.input("ids", LOOM_DTYPE_INT64, {2});
  m.initializer("cols", int64_tensor({3}, {-4, 3, 0}));
  m.node("Gather", {"table", "cols"}, {"picked"}, "constant_cols").i("axis", 1);
  m.node("Gather", {"picked", "ids"}, {"y"}, "input_rows").i("axis", 0);
  m.output("y");
  Tensor table = random_tensor(LOOM_DTYPE_FLOAT32, {6, 4}, 7);
  expect_matches_cpu(m, {{"table", table}, {"ids", int64_tensor({2}, {5, -6})}}, on_opencl());
  std::string e = run_error(m, {{"table", table}, {"ids", int64_tensor({2}, {0, 6})}});
  EXPECT_NE(e.find("Gather node 'input_rows': index 6 is out of range for axis 0 of size 6"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace loom::device_testing
