// If, Loop and Scan of the cpu device. The kernel harness's attr_graph gives each kernel a
// C++ function standing in for its body graph. (The ONNX backend tests test_if*/test_loop*/
// test_scan* run the real interpreter through the conformance runner.)
#include <gtest/gtest.h>

#include <cstdlib>

#include "kernels/data_movement.hpp"
#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::BodyFn;
using testing::BodyGraph;
using testing::KernelHarness;

Tensor floats(std::vector<int64_t> dims, std::vector<float> v) {
  Tensor t = make_tensor(LOOM_DTYPE_FLOAT32, dims);
  std::copy(v.begin(), v.end(), static_cast<float*>(t.view.data));
  return t;
}
Tensor scalar_i64(int64_t v) {
  Tensor t = make_tensor(LOOM_DTYPE_INT64, {});
  *static_cast<int64_t*>(t.view.data) = v;
  return t;
}
Tensor scalar_bool(bool v) {
  Tensor t = make_tensor(LOOM_DTYPE_BOOL, {});
  *static_cast<bool*>(t.view.data) = v;
  return t;
}
std::vector<float> values(const Tensor& t) {
  const float* p = static_cast<const float*>(t.view.data);
  return {p, p + sdk::element_count(t.view)};
}
using testing::shape;
float f(const Tensor* t) {
  return *static_cast<const float*>(t->view.data);
}
int64_t i64(const Tensor* t) {
  return *static_cast<const int64_t*>(t->view.data);
}

TEST(If, RunsTheChosenBranchAndPassesItsOutputThrough) {
  BodyGraph then_g(0, 1), else_g(0, 1);
  Tensor then_value = floats({2}, {1, 2});
  KernelHarness ctx("If", 16);
  ctx.input(scalar_bool(false));
  ctx.attr_graph("then_branch", then_g, [&](auto) { return std::vector<Tensor>{then_value}; });
  Tensor else_value = floats({1}, {7});
  ctx.attr_graph("else_branch", else_g, [&](auto) { return std::vector<Tensor>{else_value}; });
  auto out = ctx.run(1);
  EXPECT_EQ(values(out[0]), (std::vector<float>{7}));
  EXPECT_EQ(out[0].view.data, else_value.view.data) << "If must not copy the branch output";
}

// Loop body: x' = x + iter; scan output = x'; cond' = iter < stop_after.
BodyFn accumulate(int64_t stop_after) {
  return [stop_after](std::span<const Tensor* const> in) {
    const int64_t iter = i64(in[0]);
    const float x = f(in[2]) + static_cast<float>(iter);
    return std::vector<Tensor>{scalar_bool(iter < stop_after), floats({}, {x}), floats({1}, {x})};
  };
}

TEST(Loop, TripCountWithScanOutputs) {
  BodyGraph body(3, 3);
  KernelHarness ctx("Loop", 16);
  ctx.input(scalar_i64(4));
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {10}));
  ctx.attr_graph("body", body, accumulate(100));
  auto out = ctx.run(2);
  EXPECT_EQ(values(out[0]), (std::vector<float>{16}));  // 10 + 0 + 1 + 2 + 3
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{10, 11, 13, 16}));
}

TEST(Loop, ConditionStopsAWhileLoop) {
  BodyGraph body(3, 3);
  KernelHarness ctx("Loop", 13);
  ctx.omitted_input();
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {0}));
  ctx.attr_graph("body", body, accumulate(2));  // cond false after iteration 2
  auto out = ctx.run(2);
  EXPECT_EQ(ctx.body_runs(), 3);
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{3, 1}));
}

TEST(Loop, WithoutCondInputTheBodyConditionIsIgnored) {
  BodyGraph body(3, 3);
  KernelHarness ctx("Loop", 13);
  ctx.input(scalar_i64(5));
  ctx.omitted_input();
  ctx.input(floats({}, {0}));
  ctx.attr_graph("body", body, accumulate(0));  // body says stop at once: ignored (for loop)
  ctx.run(2);
  EXPECT_EQ(ctx.body_runs(), 5);
}

TEST(Loop, ZeroIterationsGiveInitialValuesAndEmptyScans) {
  BodyGraph body(3, 3);
  KernelHarness ctx("Loop", 13);
  ctx.input(scalar_i64(0));
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {5}));
  ctx.attr_graph("body", body, accumulate(100));
  auto out = ctx.run(2);
  EXPECT_EQ(ctx.body_runs(), 0);
  EXPECT_EQ(values(out[0]), (std::vector<float>{5}));
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{0}));
}

