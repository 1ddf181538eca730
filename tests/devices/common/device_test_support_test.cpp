// The device-test helpers, checked on the cpu device: a model built with ModelBuilder runs,
// compare() finds real differences, and the half conversions round-trip.
#include "device_test_support.hpp"

#include <gtest/gtest.h>

namespace loom::device_testing {
namespace {

TEST(DeviceTestSupport, AddModelRunsAndMatchesHandComputedSum) {
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {2, 3});
  m.initializer("b", float_tensor({3}, {10, 20, 30}));
  m.node("Add", {"a", "b"}, {"y"});
  m.output("y");
  Tensor a = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto path = m.save();
  auto outputs = run_model(path, {{"a", a}}, RunOptions{});
  std::filesystem::remove(path);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(compare(outputs[0], float_tensor({2, 3}, {11, 22, 33, 14, 25, 36})), "");
}

TEST(DeviceTestSupport, CompareReportsMismatchShapeAndDtype) {
  Tensor x = float_tensor({2}, {1.0f, 2.0f});
  EXPECT_EQ(compare(x, float_tensor({2}, {1.0f, 2.0f + 1e-7f})), "");
  EXPECT_NE(compare(x, float_tensor({2}, {1.0f, 2.1f})).find("1 of 2 elements differ"),
            std::string::npos);
  EXPECT_NE(compare(x, float_tensor({1, 2}, {1.0f, 2.0f})).find("shape"), std::string::npos);
  EXPECT_NE(compare(x, int64_tensor({2}, {1, 2})).find("dtype"), std::string::npos);
}

TEST(DeviceTestSupport, HalfAndBfloat16RandomTensorsStayInRange) {
  for (loom_dtype_t dtype : {LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BFLOAT16}) {
    Tensor t = random_tensor(dtype, {64}, 7, -2.0, 2.0);
    Tensor widened = random_tensor(LOOM_DTYPE_FLOAT32, {64}, 7, -2.0, 2.0);
    // The same seed gives the same values, rounded to 16 bits.
    Tolerance tol = default_tolerance(dtype);
    ModelBuilder m;
    m.input("x", dtype, {64});
    m.node("Cast", {"x"}, {"y"}).i("to", LOOM_DTYPE_FLOAT32);
    m.output("y");
    auto path = m.save();
    auto out = run_model(path, {{"x", t}}, RunOptions{});
    std::filesystem::remove(path);
    EXPECT_EQ(compare(out[0], widened, tol), "") << "dtype " << dtype;
  }
}

TEST(DeviceTestSupport, ExpectMatchesCpuOnTheCpuDeviceItself) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 2, 5, 5});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {3, 2, 3, 3}, 1));
  m.node("Conv", {"x", "w"}, {"y"}).ints("pads", {1, 1, 1, 1});
  m.output("y");
  RunOptions cpu2;
  cpu2.threads = 2;
  auto out =
      expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 5, 5}, 2)}}, cpu2);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1, 3, 5, 5}));
}

TEST(DeviceTestSupport, RunModelThrowsLoomsMessageForAnUnknownDevice) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  auto path = m.save();
  RunOptions o;
  o.devices = "no_such_device";
  o.no_fallback = true;
  EXPECT_THROW(run_model(path, {{"x", float_tensor({1}, {1})}}, o), std::exception);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::device_testing