TEST(Loop, RunawayLoopIsStoppedWithAClearError) {
  ASSERT_EQ(setenv("LOOM_CPU_MAX_LOOP_ITERATIONS", "50", 1), 0);
  BodyGraph body(3, 2);
  KernelHarness ctx("Loop", 13);
  ctx.omitted_input();
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {0}));
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    return std::vector<Tensor>{scalar_bool(true), *in[2]};
  });
  try {
    ctx.run(1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_LIMIT_EXCEEDED);
    EXPECT_NE(std::string(e.what()).find("Loop node 'test'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx.body_runs(), 50);
  unsetenv("LOOM_CPU_MAX_LOOP_ITERATIONS");
}

// The run's control (plugin ABI 1.4) bounds the loop instead of the environment, and a poll
// that says stop ends the loop at the next iteration with the host's status. The kernels run
// without a core here: this host only makes and reads statuses.
struct FakeStatus {
  loom_status_code_t code;
  std::string message;
};
loom_status_t* fake_status_new(loom_status_code_t code, const char* message) {
  return reinterpret_cast<loom_status_t*>(new FakeStatus{code, message});
}
loom_status_code_t fake_status_code(const loom_status_t* s) {
  return reinterpret_cast<const FakeStatus*>(s)->code;
}
const char* fake_status_message(const loom_status_t* s) {
  return reinterpret_cast<const FakeStatus*>(s)->message.c_str();
}
void fake_status_free(loom_status_t* s) {
  delete reinterpret_cast<FakeStatus*>(s);
}

struct StopAfter {
  int polls_left;
  static loom_status_t* poll(void* user) {
    auto* self = static_cast<StopAfter*>(user);
    if (self->polls_left-- > 0) return nullptr;
    return fake_status_new(LOOM_ERROR_CANCELLED, "the run was cancelled");
  }
};

TEST(Loop, RunControlBoundsIterationsAndCancels) {
  static loom_host_api_t host{};
  host.struct_size = sizeof host;
  host.status_new = fake_status_new;
  host.status_code = fake_status_code;
  host.status_message = fake_status_message;
  host.status_free = fake_status_free;
  const loom_host_api_t* saved = loom::sdk::host_api();
  loom::sdk::set_host(&host);
  for (bool cancel : {false, true}) {
    StopAfter stop{cancel ? 3 : 1000};
    loom_run_control_t control{};
    control.struct_size = sizeof control;
    control.max_loop_iterations = 7;
    control.poll = StopAfter::poll;
    control.user = &stop;
    RunBudgetScope scope(&control);
    BodyGraph body(3, 2);
    KernelHarness ctx("Loop", 13);
    ctx.omitted_input();
    ctx.input(scalar_bool(true));
    ctx.input(floats({}, {0}));
    ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
      return std::vector<Tensor>{scalar_bool(true), *in[2]};
    });
    try {
      ctx.run(1);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cancel ? LOOM_ERROR_CANCELLED : LOOM_ERROR_LIMIT_EXCEEDED) << e.what();
      if (!cancel) {
        EXPECT_NE(std::string(e.what()).find("max_loop_iterations"), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(ctx.body_runs(), cancel ? 3 : 7);
  }
  loom::sdk::set_host(saved);
}

TEST(Scan, ReverseInputAlongAxisOneAndOutputAxisOne) {
  // Scan input [2, 3] scanned along axis 1 in reverse: slices are columns 2, 1, 0.
  // Body: state' = state + slice (elementwise over 2), scan out = state'.
  BodyGraph body(2, 2);
  KernelHarness ctx("Scan", 16);
  ctx.input(floats({2}, {0, 0}));
  ctx.input(floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ctx.attr_int("num_scan_inputs", 1);
  ctx.attr_ints("scan_input_axes", {1});
  ctx.attr_ints("scan_input_directions", {1});
  ctx.attr_ints("scan_output_axes", {-1});
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    std::vector<float> s = values(*in[0]), x = values(*in[1]);
    Tensor next = floats({2}, {s[0] + x[0], s[1] + x[1]});
    return std::vector<Tensor>{next, next};
  });
  auto out = ctx.run(2);
  EXPECT_EQ(values(out[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{2, 3}));
  // Per step states: [3, 6], [5, 11], [6, 15], stacked on the last axis.
  EXPECT_EQ(values(out[1]), (std::vector<float>{3, 5, 6, 6, 11, 15}));
}

TEST(Scan, ReverseOutputDirection) {
  BodyGraph body(1, 1);
  KernelHarness ctx("Scan", 11);
  ctx.input(floats({3}, {1, 2, 3}));
  ctx.attr_int("num_scan_inputs", 1);
  ctx.attr_ints("scan_output_directions", {1});
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    return std::vector<Tensor>{floats({}, {f(in[0]) * 10})};
  });
  auto out = ctx.run(1);
  EXPECT_EQ(values(out[0]), (std::vector<float>{30, 20, 10}));
}

TEST(Scan, Opset8BatchWithSequenceLengths) {
  // batch 2, max length 3; lengths [2, 3]; body: state' = state + x, scan out = state'.
  BodyGraph body(2, 2);
  KernelHarness ctx("Scan", 8);
  Tensor lens = make_tensor(LOOM_DTYPE_INT64, std::vector<int64_t>{2});
  static_cast<int64_t*>(lens.view.data)[0] = 2;
  static_cast<int64_t*>(lens.view.data)[1] = 3;
  ctx.input(lens);
  ctx.input(floats({2}, {0, 100}));
  ctx.input(floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ctx.attr_int("num_scan_inputs", 1);
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    Tensor next = floats({}, {f(in[0]) + f(in[1])});
    return std::vector<Tensor>{next, next};
  });
  auto out = ctx.run(2);
  EXPECT_EQ(values(out[0]), (std::vector<float>{3, 115}));
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 3, 0, 104, 109, 115}));
}

}  // namespace
}  // namespace loom::cpu
